// The billing periods of a subscription (decisions.md "Subscriptions", Periods): period k is
// [anchor + k × interval, anchor + (k + 1) × interval) in UTC, always computed from the anchor and
// never chained from the previous end, so an anchor on the 31st clamps to each short month's last day
// and comes back to the 31st (the bug of anchors that stop billing), and the billing day never moves
// with a time zone (only UTC getters and Date.UTC are used here).
//
// Trial: the anchor is the end of the trial (signup + trial_days days; the signup itself without a
// trial). The trial is not a period: period 0 starts when the trial ends and is charged then. Billing
// is in advance, so period k is charged at its start, which is the end of period k - 1.

export type Interval = 'day' | 'week' | 'month' | 'year';

export interface Recurrence {
  interval: Interval;
  /** 1–12 intervals per period. */
  intervalCount: number;
}

export interface PeriodBounds {
  start: Date;
  end: Date;
}

const DAY_MS = 86_400_000;

function checkRecurrence({ interval, intervalCount }: Recurrence): void {
  if (!Number.isInteger(intervalCount) || intervalCount < 1 || intervalCount > 12) {
    throw new RangeError(`interval_count must be an integer from 1 to 12, not ${intervalCount}`);
  }
  if (!['day', 'week', 'month', 'year'].includes(interval)) {
    throw new RangeError(`unknown interval ${interval}`);
  }
}

/** Months per period for month and year intervals; null for the fixed-length day and week. */
function monthsPerPeriod({ interval, intervalCount }: Recurrence): number | null {
  if (interval === 'month') return intervalCount;
  if (interval === 'year') return 12 * intervalCount;
  return null;
}

function fixedLengthMs({ interval, intervalCount }: Recurrence): number {
  return (interval === 'week' ? 7 : 1) * intervalCount * DAY_MS;
}

/** The start of period k (k may be any integer), as epoch milliseconds. */
function startMs(anchor: Date, recurrence: Recurrence, k: number): number {
  const months = monthsPerPeriod(recurrence);
  if (months === null) return anchor.getTime() + k * fixedLengthMs(recurrence);
  const year = anchor.getUTCFullYear();
  const month = anchor.getUTCMonth() + k * months;
  // Date.UTC carries months beyond 11 (or below 0) into the year; day 0 of the next month is the last day.
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  const day = Math.min(anchor.getUTCDate(), lastDay);
  return Date.UTC(
    year,
    month,
    day,
    anchor.getUTCHours(),
    anchor.getUTCMinutes(),
    anchor.getUTCSeconds(),
    anchor.getUTCMilliseconds(),
  );
}

function checkAnchor(anchor: Date): void {
  if (Number.isNaN(anchor.getTime())) throw new RangeError('the anchor is not a valid date');
}

/** Period k: [start, end), both computed from the anchor. */
export function periodBounds(anchor: Date, recurrence: Recurrence, k: number): PeriodBounds {
  checkAnchor(anchor);
  checkRecurrence(recurrence);
  if (!Number.isInteger(k) || k < 0) throw new RangeError(`a period index is an integer from 0, not ${k}`);
  return {
    start: new Date(startMs(anchor, recurrence, k)),
    end: new Date(startMs(anchor, recurrence, k + 1)),
  };
}

/** The index of the period containing `now`, or -1 before the anchor (a trial not yet over). */
export function periodIndexAt(anchor: Date, recurrence: Recurrence, now: Date): number {
  checkAnchor(anchor);
  checkRecurrence(recurrence);
  const at = now.getTime();
  if (at < anchor.getTime()) return -1;
  const months = monthsPerPeriod(recurrence);
  if (months === null) return Math.floor((at - anchor.getTime()) / fixedLengthMs(recurrence));
  const elapsedMonths =
    (now.getUTCFullYear() - anchor.getUTCFullYear()) * 12 + (now.getUTCMonth() - anchor.getUTCMonth());
  // The calendar estimate is right or one too high (now earlier in its month than the anchor's day/time).
  let k = Math.floor(elapsedMonths / months);
  if (startMs(anchor, recurrence, k) > at) k -= 1;
  return k;
}

/** What a renewal run does: charge the current period once; periods skipped while down are void. */
export interface RenewalDue {
  charge: number;
  void: number[];
}

/**
 * The renewal due at `now` for a subscription whose last cycle is `lastIndex` (-1: none yet), or null
 * when the current period already has its cycle. A worker down for more than a whole period charges
 * once, for the current period, and records the skipped periods void.
 */
export function renewalDue(
  anchor: Date,
  recurrence: Recurrence,
  lastIndex: number,
  now: Date,
): RenewalDue | null {
  const current = periodIndexAt(anchor, recurrence, now);
  if (current <= lastIndex) return null;
  const skipped: number[] = [];
  for (let k = lastIndex + 1; k < current; k += 1) skipped.push(k);
  return { charge: current, void: skipped };
}

/** The anchor of a subscription signed up at `signupAt`: the end of the trial, or the signup itself. */
export function billingAnchor(signupAt: Date, trialDays: number): Date {
  if (!Number.isInteger(trialDays) || trialDays < 0 || trialDays > 90) {
    throw new RangeError(`trial_days must be an integer from 0 to 90, not ${trialDays}`);
  }
  return new Date(signupAt.getTime() + trialDays * DAY_MS);
}
