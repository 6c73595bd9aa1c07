// The provider contract (v2): the one boundary between Kassa and a card processor. Modules talk only to
// this interface; the built-in simulator (provider/simulator/) and Stripe (provider/stripe/) implement it.
// A connector is stateless: it turns Kassa's request into the processor's call and the processor's answer
// into a contract value. State, the write-ahead operation rows and reconciliation stay in Kassa's core
// (provider/operations/), so every write below carries an idempotency key derived from Kassa's own row:
//   kassa-pay-{payment id}          the provider payment of a Kassa payment (Stripe: the PaymentIntent)
//   kassa-pay-{payment id}-{n}      the n-th card attempt on it, made by Kassa (the simulator's form)
//   kassa-cancel-{payment id}       an expiry's cancel the provider did not answer (no key is sent: a
//                                   cancel charges nothing, and the reconciler makes it again)
//   kassa-refund-{refund id}        a refund
//   kassa-customer-{reference}      a customer; kassa-setup-{reference}: saving a card on it
//   kassa-renew-{cycle id}-{n}      the n-th off-session charge of a subscription cycle
import type { Environment } from '../modules/api-keys/table.ts';

export type ProviderName = 'simulator' | 'stripe';

/** What the customer must do before a charge or a setup can finish (3-D Secure, or the provider's form). */
export type NextAction =
  /** The simulator's 3-D Secure step: the hosted page shows it and answers at /api/provider/simulator/challenges/{id}/. */
  | { type: 'simulator_challenge'; challengeId: string }
  /** Stripe.js finishes it (handleNextAction / confirmPayment) with the object's client secret. */
  | { type: 'stripe_sdk'; clientSecret: string };

/**
 * The answer to one write. `unknown` (a timeout, a 5xx, a crash between the call and the record) is never
 * answered with a new charge: the reconciler reads the provider's state by the same key or reference.
 */
export type ProviderOutcome =
  | { status: 'succeeded' }
  | { status: 'pending' }
  | { status: 'requires_action'; nextAction: NextAction }
  | {
      status: 'failed';
      /** card_declined, insufficient_funds, expired_card, authentication_required, authentication_failed, ... */
      code: string;
      message: string;
      /** Whether the same card may succeed later (insufficient funds: yes; expired, stolen, authentication_required: no). */
      retryable: boolean;
      /**
       * The provider refused the request itself (Kassa's key rejected or lacking permission, a rate limit,
       * a request it found invalid): no card was tried and nobody declined, so it is not the customer's
       * failure (a renewal is put off, not dunned). Absent for a decline.
       */
      providerError?: boolean;
    }
  | { status: 'unknown'; reason: string };

export type KnownOutcome = Exclude<ProviderOutcome, { status: 'unknown' }>;

/** How a payment stands at the provider (the interface's simulated outcomes). */
export type ProviderPaymentOutcome =
  | 'PAYMENT_SUCCESS'
  | 'PAYMENT_FAILED'
  | 'CHECKOUT_CANCELED'
  | 'CANCELED'
  | 'CHECKOUT_PENDING'
  | 'PROCESSING';

/** Attempt statuses: succeeded | requires_payment_method (declined) | requires_action | authenticated | failed | canceled | pending. */
export interface ProviderAttempt {
  /** The provider's id of this one attempt: how a re-read is matched to the attempt already recorded. */
  attemptId: string;
  status: string;
  paymentId: string;
  attemptedAt: string;
  errorMessage: string | null;
  paymentMethod: string;
  /** The key of the Kassa write that made this attempt, when Kassa made it (null: the customer's browser did). */
  idempotencyKey?: string | null;
  /** The decline code of a declined attempt. */
  declineCode?: string | null;
}

export interface SavedCard {
  /** The provider's id of the saved card (Stripe: pm_…), what off-session charges name. */
  paymentMethodId: string;
  customerId: string;
  brand: string;
  last4: string;
  expMonth: number;
  expYear: number;
}

export interface ProviderPaymentState {
  providerPaymentId: string;
  /**
   * Our reference (TX…) the provider payment was made for, as the provider carries it (Stripe: the
   * PaymentIntent's metadata[kassa_transaction_id]); null when it carries none. An operator who names a
   * provider payment by its id (kassa renewal resolve) is checked against it.
   */
  reference?: string | null;
  outcome: ProviderPaymentOutcome;
  /** Deposit (settlement) state of a successful payment. */
  depositStatus: 'pending' | 'succeeded' | null;
  /** Set when the provider marked the payment refunded (eligibility rule 2). */
  refundState: 'PARTIAL_REFUNDED' | 'FULLY_REFUNDED' | null;
  /** The full attempt history, newest first. */
  attempts: ProviderAttempt[];
  /** What the customer must do now (3-D Secure), or null. */
  nextAction?: NextAction | null;
  /** The card saved for later off-session charges by this payment, when it asked for that. */
  savedCard?: SavedCard | null;
}

export interface CardInput {
  number: string;
  expMonth: number;
  expYear: number;
  cvc: string;
  holderName: string;
}

/** Which provider payment a charge goes to: ours by reference, the provider's by id once known. */
export interface ProviderPaymentRef {
  /** Our payment's public id (TX…): one provider payment per reference. */
  reference: string;
  /** The provider payment already made for this reference (a retry after a decline), or null. */
  providerPaymentId: string | null;
}

interface PaymentAmounts {
  environment: Environment;
  amountMinor: bigint;
  currency: string;
  /** The HT amount the simulator measures refunds against (refunds are sent on the HT basis there). */
  refundBasisMinor?: bigint;
  /** kassa_checkout_id, kassa_transaction_id, kassa_environment, …: put on the provider's object. */
  metadata: Record<string, string>;
}

/** Opens the provider payment without charging (Stripe: the PaymentIntent the Payment Element confirms). */
export interface OpenPaymentInput extends PaymentAmounts {
  /** kassa-pay-{payment id} */
  idempotencyKey: string;
  reference: string;
  /** Save the card the customer pays with on this customer (setup_future_usage=off_session). */
  saveCardFor?: string | null;
}

export interface OpenedPayment {
  payment: ProviderPaymentState;
  /** What the provider's browser script needs (Stripe's client secret); null for the simulator. */
  clientSecret: string | null;
}

/** One on-session card attempt with the card typed into Kassa's form (providers with `cardForm`). */
export interface ChargeCardInput extends PaymentAmounts {
  /** kassa-pay-{payment id}-{n} */
  idempotencyKey: string;
  payment: ProviderPaymentRef;
  card: CardInput;
  /** The sandbox script (interface table), null in production. */
  simulate: string | null;
  /** Save the card on this customer for later off-session charges. */
  saveCardFor?: string | null;
}

/** A charge of a saved card with the customer away (a renewal). */
export interface ChargeSavedCardInput extends PaymentAmounts {
  /** kassa-renew-{cycle id}-{n} */
  idempotencyKey: string;
  payment: ProviderPaymentRef;
  customerId: string;
  paymentMethodId: string;
}

/** A write that concerns a payment: what was answered, and the payment as it stands after it. */
export interface PaymentWrite {
  outcome: ProviderOutcome;
  /**
   * null when nothing is known (unknown) or nothing was created (refused before a payment existed). With
   * a decline or a refusal of an existing payment, that payment as it stands: a refusal (a payment no
   * longer taking attempts) says nothing of its charge, so the caller goes by this state.
   */
  payment: ProviderPaymentState | null;
}

export interface CreateCustomerInput {
  /** kassa-customer-{reference} */
  idempotencyKey: string;
  reference: string;
  environment: Environment;
  email: string;
  name: string;
  metadata: Record<string, string>;
}

export interface ProviderSetupState {
  setupId: string;
  status: 'requires_payment_method' | 'requires_action' | 'processing' | 'succeeded' | 'canceled';
  customerId: string;
  savedCard: SavedCard | null;
  nextAction: NextAction | null;
  /** Why the last try failed (authentication failed, declined), or null. */
  lastError: { code: string; message: string } | null;
}

/** Saving a card on a customer without charging it (a trial signup, an update-card page). */
export interface SetupCardInput {
  /** kassa-setup-{reference} */
  idempotencyKey: string;
  reference: string;
  environment: Environment;
  customerId: string;
  /** The card typed into Kassa's form (providers with `cardForm`); Stripe collects it in its own form. */
  card: CardInput | null;
  metadata: Record<string, string>;
}

export interface SetupWrite {
  outcome: ProviderOutcome;
  setup: ProviderSetupState | null;
  /** What the provider's browser script needs to collect the card (Stripe); null for the simulator. */
  clientSecret: string | null;
}

export interface ProviderRefundState {
  providerRefundId: string;
  status: 'processing' | 'completed' | 'failed';
  errorMessage: string | null;
  /**
   * The reference Kassa gave the refund (its RF… public id), when the provider keeps it: how a webhook
   * about a refund Kassa holds no provider id for (its answer lost, or taken for never made) finds it.
   */
  reference?: string | null;
}

export interface CreateRefundInput {
  /** kassa-refund-{refund id} */
  idempotencyKey: string;
  /** Our refund's public id (RF…). */
  reference: string;
  environment: Environment;
  providerPaymentId: string;
  /** The refund in the charge currency, TTC: what the customer gets back (Stripe sends this). */
  amountMinor: bigint;
  /** amount_in_cents: the HT basis the simulator measures refunds in. */
  basisAmountMinor: bigint;
  currency: string;
  reason: string;
  metadata: Record<string, string>;
}

/** What a provider's webhook said changed: the ids to re-read (a webhook body is never trusted as state). */
export interface ProviderNotice {
  paymentIds: string[];
  refundIds: string[];
  setupIds?: string[];
  /** The provider's event id, for deduplication (null when the provider's webhooks carry none). */
  eventId?: string | null;
  eventType?: string | null;
}

/**
 * A provider call that got no usable answer: a timeout, a dropped connection, a 5xx, a rate limit, a
 * refused key. Every call through `Providers` (provider/index.ts) that throws, throws this, with the
 * connector's error as its cause and its message kept (operation rows record it). Nothing of Kassa's
 * changed because of the call; a request that meets it answers 503 with Retry-After (http/errors.ts),
 * never the provider's own words, and the worker's next round or the next sync asks again.
 */
export class ProviderUnavailableError extends Error {
  readonly provider: string;
  constructor(provider: string, cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause), { cause });
    this.name = 'ProviderUnavailableError';
    this.provider = provider;
  }
}

/** Raised by parseWebhook for a body that is not a genuine, fresh webhook of this provider. */
export class WebhookRejectedError extends Error {}

export interface PaymentProvider {
  readonly name: ProviderName;
  /** Whether the hosted page collects the card in Kassa's own form (the simulator) or the provider's (Stripe). */
  readonly cardForm: boolean;

  openPayment(input: OpenPaymentInput): Promise<OpenedPayment>;
  /** Providers with `cardForm` only; the others throw. Resolves to an outcome; transport errors throw. */
  chargeCard(input: ChargeCardInput): Promise<PaymentWrite>;
  chargeSavedCard(input: ChargeSavedCardInput): Promise<PaymentWrite>;
  getPayment(providerPaymentId: string): Promise<ProviderPaymentState | null>;
  /** The payment made for one of our references, or null when the provider has none. */
  findPayment(reference: string): Promise<ProviderPaymentState | null>;
  /**
   * Stops a payment that may no longer be paid (its checkout expired or was canceled), so a customer's
   * browser cannot still confirm it; returns its state after (a payment that succeeded meanwhile stays so).
   */
  cancelPayment(providerPaymentId: string): Promise<ProviderPaymentState | null>;
  /** The client secret the provider's browser script needs for a payment (null for the simulator). */
  clientSecretOf(providerPaymentId: string): Promise<string | null>;

  createCustomer(input: CreateCustomerInput): Promise<{ customerId: string }>;
  setupCard(input: SetupCardInput): Promise<SetupWrite>;
  getSetup(setupId: string): Promise<ProviderSetupState | null>;
  /**
   * The setup made under one idempotency key (the write-ahead row's) on a customer, or null when the
   * provider has none. By key, not by reference: every setup of a subscription (its signup's, each
   * update-card page's) shares the subscription's reference, and an older one is not this write.
   * `reference`: for setups made before the key was recorded with them (a provider that could only be
   * searched by reference then), the one with this reference and no key is this write.
   */
  findSetup(
    idempotencyKey: string,
    customerId: string,
    reference?: string,
  ): Promise<ProviderSetupState | null>;

  /** Resolves to a failed state for an immediate refusal; throws only on transport errors. */
  createRefund(input: CreateRefundInput): Promise<ProviderRefundState>;
  getRefund(providerRefundId: string): Promise<ProviderRefundState | null>;
  /** The refund made for one of our references on a payment, or null when the provider has none. */
  findRefund(reference: string, providerPaymentId: string): Promise<ProviderRefundState | null>;

  /** Verifies and reads a webhook; throws WebhookRejectedError for a bad or stale one. */
  parseWebhook(
    rawBody: string,
    headers: Record<string, string | string[] | undefined>,
  ): ProviderNotice | Promise<ProviderNotice>;
}

/** The outcome an attempt the provider recorded stands for. */
export function outcomeOfAttempt(
  attempt: ProviderAttempt,
  nextAction: NextAction | null = null,
): KnownOutcome {
  switch (attempt.status) {
    case 'succeeded':
      return { status: 'succeeded' };
    case 'pending':
    case 'processing':
      return { status: 'pending' };
    case 'requires_action':
      return nextAction ? { status: 'requires_action', nextAction } : { status: 'pending' };
    default:
      return {
        status: 'failed',
        code: attempt.declineCode ?? (attempt.status === 'failed' ? 'processing_error' : 'card_declined'),
        message: attempt.errorMessage ?? 'The card was declined.',
        retryable: isRetryableDecline(attempt.declineCode ?? null),
      };
  }
}

/** Declines that no later try of the same card can fix: the customer needs a new card or to authenticate. */
const FINAL_DECLINES = new Set([
  'expired_card',
  'stolen_card',
  'lost_card',
  'pickup_card',
  'restricted_card',
  'invalid_account',
  'card_not_supported',
  'authentication_required',
  'authentication_failed',
  'incorrect_number',
]);

export function isRetryableDecline(code: string | null): boolean {
  return code === null || !FINAL_DECLINES.has(code);
}
