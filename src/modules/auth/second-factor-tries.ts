// Second-factor codes are counted in the database, not in a process's memory, so the count holds across
// every API process sharing it: a login challenge takes CHALLENGE_TRIES codes (then the password is
// needed again), and an account takes the login limit's number of wrong codes per window (10 per 15
// minutes by default) from any address. Only someone who has the password (or a session) reaches a code,
// so the account-wide count cannot be used by strangers to lock a user out. Each try is counted by a
// conditional UPDATE before its code is checked, so parallel guesses cannot all pass before one is
// counted; the transaction that accepts a code gives its try back, so what stays counted are wrong codes.
import type { AppContext } from '../../context.ts';
import type { Executor } from '../../db/database.ts';
import { RateLimitedError } from '../../http/errors.ts';
import { rateLimitHeaders } from '../../http/rate-limit.ts';

export const CHALLENGE_TRIES = 5;
export const TOO_MANY_FAILURES = 'Too many failed login attempts. Try again later.';

/** Counts a try against the account's window, or answers 429 when it is used up. */
export async function claimAccountTry(db: Executor, ctx: AppContext, userId: number): Promise<void> {
  const { loginFailures: limit, loginWindowMs: windowMs } = ctx.config.rateLimits;
  const now = ctx.clock();
  const windowOver = new Date(now.getTime() - windowMs).toISOString();
  const counted = await db
    .updateTable('users')
    .set((eb) => {
      const fresh = eb.or([
        eb('two_factor_failures_since', 'is', null),
        eb('two_factor_failures_since', '<=', windowOver),
      ]);
      return {
        two_factor_failures: eb
          .case()
          .when(fresh)
          .then(1)
          .else(eb('two_factor_failures', '+', 1))
          .end(),
        two_factor_failures_since: eb
          .case()
          .when(fresh)
          .then(now.toISOString())
          .else(eb.ref('two_factor_failures_since'))
          .end(),
      };
    })
    .where('id', '=', userId)
    .where((eb) =>
      eb.or([
        eb('two_factor_failures_since', 'is', null),
        eb('two_factor_failures_since', '<=', windowOver),
        eb('two_factor_failures', '<', limit),
      ]),
    )
    .executeTakeFirst();
  if (Number(counted.numUpdatedRows) === 1) return;
  const row = await db
    .selectFrom('users')
    .select('two_factor_failures_since')
    .where('id', '=', userId)
    .executeTakeFirst();
  const since = row?.two_factor_failures_since ? Date.parse(row.two_factor_failures_since) : now.getTime();
  const resetMs = Math.max(1000, since + windowMs - now.getTime());
  throw new RateLimitedError(
    TOO_MANY_FAILURES,
    Math.ceil(resetMs / 1000),
    rateLimitHeaders({ allowed: false, limit, remaining: 0, resetMs }),
  );
}

/** Gives back the try of a code that was accepted (in the transaction that accepts it). */
export async function giveBackAccountTry(trx: Executor, userId: number): Promise<void> {
  await trx
    .updateTable('users')
    .set((eb) => ({ two_factor_failures: eb('two_factor_failures', '-', 1) }))
    .where('id', '=', userId)
    .where('two_factor_failures', '>', 0)
    .execute();
}

/**
 * Counts a try against a live login challenge of the user; null when the challenge is unknown, used,
 * expired or has had its CHALLENGE_TRIES. Returns the tries it has had, this one included.
 */
export async function claimChallengeTry(
  db: Executor,
  userId: number,
  challengeHash: string,
  now: string,
): Promise<number | null> {
  const row = await db
    .updateTable('login_challenges')
    .set((eb) => ({ attempts: eb('attempts', '+', 1) }))
    .where('token_hash', '=', challengeHash)
    .where('user_id', '=', userId)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .where('attempts', '<', CHALLENGE_TRIES)
    .returning('attempts')
    .executeTakeFirst();
  return row ? Number(row.attempts) : null;
}
