import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  assertPaymentRefundable,
  providerMarkBlocks,
  type RefundablePayment,
  refundAmounts,
  refundableRemainder,
  walletLimit,
} from './eligibility.ts';

const eur: RefundablePayment = {
  status: 'paid',
  providerRefundState: null,
  currency: 'EUR',
  gross: 10_000n,
  grossHt: 8_333n,
  netUsd: 10_487n,
  refundedAmount: 0n,
  refundedHt: 0n,
};
const rich = { balance: 1_000_000n, reserve: 0n, held: 0n };

test('the hold is the refund share of net_usd, half-up; the provider amount is its HT share, half-up', () => {
  assert.deepEqual(refundAmounts(eur, rich, 5_000n), {
    amount: 5_000n,
    amountUsd: 5_244n,
    amountInCents: 4_167n,
  });
  assert.deepEqual(refundAmounts(eur, rich, null), {
    amount: 10_000n,
    amountUsd: 10_487n,
    amountInCents: 8_333n,
  });
});

test('the HT amount is capped at what the provider has left after completed refunds', () => {
  const half = { ...eur, refundedAmount: 5_000n, refundedHt: 4_167n };
  assert.equal(refundAmounts(half, rich, null).amountInCents, 4_166n);
});

test('the wallet limit converts what is available into the charge currency, rounded down', () => {
  assert.equal(walletLimit(eur, { balance: 5_244n, reserve: 0n, held: 0n }), 5_000n);
  assert.equal(walletLimit(eur, { balance: 5_243n, reserve: 0n, held: 0n }), 4_999n);
  assert.equal(walletLimit(eur, { balance: 100n, reserve: 50n, held: 150n }), 0n);
  // A hold inside the limit never exceeds what is available.
  const limit = walletLimit(eur, { balance: 5_243n, reserve: 0n, held: 0n });
  assert.ok(refundAmounts(eur, { balance: 5_243n, reserve: 0n, held: 0n }, limit).amountUsd <= 5_243n);
});

test('the rules are checked in the interface order, with the decisions message prefixes', () => {
  const refusal = (payment: RefundablePayment, inFlight: boolean) => {
    try {
      assertPaymentRefundable(payment, inFlight);
      return null;
    } catch (error) {
      return (error as Error).message;
    }
  };
  assert.equal(refusal({ ...eur, status: 'failed' }, true), 'Payment is not refundable in status failed.');
  assert.equal(refusal({ ...eur, status: 'refunded' }, false), 'Payment has already been refunded.');
  assert.equal(
    refusal({ ...eur, providerRefundState: 'FULLY_REFUNDED' }, true),
    'Payment has already been refunded.',
  );
  assert.equal(
    refusal({ ...eur, status: 'refund_pending' }, true),
    'A refund is already in progress for this payment.',
  );
  assert.equal(refusal({ ...eur, refundedAmount: 10_000n }, false), 'Payment has already been refunded.');
  assert.equal(refusal(eur, false), null);
  assert.throws(
    () => refundAmounts(eur, rich, 10_001n),
    /^Error: Refund amount exceeds remaining refundable amount \(100\.00 EUR remaining\)\.$/,
  );
  assert.throws(
    () => refundAmounts(eur, { balance: 0n, reserve: 0n, held: 0n }, 1n),
    /Insufficient wallet balance to refund any amount/,
  );
  assert.throws(
    () => refundAmounts(eur, { balance: 5_244n, reserve: 0n, held: 0n }, null),
    /Refund amount exceeds wallet-available limit \(at most 50\.00 EUR can be refunded now\)/,
  );
});

test('a provider PARTIAL_REFUNDED mark blocks only refunds Kassa did not make itself', () => {
  const marked = { ...eur, providerRefundState: 'PARTIAL_REFUNDED' };
  assert.equal(providerMarkBlocks(marked, false), true);
  assert.equal(providerMarkBlocks({ ...marked, refundedAmount: 1_000n }, false), false);
  assert.equal(providerMarkBlocks(marked, true), false);
  assert.equal(
    providerMarkBlocks({ ...eur, providerRefundState: 'FULLY_REFUNDED', refundedAmount: 1n }, false),
    true,
  );
});

test('a payment whose fee took the whole amount is refused, never divided by its zero net', () => {
  const nothingSettled =
    'Payment is not refundable: its fee took the whole amount, so nothing was settled to the wallet for it.';
  for (const netUsd of [0n, -1n]) {
    const payment = { ...eur, netUsd };
    assert.throws(
      () => assertPaymentRefundable(payment, false),
      (error: Error) => error.message === nothingSettled,
    );
    assert.equal(walletLimit(payment, rich), 0n);
    assert.throws(
      () => refundAmounts(payment, rich, 100n),
      /Insufficient wallet balance to refund any amount/,
    );
  }
  // A net of one cent settles something: the rules go on to the wallet.
  assert.doesNotThrow(() => assertPaymentRefundable({ ...eur, netUsd: 1n }, false));
});

test('the remainder never goes below zero, and an empty or overdrawn wallet covers nothing', () => {
  assert.equal(refundableRemainder({ ...eur, refundedAmount: 10_000n }), 0n);
  assert.equal(refundableRemainder({ ...eur, refundedAmount: 15_000n }), 0n);
  assert.equal(refundableRemainder({ ...eur, refundedAmount: 9_999n }), 1n);
  assert.equal(walletLimit(eur, { balance: 0n, reserve: 0n, held: 0n }), 0n);
  assert.equal(walletLimit(eur, { balance: 100n, reserve: 0n, held: 400n }), 0n);
  assert.equal(walletLimit(eur, { balance: 1n, reserve: 0n, held: 0n }), 0n); // 1 × 10000 / 10487 → 0
  assert.equal(walletLimit(eur, { balance: 2n, reserve: 0n, held: 0n }), 1n); // 1.9 → 1 (down)
});

test('the HT sent to the provider is capped at what is left of it, never made negative', () => {
  // Completed refunds took all of the HT (rounding): the next cent-sized refund asks for nothing more.
  const htUsedUp = { ...eur, refundedAmount: 5_000n, refundedHt: 8_333n };
  assert.equal(refundAmounts(htUsedUp, rich, 100n).amountInCents, 0n);
  // Exactly what is left is asked for as it is.
  const exact = { ...eur, refundedAmount: 5_000n, refundedHt: 4_166n };
  assert.equal(refundAmounts(exact, rich, 5_000n).amountInCents, 4_167n);
  // A provider total above the HT (inconsistent data) does not turn the amount negative.
  const over = { ...eur, refundedAmount: 5_000n, refundedHt: 9_000n };
  assert.equal(refundAmounts(over, rich, 1_000n).amountInCents, 833n);
});

test('partial refunds hold a running share of net_usd: any number of parts holds net_usd exactly', () => {
  // USD 100.00 at a 2.9 % fee: net 97.10. Rounded part by part, 555 refunds of 0.18 held 0.17 each.
  const usd: RefundablePayment = {
    ...eur,
    currency: 'USD',
    gross: 10_000n,
    grossHt: 10_000n,
    netUsd: 9_710n,
  };
  for (const part of [18n, 1n, 7n, 333n]) {
    let refunded = 0n;
    let held = 0n;
    while (refunded < usd.gross) {
      const amount = usd.gross - refunded < part ? null : part;
      const { amount: taken, amountUsd } = refundAmounts({ ...usd, refundedAmount: refunded }, rich, amount);
      held += amountUsd;
      refunded += taken;
      // At every step the holds so far are the half-up share of what was refunded so far.
      assert.equal(held, (refunded * usd.netUsd * 2n + usd.gross) / (2n * usd.gross), `parts of ${part}`);
    }
    assert.equal(held, usd.netUsd, `parts of ${part}: the whole net settlement, no more, no less`);
  }
});

test('a refund under review refuses any new refund of a paid payment, before "already refunded" and the other rules', () => {
  const refusal = (payment: RefundablePayment) => {
    try {
      assertPaymentRefundable(payment, false, 'RF0123456789abcdef');
      return null;
    } catch (error) {
      return (error as Error).message;
    }
  };
  const underReview =
    /^A refund of this payment is under review: the provider contradicts what Kassa recorded for RF0123456789abcdef/;
  for (const status of ['paid', 'refund_pending', 'refunded'] as const) {
    assert.match(refusal({ ...eur, status }) ?? '', underReview);
  }
  assert.match(refusal({ ...eur, refundedAmount: 10_000n }) ?? '', underReview);
  assert.equal(refusal({ ...eur, status: 'failed' }), 'Payment is not refundable in status failed.');
  assert.doesNotThrow(() => assertPaymentRefundable(eur, false, null));
});
