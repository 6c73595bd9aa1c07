import type { Generated, Selectable } from 'kysely';

export type ActorType = 'user' | 'api_key' | 'operator' | 'system';

export interface AuditLogTable {
  id: Generated<number>;
  organization_id: number;
  at: string;
  actor_type: ActorType;
  actor_id: number | null;
  actor_email: string | null;
  action: string;
  target_type: string | null;
  target_id: string | null;
  ip: string | null;
  user_agent: string | null;
  /** JSON object. */
  details: Generated<string>;
}

export interface ApiKeyAddressesTable {
  api_key_id: number;
  ip: string;
  first_seen_at: string;
}

export type AuditRow = Selectable<AuditLogTable>;

export interface AuditTables {
  audit_log: AuditLogTable;
  api_key_addresses: ApiKeyAddressesTable;
}
