// The boundary to the card processor. Modules talk only to this interface; the built-in simulator
// (provider/simulator/) is one implementation, and a real processor is another file beside it.
import type { Environment } from '../modules/api-keys/table.ts';

/** What the provider says about a payment: the interface's simulated outcomes. */
export type ProviderPaymentOutcome =
  | 'PAYMENT_SUCCESS'
  | 'PAYMENT_FAILED'
  | 'CHECKOUT_CANCELED'
  | 'CANCELED'
  | 'CHECKOUT_PENDING'
  | 'PROCESSING';

export interface ProviderAttempt {
  /** The provider's id of this one attempt: how a re-read is matched to the attempt already recorded. */
  attemptId: string;
  /** succeeded | requires_payment_method | failed | canceled | pending (a success whose deposit is unsettled) */
  status: string;
  paymentId: string;
  attemptedAt: string;
  errorMessage: string | null;
  paymentMethod: string;
}

export interface ProviderPaymentState {
  providerPaymentId: string;
  outcome: ProviderPaymentOutcome;
  /** Deposit (settlement) state of a successful payment. */
  depositStatus: 'pending' | 'succeeded' | null;
  /** Set when the provider marked the payment refunded (eligibility rule 2). */
  refundState: 'PARTIAL_REFUNDED' | 'FULLY_REFUNDED' | null;
  /** The full attempt history, newest first. */
  attempts: ProviderAttempt[];
}

export interface CardInput {
  number: string;
  expMonth: number;
  expYear: number;
  cvc: string;
  holderName: string;
}

export interface CreatePaymentInput {
  /** Our payment's public id, the provider's idempotency reference. */
  reference: string;
  environment: Environment;
  amountMinor: bigint;
  currency: string;
  card: CardInput;
  /** The sandbox script (interface table), null in production. */
  simulate: string | null;
  /** An existing provider payment to add this attempt to (the customer retries after a decline). */
  providerPaymentId: string | null;
  /** The HT amount refunds are measured against (refunds are sent on the HT basis); defaults to amountMinor. */
  refundBasisMinor?: bigint;
}

export interface ProviderRefundState {
  providerRefundId: string;
  status: 'processing' | 'completed' | 'failed';
  errorMessage: string | null;
}

export interface CreateRefundInput {
  reference: string;
  environment: Environment;
  providerPaymentId: string;
  /** Amount sent to the provider, HT basis, minor units. */
  amountMinor: bigint;
  currency: string;
  reason: string;
}

export interface PaymentProvider {
  readonly name: string;
  createPayment(input: CreatePaymentInput): Promise<ProviderPaymentState>;
  getPayment(providerPaymentId: string): Promise<ProviderPaymentState | null>;
  /**
   * The payment made for one of our references (CreatePaymentInput.reference), or null when none was.
   * Recovers an answer lost between the provider's commit and ours (a crash, a timeout): without it a
   * charged card would stay `processing` with no provider id, which nothing else can re-read.
   */
  findPayment(reference: string): Promise<ProviderPaymentState | null>;
  /** Resolves to a failed state for an immediate refusal; throws only on transport errors. */
  createRefund(input: CreateRefundInput): Promise<ProviderRefundState>;
  getRefund(providerRefundId: string): Promise<ProviderRefundState | null>;
  /** Turns a provider webhook body into the ids whose state should be re-read. */
  parseWebhook(
    rawBody: string,
    headers: Record<string, string | string[] | undefined>,
  ): { paymentIds: string[]; refundIds: string[] };
}
