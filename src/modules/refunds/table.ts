// Refunds of paid payments, and the email codes that authorise dashboard refunds.
import type { Generated, Selectable } from 'kysely';
import type { Environment } from '../api-keys/table.ts';

export type RefundStatus = 'pending' | 'processing' | 'completed' | 'failed' | 'rejected';

export interface RefundsTable {
  id: Generated<number>;
  /** RF + 16 base62 */
  public_id: string;
  organization_id: number;
  environment: Environment;
  payment_id: number;
  /** Charge currency minor units, TTC. */
  amount: number;
  currency: 'USD' | 'EUR';
  /** The wallet hold, USD minor units: amount / gross × net_usd. */
  amount_usd: number;
  /** Sent to the provider, HT basis: amount × gross_ht / gross. */
  amount_in_cents: number;
  reason: string;
  status: RefundStatus;
  /** api | dashboard */
  source: string;
  provider_refund_id: string | null;
  error_message: string | null;
  created_at: string;
  updated_at: string;
}

export interface RefundVerificationCodesTable {
  id: Generated<number>;
  organization_id: number;
  user_id: number;
  /** HMAC-SHA256 of the code under the service's secret key; the code itself is never stored. */
  code_hash: string;
  attempts: number;
  expires_at: string;
  used_at: string | null;
  created_at: string;
}

export type RefundRow = Selectable<RefundsTable>;

export interface RefundTables {
  refunds: RefundsTable;
  refund_verification_codes: RefundVerificationCodesTable;
}
