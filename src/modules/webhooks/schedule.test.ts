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

// The numbers below are the contract's (decisions.md "Webhooks": retries after 5 s, 5 min, 30 min,
// 2 h, 5 h, 10 h, 10 h, 8 attempts in all, ±10 % jitter; docs/webhooks.md: Retry-After honoured up to
// 1 hour), written out here rather than read from the constants under test.
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

test('the default retry schedule is exactly the decided one', () => {
  assert.deepEqual(DEFAULT_RETRY_SCHEDULE_MS, [
    5 * SECOND,
    5 * MINUTE,
    30 * MINUTE,
    2 * HOUR,
    5 * HOUR,
    10 * HOUR,
    10 * HOUR,
  ]);
});

test('jitter spans exactly ±10 %: the lowest draw is 90 %, the middle 100 %, the highest 110 %', () => {
  const schedule = [10 * SECOND];
  assert.equal(
    retryDelay(schedule, 1, null, () => 0),
    9 * SECOND,
  );
  assert.equal(
    retryDelay(schedule, 1, null, () => 0.5),
    10 * SECOND,
  );
  assert.equal(
    retryDelay(schedule, 1, null, () => 0.999_999_9),
    11 * SECOND,
  );
  assert.equal(
    retryDelay(schedule, 1, null, () => 0.25),
    9_500,
  );
  // Rounded to whole milliseconds.
  assert.equal(
    retryDelay([1001], 1, null, () => 0.5),
    1001,
  );
  assert.equal(
    retryDelay([5], 1, null, () => 0.5),
    5,
  );
});

test('each retry uses its own step of the schedule, and the attempt after the last has none', () => {
  const schedule = [1 * SECOND, 2 * SECOND, 3 * SECOND];
  assert.equal(
    retryDelay(schedule, 0, null, () => 0.5),
    null,
  );
  assert.equal(
    retryDelay(schedule, 1, null, () => 0.5),
    1 * SECOND,
  );
  assert.equal(
    retryDelay(schedule, 2, null, () => 0.5),
    2 * SECOND,
  );
  assert.equal(
    retryDelay(schedule, 3, null, () => 0.5),
    3 * SECOND,
  );
  assert.equal(
    retryDelay(schedule, 4, null, () => 0.5),
    null,
  );
  assert.equal(
    retryDelay(DEFAULT_RETRY_SCHEDULE_MS, 7, null, () => 0.5),
    10 * HOUR,
  );
  assert.equal(
    retryDelay(DEFAULT_RETRY_SCHEDULE_MS, 8, null, () => 0.5),
    null,
  );
});

test('Retry-After is honoured up to one hour: longer asks wait one hour, shorter ones never shorten', () => {
  assert.equal(RETRY_AFTER_CAP_MS, 1 * HOUR);
  assert.equal(
    retryDelay([5 * SECOND], 1, 3 * HOUR, () => 0.5),
    1 * HOUR,
  );
  assert.equal(
    retryDelay([5 * SECOND], 1, 1 * HOUR, () => 0.5),
    1 * HOUR,
  );
  assert.equal(
    retryDelay([5 * SECOND], 1, 30 * MINUTE, () => 0.5),
    30 * MINUTE,
  );
  assert.equal(
    retryDelay([5 * SECOND], 1, 1 * SECOND, () => 0.5),
    5 * SECOND,
  );
  assert.equal(
    retryDelay([5 * SECOND], 1, 0, () => 0.5),
    5 * SECOND,
  );
  // A schedule step longer than the cap is kept: the cap limits what a receiver may ask, not the schedule.
  assert.equal(
    retryDelay([10 * HOUR], 1, 3 * HOUR, () => 0.5),
    10 * HOUR,
  );
  assert.equal(
    retryDelay([5 * SECOND], 8, 30 * MINUTE, () => 0.5),
    null,
  );
});

test('Retry-After: seconds with spaces, a date in the past is now, anything else is ignored', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  assert.equal(parseRetryAfter(' 30 ', now), 30 * SECOND);
  assert.equal(parseRetryAfter('0', now), 0);
  assert.equal(parseRetryAfter('Wed, 31 Dec 2025 23:59:00 GMT', now), 0);
  assert.equal(parseRetryAfter('', now), null);
  assert.equal(parseRetryAfter(undefined, now), null);
  assert.equal(parseRetryAfter('5 seconds', now), null);
  assert.equal(parseRetryAfter('tomorrow', now), null);
  assert.equal(parseRetryAfter('in 30', now), null);
});
