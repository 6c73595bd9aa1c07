// What the simulated processor answers to one card attempt: the test-card table, and on the sandbox the
// `sandbox_simulate` script, which overrides the card. Pure; the simulator records the answer.
import { isCardExpired } from '../cards.ts';
import type { ProviderPaymentOutcome } from '../types.ts';

export const SIMULATE_VALUES = [
  'payment_failed',
  'checkout_canceled',
  'canceled',
  'success_pending_deposit',
  'checkout_pending',
] as const;
export type SimulateValue = (typeof SIMULATE_VALUES)[number];

export function isSimulateValue(value: string): value is SimulateValue {
  return (SIMULATE_VALUES as readonly string[]).includes(value);
}

export interface AttemptAnswer {
  attemptStatus:
    | 'succeeded'
    | 'requires_payment_method'
    | 'requires_action'
    | 'failed'
    | 'canceled'
    | 'pending';
  errorMessage: string | null;
  /** The decline code of a declined or failed attempt. */
  declineCode: string | null;
  outcome: ProviderPaymentOutcome;
  depositStatus: 'pending' | 'succeeded' | null;
}

/**
 * How a card behaves, which is all a saved card keeps of its number: the test cards of the decisions
 * (3-D Secure always, 3-D Secure on the first charge only, saved but declined off-session) and the declines.
 */
export type CardBehaviour =
  | 'succeed'
  | 'authenticate_always'
  | 'authenticate_first'
  | 'decline_off_session'
  | 'decline'
  | 'insufficient_funds'
  | 'expired'
  | 'error';

const BEHAVIOURS: Record<string, CardBehaviour> = {
  '4000002760003184': 'authenticate_always',
  '4000000000003220': 'authenticate_first',
  '4000000000000341': 'decline_off_session',
  '4000000000000002': 'decline',
  '4000000000009995': 'insufficient_funds',
  '4000000000000069': 'expired',
  '4000000000000119': 'error',
};

export function behaviourOf(number: string): CardBehaviour {
  return BEHAVIOURS[number] ?? 'succeed';
}

export const SUCCESS: AttemptAnswer = {
  attemptStatus: 'succeeded',
  errorMessage: null,
  declineCode: null,
  outcome: 'PAYMENT_SUCCESS',
  depositStatus: 'succeeded',
};

export function declined(errorMessage: string, declineCode: string): AttemptAnswer {
  return {
    attemptStatus: 'requires_payment_method',
    errorMessage,
    declineCode,
    outcome: 'PROCESSING',
    depositStatus: null,
  };
}

/** The card needs the customer's 3-D Secure step: the payment waits, still taking attempts. */
export const AUTHENTICATION_REQUIRED: AttemptAnswer = {
  attemptStatus: 'requires_action',
  errorMessage: null,
  declineCode: null,
  outcome: 'PROCESSING',
  depositStatus: null,
};

export const AUTHENTICATION_FAILED = declined(
  'The 3-D Secure authentication failed.',
  'authentication_failed',
);

const DECLINES: Partial<Record<CardBehaviour, AttemptAnswer>> = {
  decline: declined('Your card was declined.', 'card_declined'),
  insufficient_funds: declined('Your card has insufficient funds.', 'insufficient_funds'),
  expired: declined('Your card has expired.', 'expired_card'),
  error: {
    attemptStatus: 'failed',
    errorMessage: 'An error occurred while processing your card.',
    declineCode: 'processing_error',
    outcome: 'PAYMENT_FAILED',
    depositStatus: null,
  },
};

/** The test cards that do not succeed on the hosted page, by number (the 3-D Secure ones need a challenge). */
export const TEST_CARDS: Record<string, AttemptAnswer> = Object.fromEntries(
  Object.entries(BEHAVIOURS).flatMap(([number, behaviour]) => {
    const answer = DECLINES[behaviour];
    return answer ? [[number, answer]] : [];
  }),
);

const SCRIPTS: Record<SimulateValue, AttemptAnswer> = {
  payment_failed: {
    attemptStatus: 'failed',
    errorMessage: 'The payment failed.',
    declineCode: 'processing_error',
    outcome: 'PAYMENT_FAILED',
    depositStatus: null,
  },
  checkout_canceled: {
    attemptStatus: 'canceled',
    errorMessage: 'The checkout was canceled.',
    declineCode: null,
    outcome: 'CHECKOUT_CANCELED',
    depositStatus: null,
  },
  canceled: {
    attemptStatus: 'canceled',
    errorMessage: 'The payment was canceled.',
    declineCode: null,
    outcome: 'CANCELED',
    depositStatus: null,
  },
  success_pending_deposit: {
    attemptStatus: 'pending',
    errorMessage: null,
    declineCode: null,
    outcome: 'PAYMENT_SUCCESS',
    depositStatus: 'pending',
  },
  checkout_pending: {
    attemptStatus: 'pending',
    errorMessage: null,
    declineCode: null,
    outcome: 'CHECKOUT_PENDING',
    depositStatus: null,
  },
};

/** CHECKOUT_PENDING resolves to success on this many reads. */
export const PENDING_SYNCS_TO_RESOLVE = 3;

const EXPIRED = declined('Your card has expired.', 'expired_card');

/** An attempt with the customer present (the hosted page's form). */
export function answerAttempt(
  card: { number: string; expMonth: number; expYear: number },
  simulate: string | null,
  now: Date,
): AttemptAnswer {
  if (simulate !== null && isSimulateValue(simulate)) return SCRIPTS[simulate];
  const behaviour = behaviourOf(card.number);
  const scripted = DECLINES[behaviour];
  if (scripted) return scripted;
  if (isCardExpired(card.expMonth, card.expYear, now)) return EXPIRED;
  if (behaviour === 'authenticate_always' || behaviour === 'authenticate_first')
    return AUTHENTICATION_REQUIRED;
  return SUCCESS;
}

/** Whether saving a card of this behaviour asks the customer to authenticate (a setup with 3-D Secure). */
export function setupNeedsAuthentication(behaviour: CardBehaviour): boolean {
  return behaviour === 'authenticate_always' || behaviour === 'authenticate_first';
}

/** Saving is refused for the cards a bank declines outright; the others are saved (and may decline later). */
export function answerSetup(behaviour: CardBehaviour, expMonth: number, expYear: number, now: Date) {
  if (behaviour === 'decline' || behaviour === 'expired' || behaviour === 'error') return DECLINES[behaviour];
  if (isCardExpired(expMonth, expYear, now)) return EXPIRED;
  return null;
}

/** A charge of a saved card with the customer away (a renewal). */
export function answerOffSession(
  card: { behaviour: CardBehaviour; expMonth: number; expYear: number },
  now: Date,
): AttemptAnswer {
  if (isCardExpired(card.expMonth, card.expYear, now)) return EXPIRED;
  switch (card.behaviour) {
    case 'authenticate_always':
      return declined(
        'This card requires authentication; the customer must pay on-session.',
        'authentication_required',
      );
    case 'decline_off_session':
      return declined('Your card was declined.', 'card_declined');
    default:
      return DECLINES[card.behaviour] ?? SUCCESS;
  }
}
