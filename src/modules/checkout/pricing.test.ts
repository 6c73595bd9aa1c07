import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkoutTotals } from './pricing.ts';

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
