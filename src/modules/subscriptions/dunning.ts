// Dunning (decisions.md "Subscriptions", Dunning): what follows each try of a cycle's charge. A failed
// renewal is retried 1, 3, 7 and 14 days after the FIRST try (5 tries in all) while the subscription
// is past_due; after the last try the cycle is uncollectible and the subscription canceled with
// payment_failed; a success returns it to active with the anchor unchanged.
//
// A decline no retry can fix (the provider contract's final declines: expired, stolen, lost, requires
// a new card, authentication_required off-session, …) stops the retries of that card and mails the
// update-card link. Choice: the cycle then waits, still `retrying` and past_due, with no charge, until
// the time the last try would have been (first try + 14 days); an update of the card retries at once
// (that is the next try); with no new card by then, `giveUp` closes it as after a failed last try.
// A final decline on the last try ends the cycle at once. An unknown outcome is not a try result: the
// worker reconciles it with the provider first, and never charges again meanwhile. A refusal of a
// payment the provider shows paid is not a decline either (answerOfTry): that period is paid.
import { isRetryableDecline, type PaymentWrite, type ProviderOutcome } from '../../provider/types.ts';

/** Days after the first try at which tries 2, 3, 4 and 5 are made. */
export const RETRY_DAYS = [1, 3, 7, 14] as const;
export const MAX_TRIES = RETRY_DAYS.length + 1;

const DAY_MS = 86_400_000;

export type CycleStatus = 'processing' | 'paid' | 'retrying' | 'uncollectible' | 'void';
export type SubscriptionStatus = 'trialing' | 'active' | 'past_due' | 'canceled';
export type CustomerMail = 'receipt' | 'payment_failed' | 'canceled';

export type TryResult = { succeeded: true } | { succeeded: false; declineCode: string | null };

export interface DunningStep {
  cycleStatus: CycleStatus;
  subscriptionStatus: SubscriptionStatus;
  cancelReason: 'payment_failed' | null;
  /** When the worker next looks at the cycle (a retry, or the give-up time when a new card is needed); null when it is over. */
  nextAttemptAt: Date | null;
  /** The same card cannot succeed: no retry until the customer gives a new card. */
  needsNewCard: boolean;
  /** The mail to send the customer now, if any (payment_failed carries the update-card link). */
  mail: CustomerMail | null;
}

/** Whether a decline stops the retries (no later try of the same card can succeed). */
export function isFinalDecline(declineCode: string | null): boolean {
  return !isRetryableDecline(declineCode);
}

/** When try `triesMade + 1` is due, or null when `triesMade` tries are all there are. */
export function nextAttemptAt(firstTryAt: Date, triesMade: number): Date | null {
  if (!Number.isInteger(triesMade) || triesMade < 1)
    throw new RangeError(`tries made must be 1 or more, not ${triesMade}`);
  if (triesMade >= MAX_TRIES) return null;
  return new Date(firstTryAt.getTime() + RETRY_DAYS[triesMade - 1] * DAY_MS);
}

const uncollectible: DunningStep = {
  cycleStatus: 'uncollectible',
  subscriptionStatus: 'canceled',
  cancelReason: 'payment_failed',
  nextAttemptAt: null,
  needsNewCard: false,
  mail: 'canceled',
};

/** The state after try number `tryNumber` (1 = the first, at the period's start) ended with `result`. */
export function afterTry(firstTryAt: Date, tryNumber: number, result: TryResult): DunningStep {
  if (result.succeeded) {
    return {
      cycleStatus: 'paid',
      subscriptionStatus: 'active',
      cancelReason: null,
      nextAttemptAt: null,
      needsNewCard: false,
      mail: 'receipt',
    };
  }
  const next = nextAttemptAt(firstTryAt, tryNumber);
  if (next === null) return uncollectible;
  const final = isFinalDecline(result.declineCode);
  return {
    cycleStatus: 'retrying',
    subscriptionStatus: 'past_due',
    cancelReason: null,
    nextAttemptAt: final ? new Date(firstTryAt.getTime() + RETRY_DAYS[RETRY_DAYS.length - 1] * DAY_MS) : next,
    needsNewCard: final,
    // The first failure, and a decline that needs a new card, tell the customer (with the update-card link).
    mail: final || tryNumber === 1 ? 'payment_failed' : null,
  };
}

/** A cycle that waited for a new card in vain until its last try's time: closed without a charge. */
export function giveUp(): DunningStep {
  return uncollectible;
}

/**
 * What a try's answer says of its period. A refusal of the call (a Stripe PaymentIntent in the wrong
 * state; the simulator's payment no longer taking attempts) says nothing of the charge: when the
 * provider's payment, read with the answer, shows it paid, the period is paid (an earlier charge whose
 * answer Kassa never recorded); still being paid, the try waits and the reconciler reads it back. Only
 * otherwise (canceled, or waiting for a payment method) is the refusal the try's decline. So a period
 * whose charge succeeded at the provider is never dunned. A refusal of the provider's own (a refused
 * key, a rate limit) carries no payment and is handled as such (recordTry).
 */
export function answerOfTry(write: PaymentWrite): ProviderOutcome {
  const { outcome, payment } = write;
  if (outcome.status !== 'failed' || outcome.providerError === true || payment === null) return outcome;
  if (payment.outcome === 'PAYMENT_SUCCESS') return { status: 'succeeded' };
  if (payment.outcome === 'CHECKOUT_PENDING') return { status: 'pending' };
  return outcome;
}
