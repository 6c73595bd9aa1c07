import type { Generated, Selectable } from 'kysely';

export interface OrganizationsTable {
  id: Generated<number>;
  slug: string;
  name: string;
  website: Generated<string>;
  contact_email: Generated<string>;
  telegram: Generated<string>;
  price_mode: Generated<'HT' | 'TTC'>;
  fee_bp: Generated<number>;
  tax_rate_bp: Generated<number>;
  rolling_reserve_bp: Generated<number>;
  rolling_reserve_days: Generated<number>;
  min_payment: Generated<number>;
  max_payment: Generated<number>;
  max_active_api_keys: Generated<number>;
  status: Generated<string>;
  created_at: string;
  updated_at: string;
}

export type OrganizationRow = Selectable<OrganizationsTable>;

export interface OrganizationTables {
  organizations: OrganizationsTable;
}
