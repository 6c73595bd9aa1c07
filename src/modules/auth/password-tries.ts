// Failed password checks (login, identity confirmation with the password, password change) are counted in
// the database (migration 021), so the limits hold across every API process sharing it and a restart
// forgets nothing. Three counts, each a fixed window of KASSA_RATE_LIMIT_LOGIN_WINDOW_MS (15 minutes):
// - an account from one address: KASSA_RATE_LIMIT_LOGIN_FAILURES (10), the decisions' rule;
// - an account from any address: _PER_ACCOUNT (100), against guessing spread over many addresses;
// - an address for any account: _PER_ADDRESS (100), against one address trying many accounts.
// The account is the email as typed (normalized), whether or not it is a member's: an unknown email is
// counted and answered exactly like a known one. The two wide counts never refuse an account from an
// address it has a session on record from (a live one, or one that ended less than a day ago: the
// retention loop keeps them that long), matched by the network every count uses (an IPv6 address by its
// /64, so a privacy address rotating within it keeps it), so a stranger who fills them cannot lock a
// member out of the places they log in from; there only the first count applies. A try is counted by conditional upserts
// committed before the password is hashed, so parallel guesses through any number of processes cannot
// all pass before one is counted. A right password gives its try back to the two wide counts and
// clears the account's count from its address (not the account's count from elsewhere, nor the
// address's for other accounts); a try the hash queue refused unchecked is given back to all three.
// Second-factor codes have their own counts (second-factor-tries.ts).
import { createHmac } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import type { AppContext } from '../../context.ts';
import type { Executor } from '../../db/database.ts';
import { clientNetwork } from '../../http/client-network.ts';
import { RateLimitedError } from '../../http/errors.ts';
import { type LimitState, rateLimitHeaders } from '../../http/rate-limit.ts';
import { keyObject } from '../../lib/crypto.ts';
import { inPasswordCheckLine, PasswordCheckBusyError } from './passwords.ts';
import { TOO_MANY_FAILURES } from './second-factor-tries.ts';
import { normalizeEmail } from './store.ts';
import type { LoginFailuresTable } from './table.ts';

type Scope = LoginFailuresTable['scope'];

interface CountedKey {
  keyHash: string;
  windowStartedAt: string;
}

interface Claim {
  account: CountedKey;
  /** The wide counts this try was counted in (not those it was exempt from). */
  wide: CountedKey[];
  state: LimitState;
}

/** The row's key: an HMAC, so the table holds no email (an unknown one may be a mistyped password). */
function keyHash(ctx: AppContext, scope: Scope, email: string, address: string): string {
  const network = clientNetwork(address);
  const subject = scope === 'account' ? email : scope === 'address' ? network : `${email}\n${network}`;
  return createHmac('sha256', keyObject(ctx.config.secretKey))
    .update(`login-failures\n${scope}\n${subject}`)
    .digest('hex');
}

/** Counts one failure in the key's window (a new window when the last one ended); undefined: at the limit. */
function countFailure(trx: Executor, scope: Scope, hash: string, limit: number, now: Date, windowMs: number) {
  const windowOver = new Date(now.getTime() - windowMs).toISOString();
  return trx
    .insertInto('login_failures')
    .values({ key_hash: hash, scope, failures: 1, window_started_at: now.toISOString() })
    .onConflict((oc) =>
      oc
        .column('key_hash')
        .doUpdateSet((eb) => {
          const ended = eb('login_failures.window_started_at', '<=', windowOver);
          return {
            failures: eb
              .case()
              .when(ended)
              .then(1)
              .else(eb('login_failures.failures', '+', 1))
              .end(),
            window_started_at: eb
              .case()
              .when(ended)
              .then(now.toISOString())
              .else(eb.ref('login_failures.window_started_at'))
              .end(),
          };
        })
        .where((eb) =>
          eb.or([
            eb('login_failures.window_started_at', '<=', windowOver),
            eb('login_failures.failures', '<', limit),
          ]),
        ),
    )
    .returning(['failures', 'window_started_at'])
    .executeTakeFirst();
}

/**
 * Whether the account has a session on record from this address's network (the member logged in from
 * there): the network every per-address count uses (clientNetwork: an IPv6 address by its /64, an
 * IPv4-mapped one as its IPv4 address), so a client whose IPv6 address rotates within its /64 keeps it.
 * The sessions keep the full address; their few distinct addresses (live ones, and those ended less than
 * a day ago) are compared by network.
 */
async function loggedInFrom(trx: Executor, email: string, address: string): Promise<boolean> {
  const network = clientNetwork(address);
  const rows = await trx
    .selectFrom('sessions')
    .innerJoin('users', 'users.id', 'sessions.user_id')
    .select('sessions.ip')
    .distinct()
    .where('users.email', '=', email)
    .where('users.removed_at', 'is', null)
    .where('sessions.ip', 'is not', null)
    .execute();
  return rows.some((row) => row.ip !== null && clientNetwork(row.ip) === network);
}

async function refusal(trx: Executor, hash: string, limit: number, now: Date, windowMs: number) {
  const row = await trx
    .selectFrom('login_failures')
    .select('window_started_at')
    .where('key_hash', '=', hash)
    .executeTakeFirst();
  const started = row ? Date.parse(row.window_started_at) : now.getTime();
  const resetMs = Math.max(1000, started + windowMs - now.getTime());
  return new RateLimitedError(
    TOO_MANY_FAILURES,
    Math.ceil(resetMs / 1000),
    rateLimitHeaders({ allowed: false, limit, remaining: 0, resetMs }),
  );
}

/** Counts a try in the three counts, in one transaction, or answers 429 (counting nothing). */
async function claimTry(ctx: AppContext, email: string, address: string): Promise<Claim> {
  const limits = ctx.config.rateLimits;
  const windowMs = limits.loginWindowMs;
  const now = ctx.clock();
  const counts: { scope: Scope; limit: number }[] = [
    { scope: 'account_address', limit: limits.loginFailures },
    { scope: 'account', limit: limits.loginFailuresPerAccount },
    { scope: 'address', limit: limits.loginFailuresPerAddress },
  ];
  // One order of rows in every transaction (account from address, account, address): no deadlock.
  return ctx.db.transaction().execute(async (trx) => {
    const counted: CountedKey[] = [];
    let state: LimitState | null = null;
    let exempt: boolean | null = null;
    for (const { scope, limit } of counts) {
      const hash = keyHash(ctx, scope, email, address);
      const row = await countFailure(trx, scope, hash, limit, now, windowMs);
      if (!row) {
        if (scope !== 'account_address') {
          exempt ??= await loggedInFrom(trx, email, address);
          if (exempt) continue;
        }
        throw await refusal(trx, hash, limit, now, windowMs);
      }
      counted.push({ keyHash: hash, windowStartedAt: row.window_started_at });
      const remaining = limit - Number(row.failures);
      if (state === null || remaining < state.remaining) {
        const resetMs = Date.parse(row.window_started_at) + windowMs - now.getTime();
        state = { allowed: true, limit, remaining, resetMs };
      }
    }
    const [account, ...wide] = counted;
    if (!account || !state) throw new Error('the account-from-address count is always counted');
    return { account, wide, state };
  });
}

/** Takes back a counted try from its window (if that window is still the current one). */
async function giveBack(db: Executor, keys: CountedKey[]): Promise<void> {
  for (const key of keys) {
    await db
      .updateTable('login_failures')
      .set((eb) => ({ failures: eb('failures', '-', 1) }))
      .where('key_hash', '=', key.keyHash)
      .where('window_started_at', '=', key.windowStartedAt)
      .where('failures', '>', 0)
      .execute();
  }
}

/**
 * Counts a password try for (email, address) or answers 429; then runs the check, which returns a
 * truthy value when the password was right. A wrong password keeps its count; a right one clears the
 * account's count from this address and gives its try back to the wide counts; a try the hash queue
 * refused unchecked is given back to all. The address's checks in progress are bounded before any of
 * this (passwords.ts): past the bound the answer is at once, and nothing is counted.
 */
export async function countedPasswordCheck<T>(
  ctx: AppContext,
  reply: FastifyReply,
  email: string,
  address: string,
  check: () => Promise<T>,
): Promise<T> {
  return inPasswordCheckLine(address, async () => {
    const claim = await claimTry(ctx, normalizeEmail(email), address);
    for (const [name, value] of Object.entries(rateLimitHeaders(claim.state))) reply.header(name, value);
    let result: T;
    try {
      result = await check();
    } catch (error) {
      if (error instanceof PasswordCheckBusyError) await giveBack(ctx.db, [claim.account, ...claim.wide]);
      throw error;
    }
    if (result) {
      await ctx.db.deleteFrom('login_failures').where('key_hash', '=', claim.account.keyHash).execute();
      await giveBack(ctx.db, claim.wide);
    }
    return result;
  });
}
