import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cardBrand, isLuhnValid, normaliseCardNumber } from '../cards.ts';
import { answerAttempt, SIMULATE_VALUES } from './script.ts';

const now = new Date('2030-06-15T00:00:00Z');
const card = (number: string, expYear = 2031) => ({ number, expMonth: 6, expYear });

test('card numbers: normalised, Luhn-checked, branded', () => {
  assert.equal(normaliseCardNumber('4242 4242-4242 4242'), '4242424242424242');
  assert.equal(normaliseCardNumber('4242'), null);
  assert.equal(normaliseCardNumber('4242x4242424242424'), null);
  for (const valid of ['4242424242424242', '4000000000000002', '5555555555554444', '378282246310005']) {
    assert.ok(isLuhnValid(valid), valid);
  }
  assert.ok(!isLuhnValid('4242424242424241'));
  assert.deepEqual(
    ['4242424242424242', '5555555555554444', '2223003122003222', '378282246310005', '6011111111111117'].map(
      cardBrand,
    ),
    ['visa', 'mastercard', 'mastercard', 'amex', 'discover'],
  );
});

test('the test-card table', () => {
  assert.deepEqual(answerAttempt(card('4242424242424242'), null, now), {
    attemptStatus: 'succeeded',
    errorMessage: null,
    declineCode: null,
    outcome: 'PAYMENT_SUCCESS',
    depositStatus: 'succeeded',
  });
  assert.equal(answerAttempt(card('4000000000000002'), null, now).errorMessage, 'Your card was declined.');
  assert.equal(
    answerAttempt(card('4000000000009995'), null, now).errorMessage,
    'Your card has insufficient funds.',
  );
  assert.equal(answerAttempt(card('4000000000000069'), null, now).errorMessage, 'Your card has expired.');
  assert.equal(answerAttempt(card('4000000000000119'), null, now).outcome, 'PAYMENT_FAILED');
  assert.equal(answerAttempt(card('4242424242424242', 2030), null, now).outcome, 'PAYMENT_SUCCESS');
  assert.equal(
    answerAttempt({ number: '4242424242424242', expMonth: 5, expYear: 2030 }, null, now).outcome,
    'PROCESSING',
  );
});

test('sandbox scripts override the card', () => {
  const outcomes = SIMULATE_VALUES.map(
    (value) => answerAttempt(card('4000000000000002'), value, now).outcome,
  );
  assert.deepEqual(outcomes, [
    'PAYMENT_FAILED',
    'CHECKOUT_CANCELED',
    'CANCELED',
    'PAYMENT_SUCCESS',
    'CHECKOUT_PENDING',
  ]);
  assert.equal(
    answerAttempt(card('4242424242424242'), 'success_pending_deposit', now).depositStatus,
    'pending',
  );
});
