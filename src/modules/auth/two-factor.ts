// Two-factor authentication: a TOTP secret (encrypted at rest with the service key) set up, then turned on
// with a first code; ten single-use recovery codes (only their SHA-256 stored: 50 random bits each);
// and the check of a second factor, where a TOTP step is accepted once per user (replay refused) and a
// recovery code is spent by the same UPDATE that finds it, so two parallel uses cannot both succeed.
// Every check of a second factor (login, identity confirmation, turning it off) counts its try in the
// database first (second-factor-tries.ts).
import { randomInt } from 'node:crypto';
import type { AppContext } from '../../context.ts';
import type { Executor } from '../../db/database.ts';
import { ValidationError } from '../../http/errors.ts';
import { decrypt, encrypt } from '../../lib/crypto.ts';
import { sha256Hex } from '../../lib/ids.ts';
import { type Client, recordAccountAudit } from '../audit/record.ts';
import { claimAccountTry, giveBackAccountTry } from './second-factor-tries.ts';
import * as store from './store.ts';
import type { UserRow } from './table.ts';
import { matchTotp, newTotpSecret, totpUri } from './totp.ts';

export const RECOVERY_CODE_COUNT = 10;
const RECOVERY_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';

export type SecondFactorMethod = 'totp' | 'recovery_code';

function newRecoveryCode(): string {
  let code = '';
  for (let i = 0; i < 10; i++) code += RECOVERY_ALPHABET[randomInt(RECOVERY_ALPHABET.length)];
  return `${code.slice(0, 5)}-${code.slice(5)}`;
}

function recoveryHash(code: string): string {
  return sha256Hex(code.toLowerCase().replace(/[\s-]/g, ''));
}

async function replaceRecoveryCodes(trx: Executor, userId: number, now: string): Promise<string[]> {
  await trx.deleteFrom('recovery_codes').where('user_id', '=', userId).execute();
  const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
  await trx
    .insertInto('recovery_codes')
    .values(codes.map((code) => ({ user_id: userId, code_hash: recoveryHash(code), created_at: now })))
    .execute();
  return codes;
}

function secretOf(ctx: AppContext, user: UserRow): string | null {
  return user.totp_secret ? decrypt(user.totp_secret, ctx.config.secretKey) : null;
}

/** Accepts the code's step once: the UPDATE only moves totp_last_step forward. */
async function spendTotpStep(trx: Executor, userId: number, step: number): Promise<boolean> {
  const result = await trx
    .updateTable('users')
    .set({ totp_last_step: step })
    .where('id', '=', userId)
    .where((eb) => eb.or([eb('totp_last_step', 'is', null), eb('totp_last_step', '<', step)]))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

async function spendTotpCode(trx: Executor, ctx: AppContext, user: UserRow, code: string): Promise<boolean> {
  const secret = secretOf(ctx, user);
  if (!secret) return false;
  const step = matchTotp(secret, code, ctx.clock());
  return step !== null && spendTotpStep(trx, user.id, step);
}

/**
 * Checks a second factor of a user who has two-factor on: a six-digit TOTP code, or a recovery code
 * (spent, with an audit entry). Returns how it was proved, or null.
 */
async function spendSecondFactor(
  trx: Executor,
  ctx: AppContext,
  user: UserRow,
  code: string,
  client: Client,
): Promise<SecondFactorMethod | null> {
  const trimmed = code.trim();
  if (/^\d{6}$/.test(trimmed)) return (await spendTotpCode(trx, ctx, user, trimmed)) ? 'totp' : null;
  const now = ctx.clock().toISOString();
  const spent = await trx
    .updateTable('recovery_codes')
    .set({ used_at: now })
    .where('user_id', '=', user.id)
    .where('code_hash', '=', recoveryHash(trimmed))
    .where('used_at', 'is', null)
    .executeTakeFirst();
  if (Number(spent.numUpdatedRows) !== 1) return null;
  const left = await trx
    .selectFrom('recovery_codes')
    .select((eb) => eb.fn.countAll<number | string>().as('count'))
    .where('user_id', '=', user.id)
    .where('used_at', 'is', null)
    .executeTakeFirstOrThrow();
  await recordAccountAudit(trx, user, client, 'two_factor.recovery_code_used', now, {
    remaining: Number(left.count),
  });
  return 'recovery_code';
}

class WrongCode extends Error {}

/**
 * A second factor, counted: the try is counted against the account (and by `claim`, against anything
 * else that limits it, in the same transaction) and committed before the code is checked; over the
 * limit is a 429. A right code runs `accepted` in the transaction that spends it and gives the try
 * back; a wrong one changes nothing else and returns null.
 */
export async function checkSecondFactor<T>(
  ctx: AppContext,
  user: UserRow,
  code: string,
  client: Client,
  steps: {
    claim?: (trx: Executor) => Promise<void>;
    accepted: (trx: Executor, method: SecondFactorMethod) => Promise<T>;
  },
): Promise<T | null> {
  // The account's row first in both transactions, then the challenge's: one lock order, no deadlock.
  await ctx.db.transaction().execute(async (trx) => {
    await claimAccountTry(trx, ctx, user.id);
    await steps.claim?.(trx);
  });
  try {
    return await ctx.db.transaction().execute(async (trx) => {
      await giveBackAccountTry(trx, user.id);
      const method = await spendSecondFactor(trx, ctx, user, code, client);
      if (!method) throw new WrongCode();
      return steps.accepted(trx, method);
    });
  } catch (error) {
    if (error instanceof WrongCode) return null;
    throw error;
  }
}

async function currentUser(ctx: AppContext, userId: number): Promise<UserRow> {
  const user = await store.findUserById(ctx.db, userId);
  if (!user) throw new ValidationError('This account no longer exists.');
  return user;
}

/** POST /auth/2fa/setup/: a new secret (replacing one not yet turned on), audited like every change. */
export async function setupTwoFactor(ctx: AppContext, userId: number, issuer: string, client: Client) {
  const user = await currentUser(ctx, userId);
  if (user.totp_enabled_at !== null) {
    throw new ValidationError('Two-factor is already on. Turn it off first to set up a new authenticator.');
  }
  const secret = newTotpSecret();
  const now = ctx.clock().toISOString();
  await ctx.db.transaction().execute(async (trx) => {
    // Only while two-factor is off: a setup racing an enable must not replace the secret just turned on.
    const replaced = await trx
      .updateTable('users')
      .set({ totp_secret: encrypt(secret, ctx.config.secretKey), totp_last_step: null })
      .where('id', '=', user.id)
      .where('totp_enabled_at', 'is', null)
      .executeTakeFirst();
    if (Number(replaced.numUpdatedRows) !== 1)
      throw new ValidationError('Two-factor is already on. Turn it off first to set up a new authenticator.');
    await recordAccountAudit(trx, user, client, 'two_factor.setup_started', now);
  });
  return { secret, otpauth_url: totpUri(secret, user.email, issuer) };
}

/** POST /auth/2fa/enable/: the first code proves the authenticator holds the secret. */
export async function enableTwoFactor(ctx: AppContext, userId: number, code: string, client: Client) {
  const user = await currentUser(ctx, userId);
  if (user.totp_enabled_at !== null) throw new ValidationError('Two-factor is already on.');
  if (!user.totp_secret) throw new ValidationError('Set up two-factor first (POST /api/auth/2fa/setup/).');
  const now = ctx.clock().toISOString();
  const codes = await ctx.db.transaction().execute(async (trx) => {
    if (!(await spendTotpCode(trx, ctx, user, code.trim()))) return null;
    await trx.updateTable('users').set({ totp_enabled_at: now }).where('id', '=', user.id).execute();
    const issued = await replaceRecoveryCodes(trx, user.id, now);
    await recordAccountAudit(trx, user, client, 'two_factor.enabled', now);
    return issued;
  });
  if (!codes)
    throw new ValidationError('code: is not valid. Enter the current code from your authenticator.');
  return { recovery_codes: codes };
}

/** POST /auth/2fa/disable/: needs a current code (or a recovery code); refused when the organization requires it. */
export async function disableTwoFactor(ctx: AppContext, userId: number, code: string, client: Client) {
  const user = await currentUser(ctx, userId);
  if (user.totp_enabled_at === null) throw new ValidationError('Two-factor is not on.');
  const organization = await store.findOrganization(ctx.db, user.organization_id);
  if (organization.require_two_factor === 1) {
    throw new ValidationError(
      'Your organization requires two-factor for every member; it cannot be turned off.',
    );
  }
  const now = ctx.clock().toISOString();
  const done = await checkSecondFactor(ctx, user, code, client, {
    accepted: async (trx) => {
      await trx
        .updateTable('users')
        .set({ totp_enabled_at: null, totp_secret: null, totp_last_step: null })
        .where('id', '=', user.id)
        .execute();
      await trx.deleteFrom('recovery_codes').where('user_id', '=', user.id).execute();
      await recordAccountAudit(trx, user, client, 'two_factor.disabled', now);
      return true;
    },
  });
  if (!done) throw new ValidationError('code: is not valid.');
}

/** POST /auth/2fa/recovery-codes/: ten new codes; the old ones stop working. */
export async function regenerateRecoveryCodes(ctx: AppContext, userId: number, client: Client) {
  const user = await currentUser(ctx, userId);
  if (user.totp_enabled_at === null) throw new ValidationError('Two-factor is not on.');
  const now = ctx.clock().toISOString();
  const codes = await ctx.db.transaction().execute(async (trx) => {
    const issued = await replaceRecoveryCodes(trx, user.id, now);
    await recordAccountAudit(trx, user, client, 'two_factor.recovery_codes_regenerated', now);
    return issued;
  });
  return { recovery_codes: codes };
}
