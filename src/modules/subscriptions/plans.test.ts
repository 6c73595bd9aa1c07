import assert from 'node:assert/strict';
import { test } from 'node:test';
import { monthlyAmount } from './plans.ts';

test('a period amount as a monthly figure, half up to the minor unit', () => {
  assert.equal(monthlyAmount(1999n, 'month', 1), 1999n);
  assert.equal(monthlyAmount(3000n, 'month', 3), 1000n);
  assert.equal(monthlyAmount(1000n, 'month', 3), 333n);
  assert.equal(monthlyAmount(2000n, 'month', 3), 667n);
  assert.equal(monthlyAmount(12000n, 'year', 1), 1000n);
  assert.equal(monthlyAmount(12000n, 'year', 2), 500n);
  assert.equal(monthlyAmount(1n, 'year', 12), 0n);
  // 7.00 a week: 700 × 365 / 84 = 3041.67 → 3042; 1.00 a day: 100 × 365 / 12 = 3041.67 → 3042.
  assert.equal(monthlyAmount(700n, 'week', 1), 3042n);
  assert.equal(monthlyAmount(100n, 'day', 1), 3042n);
  assert.equal(monthlyAmount(2100n, 'week', 1), 9125n);
  assert.equal(monthlyAmount(100n, 'day', 12), 253n);
});
