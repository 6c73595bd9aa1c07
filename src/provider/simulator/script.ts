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
  attemptStatus: 'succeeded' | 'requires_payment_method' | 'failed' | 'canceled' | 'pending';
  errorMessage: string | null;
  outcome: ProviderPaymentOutcome;
  depositStatus: 'pending' | 'succeeded' | null;
}

const SUCCESS: AttemptAnswer = {
  attemptStatus: 'succeeded',
  errorMessage: null,
  outcome: 'PAYMENT_SUCCESS',
  depositStatus: 'succeeded',
};

function declined(errorMessage: string): AttemptAnswer {
  return {
    attemptStatus: 'requires_payment_method',
    errorMessage,
    outcome: 'PROCESSING',
    depositStatus: null,
  };
}

/** The test cards that do not succeed; any other Luhn-valid number succeeds. */
export const TEST_CARDS: Record<string, AttemptAnswer> = {
  '4000000000000002': declined('Your card was declined.'),
  '4000000000009995': declined('Your card has insufficient funds.'),
  '4000000000000069': declined('Your card has expired.'),
  '4000000000000119': {
    attemptStatus: 'failed',
    errorMessage: 'An error occurred while processing your card.',
    outcome: 'PAYMENT_FAILED',
    depositStatus: null,
  },
};

const SCRIPTS: Record<SimulateValue, AttemptAnswer> = {
  payment_failed: {
    attemptStatus: 'failed',
    errorMessage: 'The payment failed.',
    outcome: 'PAYMENT_FAILED',
    depositStatus: null,
  },
  checkout_canceled: {
    attemptStatus: 'canceled',
    errorMessage: 'The checkout was canceled.',
    outcome: 'CHECKOUT_CANCELED',
    depositStatus: null,
  },
  canceled: {
    attemptStatus: 'canceled',
    errorMessage: 'The payment was canceled.',
    outcome: 'CANCELED',
    depositStatus: null,
  },
  success_pending_deposit: {
    attemptStatus: 'pending',
    errorMessage: null,
    outcome: 'PAYMENT_SUCCESS',
    depositStatus: 'pending',
  },
  checkout_pending: {
    attemptStatus: 'pending',
    errorMessage: null,
    outcome: 'CHECKOUT_PENDING',
    depositStatus: null,
  },
};

/** CHECKOUT_PENDING resolves to success on this many reads. */
export const PENDING_SYNCS_TO_RESOLVE = 3;

export function answerAttempt(
  card: { number: string; expMonth: number; expYear: number },
  simulate: string | null,
  now: Date,
): AttemptAnswer {
  if (simulate !== null && isSimulateValue(simulate)) return SCRIPTS[simulate];
  const scripted = TEST_CARDS[card.number];
  if (scripted) return scripted;
  if (isCardExpired(card.expMonth, card.expYear, now)) return declined('Your card has expired.');
  return SUCCESS;
}
