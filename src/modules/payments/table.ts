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

/** Whether a payment in this status was paid (a refund, asked for or made, comes after the payment). */
export function wasPaid(status: PaymentStatus): boolean {
  return status === 'paid' || status === 'refund_pending' || status === 'refunded';
}

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

/**
 * Every column of a payment and of a card attempt (checked complete against the tables above), for the
 * statements that read whole rows by name: a named statement on PostgreSQL fixes its columns when it is
 * prepared, so one that read `*` would fail at every call in a process still running when a migration
 * adds a column (prepared.ts); a list of columns goes on reading the columns it names.
 */
export const PAYMENT_COLUMNS = Object.keys({
  id: true,
  public_id: true,
  organization_id: true,
  environment: true,
  checkout_session_id: true,
  payment_link_id: true,
  subscription_id: true,
  status: true,
  currency: true,
  gross: true,
  fee: true,
  net: true,
  gross_ht: true,
  fee_bp: true,
  fx_rate: true,
  net_usd: true,
  payer_email: true,
  products: true,
  provider: true,
  provider_payment_id: true,
  provider_refund_state: true,
  deposit_status: true,
  settled_at: true,
  refunded_amount: true,
  simulated: true,
  next_action: true,
  provider_conflict: true,
  created_at: true,
  updated_at: true,
} satisfies Record<keyof PaymentsTable, true>) as (keyof PaymentsTable & string)[];

export const DEPOSIT_ATTEMPT_COLUMNS = Object.keys({
  id: true,
  payment_id: true,
  provider_attempt_id: true,
  status: true,
  provider_payment_id: true,
  attempted_at: true,
  error_message: true,
  payment_method: true,
  card_brand: true,
  card_last4: true,
} satisfies Record<keyof DepositAttemptsTable, true>) as (keyof DepositAttemptsTable & string)[];
