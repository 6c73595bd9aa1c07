// When the next attempt of a failed delivery is due: the configured schedule with ±10 % jitter, never
// sooner than the receiver's Retry-After (honoured up to one hour).

export const RETRY_AFTER_CAP_MS = 60 * 60 * 1000;
const JITTER = 0.1;

/** Milliseconds asked for by a Retry-After header (seconds or an HTTP date), or null. */
export function parseRetryAfter(header: string | null | undefined, now: number): number | null {
  if (!header) return null;
  const value = header.trim();
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  if (Number.isNaN(date)) return null;
  return Math.max(0, date - now);
}

/**
 * The delay before attempt `attemptsMade + 1`, or null when the schedule is exhausted
 * (`attemptsMade` counts the attempt that just failed; the schedule lists one delay per retry).
 */
export function retryDelay(
  schedule: readonly number[],
  attemptsMade: number,
  retryAfterMs: number | null,
  random: () => number = Math.random,
): number | null {
  if (attemptsMade < 1 || attemptsMade > schedule.length) return null;
  const base = schedule[attemptsMade - 1];
  const jittered = Math.round(base * (1 - JITTER + 2 * JITTER * random()));
  if (retryAfterMs === null) return jittered;
  return Math.max(jittered, Math.min(retryAfterMs, RETRY_AFTER_CAP_MS));
}
