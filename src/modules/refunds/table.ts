// Refunds of paid payments, and the email codes that authorise dashboard refunds.
import type { ColumnType, Generated, Selectable } from 'kysely';
import type { Environment } from '../api-keys/table.ts';

export type RefundStatus = 'pending' | 'processing' | 'completed' | 'failed' | 'rejected';
export type ProviderRefundStatus = 'processing' | 'completed' | 'failed';

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
  /**
   * The provider's word against a finished refund (it completed one Kassa recorded failed, or failed one
   * Kassa recorded completed), for an operator to settle; null when none is open (conflict-flag.ts).
   */
  provider_conflict: ColumnType<string | null, string | null | undefined, string | null>;
  /** The provider's status against Kassa's: completed, failed, or processing (a refund Kassa failed). */
  provider_conflict_status: ColumnType<
    ProviderRefundStatus | null,
    ProviderRefundStatus | null | undefined,
    ProviderRefundStatus | null
  >;
  /** When Kassa first read that contradiction. */
  provider_conflict_at: ColumnType<string | null, string | null | undefined, string | null>;
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
