// The simulator's own tables: what the simulated card processor knows. Not part of `Database`;
// the simulator reaches them through `db.withTables<SimulatorTables>()`.
import type { Generated } from 'kysely';
import type { Environment } from '../../modules/api-keys/table.ts';
import type { ProviderPaymentOutcome } from '../types.ts';

export interface SimPaymentsTable {
  id: Generated<number>;
  provider_payment_id: string;
  /** The caller's payment public id: one provider payment per reference. */
  reference: string;
  environment: Environment;
  amount: number;
  refund_basis: number;
  currency: string;
  simulate: string | null;
  outcome: ProviderPaymentOutcome;
  deposit_status: 'pending' | 'succeeded' | null;
  deposit_settles_at: string | null;
  /** Reads while CHECKOUT_PENDING; the bank decides on the third. */
  pending_syncs: Generated<number>;
  refunded_amount: Generated<number>;
  /** JSON: ProviderAttempt[], oldest first. */
  attempts: string;
  created_at: string;
  updated_at: string;
}

export interface SimRefundsTable {
  id: Generated<number>;
  provider_refund_id: string;
  reference: string;
  provider_payment_id: string;
  environment: Environment;
  amount: number;
  currency: string;
  reason: string;
  status: 'processing' | 'completed' | 'failed';
  error_message: string | null;
  completes_at: string | null;
  created_at: string;
  updated_at: string;
}

// A type alias, not an interface: withTables() needs the implicit index signature.
export type SimulatorTables = {
  sim_payments: SimPaymentsTable;
  sim_refunds: SimRefundsTable;
};
