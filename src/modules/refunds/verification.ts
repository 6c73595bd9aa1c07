// The second factor of dashboard refunds: a 6-digit code mailed to the user. Stored only as an HMAC,
// valid 10 minutes, 5 tries (each counted before the comparison, so parallel guesses cannot exceed
// them), single use (consumed in the refund's own transaction, so a refused refund keeps it usable).
import { createHmac, randomInt, timingSafeEqual } from 'node:crypto';
import type { AppContext } from '../../context.ts';
import type { Executor } from '../../db/database.ts';
import { ValidationError } from '../../http/errors.ts';
import { keyObject } from '../../lib/crypto.ts';
import { type Actor, recordAudit } from '../audit/record.ts';
import type { SessionPrincipal } from '../auth/service.ts';

export const CODE_TTL_MS = 10 * 60 * 1000;
export const MAX_ATTEMPTS = 5;

function codeHash(secret: Buffer, userId: number, code: string): string {
  return createHmac('sha256', keyObject(secret)).update(`refund-code:${userId}:${code}`).digest('hex');
}

/** Issues a new code (superseding any earlier one), audited with it, and mails it to the user. */
export async function issueVerificationCode(
  ctx: Pick<AppContext, 'db' | 'clock' | 'config' | 'mailer'>,
  principal: SessionPrincipal,
  actor: Actor,
) {
  const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
  const now = ctx.clock();
  const expiresAt = new Date(now.getTime() + CODE_TTL_MS).toISOString();
  await ctx.db.transaction().execute(async (trx) => {
    await trx
      .updateTable('refund_verification_codes')
      .set({ used_at: now.toISOString() })
      .where('user_id', '=', principal.userId)
      .where('used_at', 'is', null)
      .execute();
    await trx
      .insertInto('refund_verification_codes')
      .values({
        organization_id: principal.organizationId,
        user_id: principal.userId,
        code_hash: codeHash(ctx.config.secretKey, principal.userId, code),
        attempts: 0,
        expires_at: expiresAt,
        used_at: null,
        created_at: now.toISOString(),
      })
      .execute();
    await recordAudit(
      trx,
      principal.organizationId,
      actor,
      {
        action: 'refund.verification_code_sent',
        target: { type: 'user', id: principal.userId },
        details: { expires_at: expiresAt },
      },
      now.toISOString(),
    );
  });
  await ctx.mailer.send({
    to: principal.user.email,
    subject: 'Your Kassa refund verification code',
    text: `Your refund verification code for ${principal.organization.name} is ${code}.\n\nIt expires in 10 minutes and can be used once. If you did not ask for it, someone may be using your dashboard session.\n`,
  });
  return {
    detail: `A verification code was sent to ${principal.user.email}.${ctx.mailer.deliveryNote}`,
    expires_at: expiresAt,
  };
}

const INVALID = 'verification_code: no valid code; request a new one.';

/** Checks a code, counting the try. Returns the code's id, to be consumed with the refund. */
export async function checkVerificationCode(
  ctx: Pick<AppContext, 'db' | 'clock' | 'config'>,
  principal: SessionPrincipal,
  code: string,
): Promise<number> {
  const now = ctx.clock().toISOString();
  const row = await ctx.db
    .selectFrom('refund_verification_codes')
    .selectAll()
    .where('user_id', '=', principal.userId)
    .where('organization_id', '=', principal.organizationId)
    .where('used_at', 'is', null)
    .orderBy('id', 'desc')
    .executeTakeFirst();
  if (!row || row.expires_at <= now) throw new ValidationError(INVALID);
  const counted = await ctx.db
    .updateTable('refund_verification_codes')
    .set((eb) => ({ attempts: eb('attempts', '+', 1) }))
    .where('id', '=', row.id)
    .where('attempts', '<', MAX_ATTEMPTS)
    .where('used_at', 'is', null)
    .executeTakeFirst();
  if (Number(counted.numUpdatedRows) !== 1) {
    throw new ValidationError('verification_code: too many attempts; request a new code.');
  }
  const expected = Buffer.from(row.code_hash, 'hex');
  const given = Buffer.from(codeHash(ctx.config.secretKey, principal.userId, code.trim()), 'hex');
  if (!timingSafeEqual(expected, given))
    throw new ValidationError('verification_code: the code is incorrect.');
  return row.id;
}

/** Marks the code used, inside the refund's transaction; a code used meanwhile is refused. */
export async function consumeVerificationCode(trx: Executor, codeId: number, now: string): Promise<void> {
  const result = await trx
    .updateTable('refund_verification_codes')
    .set({ used_at: now })
    .where('id', '=', codeId)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) !== 1) throw new ValidationError(INVALID);
}
