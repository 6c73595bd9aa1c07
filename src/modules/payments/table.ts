// Payments (transactions) and their card attempts. Contract shared by checkout, refunds, wallet, links.
import type { Generated, Selectable } from 'kysely';
import type { Environment } from '../api-keys/table.ts';

/** Every payment status, in the order of the interface (also the schema's enum and the list filter). */
export const PAYMENT_STATUSES = [
  'processing',
  'pending',
  'paid',
  'failed',
  'canceled',
  'refund_pending',
  'refunded',
] as const;

export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];

export interface PaymentsTable {
  id: Generated<number>;
  /** TX + 16 base62 */
  public_id: string;
  organization_id: number;
  environment: Environment;
  checkout_session_id: number;
  /** Set when the checkout came from a payment link. */
  payment_link_id: string | null;
  /** subscriptions.id of a renewal charge; null for every other payment. Not in any response yet. */
  subscription_id: number | null;
  status: PaymentStatus;
  currency: 'USD' | 'EUR';
  /** Minor units of `currency`: gross TTC charged, fee, net = gross - fee. Fixed at creation. */
  gross: number;
  fee: number;
  net: number;
  /** HT amount (gross before tax), minor units: the refund's provider basis. */
  gross_ht: number;
  fee_bp: number;
  /** EUR→USD rate ×1e6 fixed at creation (1_000_000 for USD). */
  fx_rate: number;
  /** Net converted to USD minor units at `fx_rate`: what settlement credits. */
  net_usd: number;
  payer_email: string | null;
  /** JSON: [{id, name}] */
  products: string;
  provider: string;
  provider_payment_id: string | null;
  /** null | PARTIAL_REFUNDED | FULLY_REFUNDED as the provider reports it. */
  provider_refund_state: string | null;
  /** null until paid; 'pending' | 'succeeded' deposit state. */
  deposit_status: string | null;
  /** When the wallet was credited (settlement happened once). */
  settled_at: string | null;
  /** Sum of completed refunds, minor units of `currency`. */
  refunded_amount: Generated<number>;
  /** 1 when the simulator processed it (no real money moved): every sandbox payment, and production ones under KASSA_ALLOW_SIMULATOR. */
  simulated: Generated<number>;
  /** JSON NextAction while the customer must act (3-D Secure), else null. */
  next_action: string | null;
  /** Set when the provider reports a payment paid that Kassa had already failed or canceled: a person decides. */
  provider_conflict: string | null;
  created_at: string;
  updated_at: string;
}

export interface DepositAttemptsTable {
  id: Generated<number>;
  payment_id: number;
  /** The provider's id of this attempt, so a re-read updates the attempt rather than adding one. */
  provider_attempt_id: string;
  status: string;
  provider_payment_id: string;
  attempted_at: string;
  error_message: string | null;
  payment_method: string;
  card_brand: string | null;
  card_last4: string | null;
}

export type PaymentRow = Selectable<PaymentsTable>;
export type DepositAttemptRow = Selectable<DepositAttemptsTable>;

export interface PaymentTables {
  payments: PaymentsTable;
  deposit_attempts: DepositAttemptsTable;
}
