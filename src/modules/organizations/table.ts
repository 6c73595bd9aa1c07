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
  require_two_factor: Generated<number>;
  /** IANA zone the dashboard shows times in (editable). */
  time_zone: Generated<string>;
  /** 1: the dashboard opens in test mode (the demo merchant); operator-set. */
  test_mode_default: Generated<number>;
  /** JSON array of https origins a public payment-link start may redirect the customer to. */
  redirect_origins: Generated<string>;
  created_at: string;
  updated_at: string;
}

export type OrganizationRow = Selectable<OrganizationsTable>;

export interface OrganizationTables {
  organizations: OrganizationsTable;
}
