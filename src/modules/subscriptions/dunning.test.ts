import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ProviderPaymentState } from '../../provider/types.ts';
import {
  afterTry,
  answerOfTry,
  giveUp,
  isFinalDecline,
  MAX_TRIES,
  nextAttemptAt,
  RETRY_DAYS,
} from './dunning.ts';

// The numbers are decisions.md's ("Dunning": retries 1, 3, 7 and 14 days after the first try, 5 tries;
// past_due meanwhile; expired, stolen, requires a new card stop the retries and mail the update-card
// link; after the last try uncollectible + canceled payment_failed; a success returns to active),
// written out here, not read from the constants under test.

const first = new Date('2027-01-31T10:00:00.000Z');
const declined = { succeeded: false, declineCode: 'insufficient_funds' } as const;
const iso = (d: Date | null) => (d === null ? null : d.toISOString());

test('the schedule is exactly the decided one: 5 tries, retries 1, 3, 7 and 14 days after the first', () => {
  assert.deepEqual([...RETRY_DAYS], [1, 3, 7, 14]);
  assert.equal(MAX_TRIES, 5);
  assert.equal(iso(nextAttemptAt(first, 1)), '2027-02-01T10:00:00.000Z');
  assert.equal(iso(nextAttemptAt(first, 2)), '2027-02-03T10:00:00.000Z');
  assert.equal(iso(nextAttemptAt(first, 3)), '2027-02-07T10:00:00.000Z');
  assert.equal(iso(nextAttemptAt(first, 4)), '2027-02-14T10:00:00.000Z');
  assert.equal(nextAttemptAt(first, 5), null);
  assert.equal(nextAttemptAt(first, 6), null);
  assert.throws(() => nextAttemptAt(first, 0), RangeError);
  assert.throws(() => nextAttemptAt(first, 1.5), RangeError);
  assert.throws(() => nextAttemptAt(first, 0), /tries made .*1 or more, not 0/);
});

test('a retryable decline on tries 1–4: retrying, past_due, the next try on schedule; mail on the first only', () => {
  assert.deepEqual(afterTry(first, 1, declined), {
    cycleStatus: 'retrying',
    subscriptionStatus: 'past_due',
    cancelReason: null,
    nextAttemptAt: new Date('2027-02-01T10:00:00.000Z'),
    needsNewCard: false,
    mail: 'payment_failed',
  });
  const expected = ['2027-02-03T10:00:00.000Z', '2027-02-07T10:00:00.000Z', '2027-02-14T10:00:00.000Z'];
  for (const [i, at] of expected.entries()) {
    assert.deepEqual(afterTry(first, i + 2, declined), {
      cycleStatus: 'retrying',
      subscriptionStatus: 'past_due',
      cancelReason: null,
      nextAttemptAt: new Date(at),
      needsNewCard: false,
      mail: null,
    });
  }
  // A decline without a code is treated as retryable.
  assert.equal(afterTry(first, 2, { succeeded: false, declineCode: null }).needsNewCard, false);
});

test('a failed fifth try: the cycle is uncollectible and the subscription canceled with payment_failed', () => {
  const expected = {
    cycleStatus: 'uncollectible',
    subscriptionStatus: 'canceled',
    cancelReason: 'payment_failed',
    nextAttemptAt: null,
    needsNewCard: false,
    mail: 'canceled',
  };
  assert.deepEqual(afterTry(first, 5, declined), expected);
  assert.deepEqual(afterTry(first, 5, { succeeded: false, declineCode: 'expired_card' }), expected);
  assert.deepEqual(giveUp(), expected);
});

test('a success on any try (the third here) pays the cycle and returns the subscription to active', () => {
  for (const n of [1, 3, 5]) {
    assert.deepEqual(afterTry(first, n, { succeeded: true }), {
      cycleStatus: 'paid',
      subscriptionStatus: 'active',
      cancelReason: null,
      nextAttemptAt: null,
      needsNewCard: false,
      mail: 'receipt',
    });
  }
});

test('a decline no retry can fix stops the retries, mails the update-card link, waits until the last try’s day', () => {
  for (const code of ['expired_card', 'stolen_card', 'lost_card', 'authentication_required']) {
    assert.equal(isFinalDecline(code), true, code);
    for (const n of [1, 3, 4]) {
      assert.deepEqual(afterTry(first, n, { succeeded: false, declineCode: code }), {
        cycleStatus: 'retrying',
        subscriptionStatus: 'past_due',
        cancelReason: null,
        nextAttemptAt: new Date('2027-02-14T10:00:00.000Z'),
        needsNewCard: true,
        mail: 'payment_failed',
      });
    }
  }
  for (const code of ['insufficient_funds', 'card_declined', 'processing_error', null]) {
    assert.equal(isFinalDecline(code), false, String(code));
  }
});

const stateShowing = (outcome: ProviderPaymentState['outcome']): ProviderPaymentState => ({
  providerPaymentId: 'pi_1',
  outcome,
  depositStatus: outcome === 'PAYMENT_SUCCESS' ? 'succeeded' : null,
  refundState: null,
  attempts: [],
});
const wrongState = {
  status: 'failed',
  code: 'payment_intent_unexpected_state',
  message:
    'You cannot confirm this PaymentIntent because it has already succeeded after being previously confirmed.',
  retryable: false,
} as const;

test("a refusal of a payment the provider shows paid is the period's payment, one still being paid waits; otherwise it is the decline", () => {
  assert.deepEqual(answerOfTry({ outcome: wrongState, payment: stateShowing('PAYMENT_SUCCESS') }), {
    status: 'succeeded',
  });
  assert.deepEqual(answerOfTry({ outcome: wrongState, payment: stateShowing('CHECKOUT_PENDING') }), {
    status: 'pending',
  });
  for (const outcome of ['CANCELED', 'PROCESSING'] as const) {
    assert.deepEqual(answerOfTry({ outcome: wrongState, payment: stateShowing(outcome) }), wrongState);
  }
  assert.deepEqual(
    answerOfTry({ outcome: wrongState, payment: null }),
    wrongState,
    'nothing read: as answered',
  );
  // The provider's own refusal (a rate limit) carries no charge to go by: handled as a refusal.
  const limited = { ...wrongState, code: 'rate_limited', retryable: true, providerError: true } as const;
  assert.deepEqual(answerOfTry({ outcome: limited, payment: stateShowing('PAYMENT_SUCCESS') }), limited);
  // Answers that are not refusals are the try's own.
  const pending = { status: 'pending' } as const;
  assert.deepEqual(answerOfTry({ outcome: pending, payment: stateShowing('PROCESSING') }), pending);
  // Whatever the payment read with them shows: only a refusal is judged by it.
  assert.deepEqual(answerOfTry({ outcome: pending, payment: stateShowing('PAYMENT_SUCCESS') }), pending);
  const succeeded = { status: 'succeeded' } as const;
  assert.deepEqual(answerOfTry({ outcome: succeeded, payment: stateShowing('CHECKOUT_PENDING') }), succeeded);
});
