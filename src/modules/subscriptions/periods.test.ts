import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  billingAnchor,
  type Interval,
  periodBounds,
  periodIndexAt,
  type Recurrence,
  renewalDue,
} from './periods.ts';

// Expectations come from decisions.md "Subscriptions" (Periods: UTC, anchor + k × interval, the day
// clamped to the month's last day, never chained; a worker down more than a period charges once, the
// skipped periods void), written out as literal dates rather than computed by the code under test.

const monthly: Recurrence = { interval: 'month', intervalCount: 1 };
const yearly: Recurrence = { interval: 'year', intervalCount: 1 };
const iso = (d: Date) => d.toISOString();
const starts = (anchor: string, recurrence: Recurrence, count: number) =>
  Array.from({ length: count }, (_, k) => iso(periodBounds(new Date(anchor), recurrence, k).start));

test('an anchor on January 31 bills on each month’s last day and comes back to the 31st', () => {
  assert.deepEqual(starts('2027-01-31T09:15:00.000Z', monthly, 14), [
    '2027-01-31T09:15:00.000Z',
    '2027-02-28T09:15:00.000Z',
    '2027-03-31T09:15:00.000Z',
    '2027-04-30T09:15:00.000Z',
    '2027-05-31T09:15:00.000Z',
    '2027-06-30T09:15:00.000Z',
    '2027-07-31T09:15:00.000Z',
    '2027-08-31T09:15:00.000Z',
    '2027-09-30T09:15:00.000Z',
    '2027-10-31T09:15:00.000Z',
    '2027-11-30T09:15:00.000Z',
    '2027-12-31T09:15:00.000Z',
    '2028-01-31T09:15:00.000Z',
    '2028-02-29T09:15:00.000Z',
  ]);
});

test('end-of-month anchors over leap and non-leap years: 29th, 30th and 31st in February', () => {
  assert.equal(
    iso(periodBounds(new Date('2027-12-29T00:00:00Z'), monthly, 2).start),
    '2028-02-29T00:00:00.000Z',
  );
  assert.equal(
    iso(periodBounds(new Date('2026-12-29T00:00:00Z'), monthly, 2).start),
    '2027-02-28T00:00:00.000Z',
  );
  assert.equal(
    iso(periodBounds(new Date('2026-12-29T00:00:00Z'), monthly, 3).start),
    '2027-03-29T00:00:00.000Z',
  );
  assert.equal(
    iso(periodBounds(new Date('2028-01-30T00:00:00Z'), monthly, 1).start),
    '2028-02-29T00:00:00.000Z',
  );
  assert.equal(
    iso(periodBounds(new Date('2028-01-30T00:00:00Z'), monthly, 2).start),
    '2028-03-30T00:00:00.000Z',
  );
  // Four years on, still the 31st: nothing drifts (Kill Bill #127/#2133 anchors that stop billing).
  assert.equal(
    iso(periodBounds(new Date('2026-03-31T23:59:59.999Z'), monthly, 48).start),
    '2030-03-31T23:59:59.999Z',
  );
  assert.equal(
    iso(periodBounds(new Date('2026-03-31T23:59:59.999Z'), monthly, 47).start),
    '2030-02-28T23:59:59.999Z',
  );
  assert.equal(
    iso(periodBounds(new Date('2026-03-31T23:59:59.999Z'), monthly, 23).start),
    '2028-02-29T23:59:59.999Z',
  );
});

test('a yearly anchor on February 29 bills on February 28 in common years and 29 in leap years', () => {
  assert.deepEqual(starts('2028-02-29T12:00:00.000Z', yearly, 6), [
    '2028-02-29T12:00:00.000Z',
    '2029-02-28T12:00:00.000Z',
    '2030-02-28T12:00:00.000Z',
    '2031-02-28T12:00:00.000Z',
    '2032-02-29T12:00:00.000Z',
    '2033-02-28T12:00:00.000Z',
  ]);
  assert.deepEqual(starts('2026-11-30T00:00:00.000Z', { interval: 'year', intervalCount: 2 }, 3), [
    '2026-11-30T00:00:00.000Z',
    '2028-11-30T00:00:00.000Z',
    '2030-11-30T00:00:00.000Z',
  ]);
});

test('interval_count multiplies the interval: every 3 months from August 31, every 2 weeks, every 10 days', () => {
  assert.deepEqual(starts('2027-08-31T06:00:00.000Z', { interval: 'month', intervalCount: 3 }, 5), [
    '2027-08-31T06:00:00.000Z',
    '2027-11-30T06:00:00.000Z',
    '2028-02-29T06:00:00.000Z',
    '2028-05-31T06:00:00.000Z',
    '2028-08-31T06:00:00.000Z',
  ]);
  assert.deepEqual(starts('2027-12-28T18:30:00.000Z', { interval: 'week', intervalCount: 2 }, 3), [
    '2027-12-28T18:30:00.000Z',
    '2028-01-11T18:30:00.000Z',
    '2028-01-25T18:30:00.000Z',
  ]);
  assert.deepEqual(starts('2028-02-25T00:00:00.000Z', { interval: 'day', intervalCount: 10 }, 3), [
    '2028-02-25T00:00:00.000Z',
    '2028-03-06T00:00:00.000Z',
    '2028-03-16T00:00:00.000Z',
  ]);
  assert.deepEqual(starts('2026-03-08T01:30:00.000Z', { interval: 'day', intervalCount: 1 }, 2), [
    '2026-03-08T01:30:00.000Z',
    '2026-03-09T01:30:00.000Z',
  ]);
  assert.deepEqual(starts('2026-01-15T00:00:00.000Z', { interval: 'month', intervalCount: 12 }, 2), [
    '2026-01-15T00:00:00.000Z',
    '2027-01-15T00:00:00.000Z',
  ]);
  assert.deepEqual(starts('2026-01-15T00:00:00.000Z', { interval: 'year', intervalCount: 12 }, 2), [
    '2026-01-15T00:00:00.000Z',
    '2038-01-15T00:00:00.000Z',
  ]);
});

test('a period ends where the next one starts, computed from the anchor', () => {
  const bounds = periodBounds(new Date('2027-01-31T00:00:00Z'), monthly, 1);
  assert.equal(iso(bounds.start), '2027-02-28T00:00:00.000Z');
  assert.equal(iso(bounds.end), '2027-03-31T00:00:00.000Z');
  const week = periodBounds(new Date('2027-01-01T00:00:00Z'), { interval: 'week', intervalCount: 1 }, 0);
  assert.equal(iso(week.end), '2027-01-08T00:00:00.000Z');
});

const intervals: Interval[] = ['day', 'week', 'month', 'year'];
const anchorArb = fc
  .record({
    year: fc.integer({ min: 2024, max: 2031 }),
    month: fc.integer({ min: 0, max: 11 }),
    day: fc.integer({ min: 1, max: 31 }),
    ms: fc.integer({ min: 0, max: 86_399_999 }),
  })
  .map(({ year, month, day, ms }) => {
    const last = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
    return new Date(Date.UTC(year, month, Math.min(day, last)) + ms);
  });
const recurrenceArb = fc.record({
  interval: fc.constantFrom(...intervals),
  intervalCount: fc.integer({ min: 1, max: 12 }),
});

test('property: monthly periods from any day 1–31 over 48 months are contiguous, land on the anchor day or the month’s last day, keep the time', () => {
  fc.assert(
    fc.property(anchorArb, (anchor) => {
      const day = anchor.getUTCDate();
      const time = anchor.getTime() % 86_400_000;
      for (let k = 0; k < 48; k += 1) {
        const { start, end } = periodBounds(anchor, monthly, k);
        assert.equal(end.getTime(), periodBounds(anchor, monthly, k + 1).start.getTime());
        assert.ok(end > start);
        const monthsFromAnchor =
          (start.getUTCFullYear() - anchor.getUTCFullYear()) * 12 +
          start.getUTCMonth() -
          anchor.getUTCMonth();
        assert.equal(monthsFromAnchor, k);
        const last = new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 0)).getUTCDate();
        assert.equal(start.getUTCDate(), Math.min(day, last));
        assert.equal(start.getTime() % 86_400_000, time);
      }
    }),
  );
});

test('property: the period containing now contains now, for every interval and count', () => {
  fc.assert(
    fc.property(
      anchorArb,
      recurrenceArb,
      fc.integer({ min: 0, max: 4 * 366 * 86_400_000 }),
      (anchor, rec, offset) => {
        const now = new Date(anchor.getTime() + offset);
        const k = periodIndexAt(anchor, rec, now);
        const { start, end } = periodBounds(anchor, rec, k);
        assert.ok(start <= now && now < end, `${iso(now)} in [${iso(start)}, ${iso(end)})`);
      },
    ),
  );
});

test('periodIndexAt: at a boundary the new period starts; a millisecond before, the old one; before the anchor -1', () => {
  const anchor = new Date('2027-01-31T10:00:00Z');
  assert.equal(periodIndexAt(anchor, monthly, new Date('2027-01-31T10:00:00Z')), 0);
  assert.equal(periodIndexAt(anchor, monthly, new Date('2027-02-28T09:59:59.999Z')), 0);
  assert.equal(periodIndexAt(anchor, monthly, new Date('2027-02-28T10:00:00Z')), 1);
  assert.equal(periodIndexAt(anchor, monthly, new Date('2027-03-31T09:59:59.999Z')), 1);
  assert.equal(periodIndexAt(anchor, monthly, new Date('2027-03-31T10:00:00Z')), 2);
  assert.equal(periodIndexAt(anchor, monthly, new Date('2027-01-31T09:59:59.999Z')), -1);
  assert.equal(periodIndexAt(anchor, monthly, new Date('2026-12-31T10:00:00Z')), -1);
  assert.equal(periodIndexAt(anchor, monthly, new Date('2026-06-01T00:00:00Z')), -1);
  assert.equal(
    periodIndexAt(anchor, { interval: 'day', intervalCount: 1 }, new Date('2026-06-01T00:00:00Z')),
    -1,
  );
  assert.equal(periodIndexAt(anchor, yearly, new Date('2029-01-31T09:59:59.999Z')), 1);
  assert.equal(periodIndexAt(anchor, yearly, new Date('2029-01-31T10:00:00Z')), 2);
  const days = { interval: 'day', intervalCount: 3 } as const;
  assert.equal(periodIndexAt(anchor, days, new Date('2027-02-03T09:59:59.999Z')), 0);
  assert.equal(periodIndexAt(anchor, days, new Date('2027-02-03T10:00:00Z')), 1);
  const weeks = { interval: 'week', intervalCount: 1 } as const;
  assert.equal(periodIndexAt(anchor, weeks, new Date('2027-02-07T09:59:59.999Z')), 0);
  assert.equal(periodIndexAt(anchor, weeks, new Date('2027-02-07T10:00:00Z')), 1);
  assert.equal(
    periodIndexAt(anchor, { interval: 'month', intervalCount: 2 }, new Date('2027-03-31T09:00:00Z')),
    0,
  );
  assert.equal(
    periodIndexAt(anchor, { interval: 'month', intervalCount: 2 }, new Date('2027-03-31T10:00:00Z')),
    1,
  );
});

test('a worker down for more than a whole period charges once, for the current period; the skipped are void', () => {
  const anchor = new Date('2027-01-31T00:00:00Z');
  // Period 1 was charged; the worker came back during period 4 (May 31 – June 30).
  assert.deepEqual(renewalDue(anchor, monthly, 1, new Date('2027-06-15T00:00:00Z')), {
    charge: 4,
    void: [2, 3],
  });
  // Just one period on: charge it, nothing void.
  assert.deepEqual(renewalDue(anchor, monthly, 1, new Date('2027-03-31T00:00:00Z')), { charge: 2, void: [] });
  // The current period already has its cycle: nothing to do.
  assert.equal(renewalDue(anchor, monthly, 2, new Date('2027-04-01T00:00:00Z')), null);
  assert.equal(renewalDue(anchor, monthly, 2, new Date('2027-03-31T00:00:00Z')), null);
  // No cycle yet (a trial): period 0 at the anchor; before it nothing is due.
  assert.deepEqual(renewalDue(anchor, monthly, -1, anchor), { charge: 0, void: [] });
  assert.equal(renewalDue(anchor, monthly, -1, new Date('2027-01-30T23:59:59.999Z')), null);
});

test('trial: the anchor is the end of the trial, trial_days whole days of 24 hours after the signup', () => {
  const signup = new Date('2027-02-20T15:45:00Z');
  assert.equal(iso(billingAnchor(signup, 0)), '2027-02-20T15:45:00.000Z');
  assert.equal(iso(billingAnchor(signup, 14)), '2027-03-06T15:45:00.000Z');
  assert.equal(iso(billingAnchor(signup, 90)), '2027-05-21T15:45:00.000Z');
  assert.throws(() => billingAnchor(signup, 91), RangeError);
  assert.throws(() => billingAnchor(signup, -1), RangeError);
  assert.throws(() => billingAnchor(signup, 1.5), RangeError);
});

test('interval_count outside 1–12, an unknown interval, a bad anchor or index are refused', () => {
  const anchor = new Date('2027-01-01T00:00:00Z');
  for (const count of [0, 13, 1.5, -1]) {
    assert.throws(() => periodBounds(anchor, { interval: 'month', intervalCount: count }, 0), RangeError);
    assert.throws(() => periodIndexAt(anchor, { interval: 'day', intervalCount: count }, anchor), RangeError);
  }
  assert.doesNotThrow(() => periodBounds(anchor, { interval: 'month', intervalCount: 1 }, 0));
  assert.doesNotThrow(() => periodBounds(anchor, { interval: 'month', intervalCount: 12 }, 0));
  assert.throws(
    () => periodBounds(anchor, { interval: 'hour' as Interval, intervalCount: 1 }, 0),
    RangeError,
  );
  assert.throws(() => periodBounds(new Date('nope'), monthly, 0), RangeError);
  assert.throws(() => periodIndexAt(new Date('nope'), monthly, anchor), RangeError);
  assert.throws(() => periodBounds(anchor, monthly, -1), RangeError);
  assert.throws(() => periodBounds(anchor, monthly, 0.5), RangeError);
  // The messages name what was wrong.
  assert.throws(
    () => periodBounds(anchor, { interval: 'month', intervalCount: 13 }, 0),
    /interval_count .*1 to 12, not 13/,
  );
  assert.throws(
    () => periodBounds(anchor, { interval: 'hour' as Interval, intervalCount: 1 }, 0),
    /unknown interval hour/,
  );
  assert.throws(() => periodBounds(new Date('nope'), monthly, 0), /anchor is not a valid date/);
  assert.throws(() => periodBounds(anchor, monthly, -1), /period index .*not -1/);
  assert.throws(() => billingAnchor(anchor, 91), /trial_days .*0 to 90, not 91/);
});

test('periods are the same in any process time zone (Lago #879/#1074): Los Angeles and Kiritimati', () => {
  const script = `
    const { periodBounds, periodIndexAt } = await import(${JSON.stringify(new URL('./periods.ts', import.meta.url).href)});
    const out = [];
    for (const anchor of ['2027-01-31T23:30:00Z', '2027-03-14T09:30:00Z', '2028-02-29T00:15:00Z', '2026-10-31T23:59:59Z']) {
      for (const interval of ['day', 'week', 'month', 'year']) {
        const rec = { interval, intervalCount: 1 };
        for (let k = 0; k < 14; k += 1) out.push(periodBounds(new Date(anchor), rec, k).start.toISOString());
        out.push(periodIndexAt(new Date(anchor), rec, new Date('2029-11-03T08:00:00Z')));
      }
    }
    console.log(JSON.stringify(out));`;
  const run = (tz: string) =>
    execFileSync(
      process.execPath,
      ['--disable-warning=ExperimentalWarning', '--input-type=module', '-e', script],
      {
        env: { ...process.env, TZ: tz },
        encoding: 'utf8',
      },
    );
  const utc = run('UTC');
  assert.equal(run('America/Los_Angeles'), utc);
  assert.equal(run('Pacific/Kiritimati'), utc);
  assert.equal(JSON.parse(utc)[1], '2027-02-01T23:30:00.000Z');
  assert.equal(JSON.parse(utc)[30 + 1], '2027-02-28T23:30:00.000Z');
});
