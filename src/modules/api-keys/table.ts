import type { Generated, Selectable } from 'kysely';

export type Environment = 'production' | 'sandbox';

export interface ApiKeysTable {
  id: Generated<number>;
  organization_id: number;
  name: string;
  prefix: string;
  key_hash: string;
  /** Space-separated scopes; the empty string means every scope (legacy keys). */
  scopes: string;
  environment: Environment;
  status: 'active' | 'revoked';
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export type ApiKeyRow = Selectable<ApiKeysTable>;

export interface ApiKeyTables {
  api_keys: ApiKeysTable;
}
