import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { DEFAULT_RETRY_SCHEDULE_MS } from '../../config.ts';
import { parseRetryAfter, RETRY_AFTER_CAP_MS, retryDelay } from './schedule.ts';

test('the default schedule gives 8 attempts in all, each retry within ±10 % of its step', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 7 }),
      fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
      (made, r) => {
        const delay = retryDelay(DEFAULT_RETRY_SCHEDULE_MS, made, null, () => r);
        const base = DEFAULT_RETRY_SCHEDULE_MS[made - 1];
        assert.ok(delay !== null && delay >= base * 0.9 - 1 && delay <= base * 1.1 + 1);
      },
    ),
  );
  assert.equal(retryDelay(DEFAULT_RETRY_SCHEDULE_MS, 8, null), null);
});

test('Retry-After is honoured up to the cap and never shortens the schedule', () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 10 * RETRY_AFTER_CAP_MS }), (asked) => {
      const delay = retryDelay([1000], 1, asked, () => 0.5);
      assert.equal(delay, Math.max(1000, Math.min(asked, RETRY_AFTER_CAP_MS)));
    }),
  );
});

test('Retry-After is read as seconds or as an HTTP date', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  assert.equal(parseRetryAfter('120', now), 120_000);
  assert.equal(parseRetryAfter('Thu, 01 Jan 2026 00:01:00 GMT', now), 60_000);
  assert.equal(parseRetryAfter('soon', now), null);
  assert.equal(parseRetryAfter(null, now), null);
});
