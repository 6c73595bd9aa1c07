// The simulator's own tables: what the simulated card processor knows. Not part of `Database`;
// the simulator reaches them through `db.withTables<SimulatorTables>()`.
import type { Generated } from 'kysely';
import type { Environment } from '../../modules/api-keys/table.ts';
import type { ProviderPaymentOutcome } from '../types.ts';
import type { CardBehaviour } from './script.ts';

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
  /** The customer whose saved card an off-session charge used, or who asked to save the card. */
  customer_id: string | null;
  /** The saved card: the one charged off-session, or the one this payment saved. */
  payment_method_id: string | null;
  /** Save the card paying this payment on this customer (setup_future_usage). */
  save_card_for: string | null;
  /** JSON NextAction while a 3-D Secure challenge waits for the customer. */
  next_action: string | null;
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

export interface SimCustomersTable {
  id: Generated<number>;
  customer_id: string;
  idempotency_key: string;
  reference: string;
  environment: Environment;
  email: string;
  name: string;
  created_at: string;
}

/** A saved card: how the test card behaves, brand, last 4, expiry; never its number. */
export interface SimPaymentMethodsTable {
  id: Generated<number>;
  payment_method_id: string;
  customer_id: string;
  behaviour: CardBehaviour;
  brand: string;
  last4: string;
  exp_month: number;
  exp_year: number;
  created_at: string;
}

export interface SimSetupsTable {
  id: Generated<number>;
  setup_id: string;
  idempotency_key: string;
  reference: string;
  environment: Environment;
  customer_id: string;
  status: 'requires_payment_method' | 'requires_action' | 'succeeded' | 'canceled';
  /** The card being saved (set once it is saved, or while its challenge waits). */
  payment_method_id: string | null;
  error_code: string | null;
  error_message: string | null;
  next_action: string | null;
  created_at: string;
  updated_at: string;
}

/** A 3-D Secure challenge: of a payment's attempt, or of a setup. */
export interface SimChallengesTable {
  id: Generated<number>;
  challenge_id: string;
  target: 'payment' | 'setup';
  /** The provider payment id or setup id. */
  target_id: string;
  attempt_id: string | null;
  status: 'open' | 'approved' | 'failed' | 'abandoned';
  created_at: string;
  updated_at: string;
}

// A type alias, not an interface: withTables() needs the implicit index signature.
export type SimulatorTables = {
  sim_payments: SimPaymentsTable;
  sim_refunds: SimRefundsTable;
  sim_customers: SimCustomersTable;
  sim_payment_methods: SimPaymentMethodsTable;
  sim_setups: SimSetupsTable;
  sim_challenges: SimChallengesTable;
};
