// The wallet's arithmetic against decisions.md "Wallet": wallet_available = balance + reserve − held;
// a settlement puts net_usd × rolling_reserve_percent/100 in the reserve (half-up) and the rest in the
// balance; refund and payout debits take the balance first (what pending payouts were promised last),
// then the reserve.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { availableOf, bucketsOf, lesserOf, settlementSplit, splitDebit } from './arithmetic.ts';

test('available is balance plus reserve minus held', () => {
  assert.equal(availableOf({ balance: 1_000n, reserve: 500n, held: 300n }), 1_200n);
  assert.equal(availableOf({ balance: 0n, reserve: 0n, held: 0n }), 0n);
  assert.equal(availableOf({ balance: 100n, reserve: 0n, held: 250n }), -150n);
});

test('a debit takes the balance first, then the reserve', () => {
  const wallet = { balance: 300n, reserve: 500n, held: 0n };
  assert.deepEqual(splitDebit(wallet, 200n), { balance: 200n, reserve: 0n });
  assert.deepEqual(splitDebit(wallet, 300n), { balance: 300n, reserve: 0n });
  assert.deepEqual(splitDebit(wallet, 301n), { balance: 300n, reserve: 1n });
  assert.deepEqual(splitDebit(wallet, 800n), { balance: 300n, reserve: 500n });
  assert.deepEqual(splitDebit({ balance: 0n, reserve: 500n, held: 0n }, 120n), {
    balance: 0n,
    reserve: 120n,
  });
});

test('a debit leaves the balance promised to pending payouts for last', () => {
  const wallet = { balance: 900n, reserve: 100n, held: 1_000n };
  // 900 promised to a payout: a refund's 100 comes from the reserve.
  assert.deepEqual(splitDebit(wallet, 100n, 900n), { balance: 0n, reserve: 100n });
  // 500 promised: the 400 beyond it first, then the reserve.
  assert.deepEqual(splitDebit(wallet, 450n, 500n), { balance: 400n, reserve: 50n });
  assert.deepEqual(splitDebit(wallet, 400n, 500n), { balance: 400n, reserve: 0n });
  // The payout itself, no longer pending: its 900 from the balance.
  assert.deepEqual(splitDebit({ balance: 900n, reserve: 0n, held: 900n }, 900n, 0n), {
    balance: 900n,
    reserve: 0n,
  });
  // More promised than the balance holds (never, while payouts are accepted up to balance − held): none
  // of the balance, and never a negative part.
  assert.deepEqual(splitDebit({ balance: 100n, reserve: 500n, held: 0n }, 50n, 300n), {
    balance: 0n,
    reserve: 50n,
  });
});

test('lesserOf is the smaller amount whichever side it is on', () => {
  assert.equal(lesserOf(1n, 2n), 1n);
  assert.equal(lesserOf(2n, 1n), 1n);
  assert.equal(lesserOf(5n, 5n), 5n);
  assert.equal(lesserOf(-3n, 0n), -3n);
});

test('a settlement puts the reserve percentage (half-up) in the reserve and the rest in the balance', () => {
  // The default 10 %: 100.00 → 10.00 reserve, 90.00 balance.
  assert.deepEqual(settlementSplit(10_000n, 1_000n), { reserve: 1_000n, balance: 9_000n });
  // 10.05 at 10 %: 1.005 → 1.01 (half-up); the balance gets the rest, so nothing is lost.
  assert.deepEqual(settlementSplit(1_005n, 1_000n), { reserve: 101n, balance: 904n });
  // 10.04 at 10 %: 1.004 → 1.00.
  assert.deepEqual(settlementSplit(1_004n, 1_000n), { reserve: 100n, balance: 904n });
  assert.deepEqual(settlementSplit(10_000n, 0n), { reserve: 0n, balance: 10_000n });
  assert.deepEqual(settlementSplit(10_000n, 10_000n), { reserve: 10_000n, balance: 0n });
  assert.deepEqual(settlementSplit(0n, 1_000n), { reserve: 0n, balance: 0n });
});

test('buckets are read from what the database drivers hand back', () => {
  assert.deepEqual(bucketsOf({ balance: 1_250, reserve: 0, held: 75 }), {
    balance: 1_250n,
    reserve: 0n,
    held: 75n,
  });
  const fromStrings = bucketsOf({ balance: '9007199254740993', reserve: '2', held: '3' } as never);
  assert.deepEqual(fromStrings, { balance: 9_007_199_254_740_993n, reserve: 2n, held: 3n });
});
