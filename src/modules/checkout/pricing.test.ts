import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkoutTotals, lineAmount } from './pricing.ts';

const item = (unitPrice: bigint, quantity = 1) => ({ productId: null, name: 'x', unitPrice, quantity });

test('HT prices get the tax added on the total, half-up', () => {
  assert.deepEqual(checkoutTotals([item(1000n, 2), item(333n)], 'HT', 2000n), {
    subtotalHt: 2333n,
    tax: 467n,
    gross: 2800n,
  });
  // 0.05 × 1.075 = 0.05375 → 0.05
  assert.equal(checkoutTotals([item(5n)], 'HT', 750n).gross, 5n);
  // 0.10 × 1.05 = 0.105 → 0.11 (half-up)
  assert.equal(checkoutTotals([item(10n)], 'HT', 500n).gross, 11n);
});

test('TTC prices are the gross and the HT part is derived', () => {
  assert.deepEqual(checkoutTotals([item(1200n)], 'TTC', 2000n), {
    subtotalHt: 1000n,
    tax: 200n,
    gross: 1200n,
  });
  assert.deepEqual(checkoutTotals([item(999n)], 'TTC', 0n), { subtotalHt: 999n, tax: 0n, gross: 999n });
});

// decisions.md "Money": rounding is half-up to the cent; Gross TTC = HT × (1 + tax_rate_percent/100),
// worked out on the checkout's total (pricing.ts), never line by line.

test('TTC prices: the HT part is rounded half-up, a tie going up', () => {
  // 10.00 TTC at 5.5 %: 10.00 / 1.055 = 9.4786… → 9.48 (rounding down would give 9.47).
  assert.deepEqual(checkoutTotals([item(1000n)], 'TTC', 550n), { subtotalHt: 948n, tax: 52n, gross: 1000n });
  // 0.03 TTC at 100 %: 0.015 → 0.02, and 0.05 → 0.025 → 0.03 (half-up, not half-even).
  assert.deepEqual(checkoutTotals([item(3n)], 'TTC', 10_000n), { subtotalHt: 2n, tax: 1n, gross: 3n });
  assert.deepEqual(checkoutTotals([item(5n)], 'TTC', 10_000n), { subtotalHt: 3n, tax: 2n, gross: 5n });
  // 0.07 TTC at 40 %: 0.05 exactly.
  assert.deepEqual(checkoutTotals([item(7n)], 'TTC', 4_000n), { subtotalHt: 5n, tax: 2n, gross: 7n });
});

test('HT prices: a tie in the gross goes up', () => {
  // 0.05 HT at 10 %: 0.055 → 0.06.
  assert.deepEqual(checkoutTotals([item(5n)], 'HT', 1_000n), { subtotalHt: 5n, tax: 1n, gross: 6n });
  // 0.01 HT at 50 %: 0.015 → 0.02.
  assert.deepEqual(checkoutTotals([item(1n)], 'HT', 5_000n), { subtotalHt: 1n, tax: 1n, gross: 2n });
});

test('tax is computed once on the total, not per line', () => {
  // Per line, 0.05 HT at 10 % would be 0.06 twice = 0.12; on the total 0.10 → 0.11.
  assert.deepEqual(checkoutTotals([item(5n), item(5n)], 'HT', 1_000n), {
    subtotalHt: 10n,
    tax: 1n,
    gross: 11n,
  });
  // TTC: per line 0.03 at 100 % would give 0.02 HT twice = 0.04; on the total 0.06 → 0.03.
  assert.deepEqual(checkoutTotals([item(3n), item(3n)], 'TTC', 10_000n), {
    subtotalHt: 3n,
    tax: 3n,
    gross: 6n,
  });
});

test('a line is its unit price times its quantity; no tax leaves HT and gross equal', () => {
  assert.deepEqual(checkoutTotals([item(250n, 3), item(1n, 7)], 'HT', 0n), {
    subtotalHt: 757n,
    tax: 0n,
    gross: 757n,
  });
  assert.deepEqual(checkoutTotals([item(250n, 3)], 'TTC', 0n), { subtotalHt: 750n, tax: 0n, gross: 750n });
  assert.equal(lineAmount(item(1999n, 4)), 7996n);
});
