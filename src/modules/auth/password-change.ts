// Changing a password (ends every other session of the user) and resetting a forgotten one by mail: a
// one-hour, single-use link whose token is stored only as a SHA-256; using it ends every session.
import type { AppContext } from '../../context.ts';
import { ValidationError } from '../../http/errors.ts';
import { newToken, sha256Hex } from '../../lib/ids.ts';
import { type Client, recordAccountAudit } from '../audit/record.ts';
import { newPasswordHash, passwordMatches } from './passwords.ts';
import type { SessionPrincipal } from './service.ts';
import * as store from './store.ts';

const RESET_TTL_MS = 60 * 60 * 1000;

/** POST /auth/password/; false when the current password is wrong (the route counts it as a failure). */
export async function changePassword(
  ctx: AppContext,
  principal: SessionPrincipal,
  input: { current_password: string; new_password: string },
  client: Client,
): Promise<boolean> {
  const user = await store.findUserById(ctx.db, principal.userId);
  if (!user || !(await passwordMatches(user.password_hash, input.current_password, client.ip))) return false;
  const hash = await newPasswordHash('new_password', input.new_password, client.ip);
  const now = ctx.clock().toISOString();
  await ctx.db.transaction().execute(async (trx) => {
    await trx.updateTable('users').set({ password_hash: hash }).where('id', '=', user.id).execute();
    const ended = await store.revokeUserSessions(trx, user.id, now, principal.sessionId);
    await store.markAuthenticated(trx, principal.sessionId, now);
    await recordAccountAudit(trx, user, client, 'password.changed', now, { other_sessions_ended: ended });
  });
  return true;
}

/** The link mailed for a reset; the token rides in the fragment, so it never reaches a server log. */
function resetLink(ctx: AppContext, token: string): string {
  return `${ctx.config.publicUrl}/dashboard/reset-password#token=${token}`;
}

/**
 * POST /auth/password-reset/: mails a link when the email is a member's. The caller answers 202 either
 * way; the mail is sent after the answer, so its time does not tell whether the account exists.
 */
export async function requestPasswordReset(
  ctx: AppContext,
  email: string,
  client: Client,
): Promise<(() => Promise<void>) | null> {
  const user = await store.findUserByEmail(ctx.db, email);
  if (!user) return null;
  const token = newToken();
  const now = ctx.clock();
  await ctx.db.transaction().execute(async (trx) => {
    await trx
      .insertInto('password_resets')
      .values({
        user_id: user.id,
        token_hash: sha256Hex(token),
        created_at: now.toISOString(),
        expires_at: new Date(now.getTime() + RESET_TTL_MS).toISOString(),
      })
      .execute();
    await recordAccountAudit(trx, user, client, 'password.reset_requested', now.toISOString());
  });
  return () =>
    ctx.mailer.send({
      to: user.email,
      subject: 'Reset your Kassa password',
      text:
        `Someone (hopefully you) asked to reset the password of your Kassa account ${user.email}.\n\n` +
        `Choose a new password here (the link works once, for one hour):\n${resetLink(ctx, token)}\n\n` +
        `If you did not ask for this, ignore this mail: your password stays as it is.\n`,
    });
}

/** POST /auth/password-reset/confirm/: sets the new password, spends the link, ends every session. */
export async function confirmPasswordReset(
  ctx: AppContext,
  input: { token: string; new_password: string },
  client: Client,
): Promise<void> {
  const invalid = new ValidationError(
    'token: this reset link is invalid, used or expired. Ask for a new one.',
  );
  const now = ctx.clock().toISOString();
  const reset = await ctx.db
    .selectFrom('password_resets')
    .select(['id', 'user_id'])
    .where('token_hash', '=', sha256Hex(input.token))
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  const user = reset && (await store.findUserById(ctx.db, reset.user_id));
  if (!reset || !user) throw invalid;
  const hash = await newPasswordHash('new_password', input.new_password, client.ip);
  await ctx.db.transaction().execute(async (trx) => {
    const spent = await trx
      .updateTable('password_resets')
      .set({ used_at: now })
      .where('id', '=', reset.id)
      .where('used_at', 'is', null)
      .executeTakeFirst();
    if (Number(spent.numUpdatedRows) !== 1) throw invalid;
    // Every other link still out for this user dies with this one.
    await trx
      .updateTable('password_resets')
      .set({ used_at: now })
      .where('user_id', '=', user.id)
      .where('used_at', 'is', null)
      .execute();
    await trx.updateTable('users').set({ password_hash: hash }).where('id', '=', user.id).execute();
    const ended = await store.revokeUserSessions(trx, user.id, now);
    await recordAccountAudit(trx, user, client, 'password.reset', now, { sessions_ended: ended });
  });
}
