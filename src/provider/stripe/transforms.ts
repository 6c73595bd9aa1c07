// Stripe objects ⇄ contract values. Pure: a PaymentIntent and its charges become a ProviderPaymentState
// (each charge is a deposit attempt; a 3-D Secure step and its result are an attempt of their own), a
// Refund a ProviderRefundState, a SetupIntent a ProviderSetupState.
import type Stripe from 'stripe';
import {
  isRetryableDecline,
  type KnownOutcome,
  type NextAction,
  type ProviderAttempt,
  type ProviderPaymentOutcome,
  type ProviderPaymentState,
  type ProviderRefundState,
  type ProviderSetupState,
  type SavedCard,
} from '../types.ts';
import { idOf } from './transport.ts';

const iso = (seconds: number) => new Date(seconds * 1000).toISOString();

/** 3-D Secure failures carry this code on the PaymentIntent's (or SetupIntent's) last error. */
export const AUTHENTICATION_FAILURE = 'payment_intent_authentication_failure';
export const SETUP_AUTHENTICATION_FAILURE = 'setup_intent_authentication_failure';

function paymentOutcome(status: Stripe.PaymentIntent.Status): ProviderPaymentOutcome {
  switch (status) {
    case 'succeeded':
      return 'PAYMENT_SUCCESS';
    case 'processing':
      return 'CHECKOUT_PENDING';
    case 'canceled':
      return 'CANCELED';
    default:
      return 'PROCESSING';
  }
}

function chargeAttempt(intent: Stripe.PaymentIntent, charge: Stripe.Charge): ProviderAttempt {
  const status =
    charge.status === 'succeeded'
      ? 'succeeded'
      : charge.status === 'pending'
        ? 'pending'
        : 'requires_payment_method';
  return {
    attemptId: charge.id,
    status,
    paymentId: intent.id,
    attemptedAt: iso(charge.created),
    errorMessage:
      status === 'requires_payment_method' ? (charge.failure_message ?? 'Your card was declined.') : null,
    paymentMethod: charge.payment_method_details?.type ?? 'card',
    declineCode: charge.outcome?.reason ?? charge.failure_code ?? null,
  };
}

/**
 * The 3-D Secure step of the payment method being confirmed: waiting (requires_action), failed (the
 * customer failed or abandoned it; no charge is made then), or passed (a charge of that card followed).
 */
function authenticationAttempt(
  intent: Stripe.PaymentIntent,
  charges: Stripe.Charge[],
): ProviderAttempt | null {
  const error = intent.last_payment_error;
  const failed = error?.code === AUTHENTICATION_FAILURE;
  const method = failed ? idOf(error?.payment_method) : idOf(intent.payment_method);
  if (!method) return null;
  let status: string;
  if (intent.status === 'requires_action') status = 'requires_action';
  else if (failed) status = 'requires_payment_method';
  else if (wasAuthenticated(charges, method)) status = 'authenticated';
  else return null;
  return {
    attemptId: `${intent.id}:3ds:${method}`,
    status,
    paymentId: intent.id,
    attemptedAt: iso(intent.created),
    errorMessage: status === 'requires_payment_method' ? 'The 3-D Secure authentication failed.' : null,
    paymentMethod: 'card',
    declineCode: status === 'requires_payment_method' ? 'authentication_failed' : null,
  };
}

function wasAuthenticated(charges: Stripe.Charge[], method: string): boolean {
  return charges.some(
    (charge) =>
      idOf(charge.payment_method) === method &&
      charge.payment_method_details?.card?.three_d_secure?.result === 'authenticated',
  );
}

function cardOfCharge(charge: Stripe.Charge | undefined, intent: Stripe.PaymentIntent): SavedCard | null {
  const card = charge?.payment_method_details?.card;
  const method = idOf(intent.payment_method);
  const customer = idOf(intent.customer);
  if (!card || !method || !customer) return null;
  return {
    paymentMethodId: method,
    customerId: customer,
    brand: card.brand ?? 'unknown',
    last4: card.last4 ?? '',
    expMonth: card.exp_month ?? 0,
    expYear: card.exp_year ?? 0,
  };
}

/** The PaymentIntent with every charge of it (newest first in the result, as the contract wants). */
export function paymentStateOf(intent: Stripe.PaymentIntent, charges: Stripe.Charge[]): ProviderPaymentState {
  const ordered = [...charges].sort((a, b) => a.created - b.created || a.id.localeCompare(b.id));
  const attempts = ordered.map((charge) => chargeAttempt(intent, charge));
  const authentication = authenticationAttempt(intent, ordered);
  if (authentication) attempts.push(authentication);
  const succeeded = ordered.find((charge) => charge.status === 'succeeded');
  const refunded = succeeded?.amount_refunded ?? 0;
  return {
    providerPaymentId: intent.id,
    reference: intent.metadata?.kassa_transaction_id ?? null,
    outcome: paymentOutcome(intent.status),
    // A succeeded PaymentIntent is a settled deposit: the wallet is credited at once.
    depositStatus: intent.status === 'succeeded' ? 'succeeded' : null,
    refundState:
      refunded <= 0 || !succeeded
        ? null
        : refunded >= succeeded.amount
          ? 'FULLY_REFUNDED'
          : 'PARTIAL_REFUNDED',
    attempts: attempts.reverse(),
    nextAction: nextActionOf(intent),
    savedCard:
      intent.status === 'succeeded' && intent.setup_future_usage === 'off_session'
        ? cardOfCharge(succeeded, intent)
        : null,
  };
}

function nextActionOf(intent: { status: string; client_secret: string | null }): NextAction | null {
  return intent.status === 'requires_action' && intent.client_secret
    ? { type: 'stripe_sdk', clientSecret: intent.client_secret }
    : null;
}

/** What a write that answered left the PaymentIntent at. */
export function outcomeOfIntent(intent: Stripe.PaymentIntent): KnownOutcome {
  switch (intent.status) {
    case 'succeeded':
      return { status: 'succeeded' };
    case 'requires_action': {
      const action = nextActionOf(intent);
      return action ? { status: 'requires_action', nextAction: action } : { status: 'pending' };
    }
    case 'canceled':
      return { status: 'failed', code: 'canceled', message: 'The payment was canceled.', retryable: false };
    case 'requires_payment_method': {
      const error = intent.last_payment_error;
      if (!error) return { status: 'pending' };
      const code =
        error.code === AUTHENTICATION_FAILURE
          ? 'authentication_failed'
          : (error.decline_code ?? error.code ?? 'card_declined');
      return {
        status: 'failed',
        code,
        message: error.message ?? 'Your card was declined.',
        retryable: isRetryableDecline(code),
      };
    }
    default:
      return { status: 'pending' };
  }
}

export function refundStateOf(refund: Stripe.Refund): ProviderRefundState {
  const known = { providerRefundId: refund.id, reference: refund.metadata?.kassa_refund_id ?? null };
  switch (refund.status) {
    case 'succeeded':
      return { ...known, status: 'completed', errorMessage: null };
    case 'failed':
    case 'canceled':
      return {
        ...known,
        status: 'failed',
        errorMessage: `The refund ${refund.status === 'canceled' ? 'was canceled' : 'failed'} at Stripe${
          refund.failure_reason ? ` (${refund.failure_reason})` : ''
        }.`,
      };
    default:
      return { ...known, status: 'processing', errorMessage: null };
  }
}

export function savedCardOf(method: Stripe.PaymentMethod, customerId: string): SavedCard | null {
  const card = method.card;
  if (!card) return null;
  return {
    paymentMethodId: method.id,
    customerId,
    brand: card.brand,
    last4: card.last4,
    expMonth: card.exp_month,
    expYear: card.exp_year,
  };
}

export function setupStateOf(
  intent: Stripe.SetupIntent,
  method: Stripe.PaymentMethod | null,
): ProviderSetupState {
  const customer = idOf(intent.customer) ?? '';
  const error = intent.last_setup_error;
  const status: ProviderSetupState['status'] =
    intent.status === 'requires_confirmation'
      ? 'requires_payment_method'
      : intent.status === 'canceled'
        ? 'canceled'
        : (intent.status as ProviderSetupState['status']);
  return {
    setupId: intent.id,
    status,
    customerId: customer,
    savedCard: intent.status === 'succeeded' && method ? savedCardOf(method, customer) : null,
    nextAction: nextActionOf(intent),
    lastError: error
      ? {
          code:
            error.code === SETUP_AUTHENTICATION_FAILURE
              ? 'authentication_failed'
              : (error.decline_code ?? error.code ?? 'card_declined'),
          message: error.message ?? 'The card could not be saved.',
        }
      : null,
  };
}
