// Members of an organization: the list, invitations by mail (7 days, single use, token stored as SHA-256),
// role changes and removal under the last-owner rule, acceptance of an invitation, and the owner's
// "require two-factor for every member". Changes to members of one organization are serialised on its
// row (FOR UPDATE on PostgreSQL; SQLite has one writer), so two demotions cannot leave it without owner.
// An invitation outlives neither its sender's power to invite (a removed or demoted owner's pending
// invitations are revoked with the change) nor its address's choice (accepting one revokes the others).
import type { AppContext } from '../../context.ts';
import { isPostgres } from '../../db/connection.ts';
import type { Executor } from '../../db/database.ts';
import { NotFoundError, ValidationError } from '../../http/errors.ts';
import { newToken, sha256Hex } from '../../lib/ids.ts';
import { type Actor, type Client, recordAudit, SYSTEM, userActor } from '../audit/record.ts';
import { newPasswordHash } from '../auth/passwords.ts';
import { issueSession, type LoginResult } from '../auth/service.ts';
import { normalizeEmail, revokeUserSessions } from '../auth/store.ts';
import type { UserRow } from '../auth/table.ts';
import { type Role, roleAllows } from './roles.ts';
import type { InvitationRow } from './table.ts';

const INVITATION_TTL_MS = 7 * 24 * 3600 * 1000;
export const LAST_OWNER = 'The last owner cannot be removed or demoted.';

async function lockOrganization(trx: Executor, organizationId: number) {
  const query = trx
    .selectFrom('organizations')
    .select(['id', 'name', 'require_two_factor'])
    .where('id', '=', organizationId);
  return (isPostgres(trx) ? query.forUpdate() : query).executeTakeFirstOrThrow();
}

function presentMember(row: UserRow) {
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    role: row.role,
    two_factor_enabled: row.totp_enabled_at !== null,
    created_at: row.created_at,
    last_login_at: row.last_login_at,
  };
}

function presentInvitation(row: InvitationRow) {
  return {
    id: row.id,
    email: row.email,
    role: row.role,
    invited_by: row.invited_by,
    created_at: row.created_at,
    expires_at: row.expires_at,
  };
}

function activeMembers(db: Executor, organizationId: number) {
  return db
    .selectFrom('users')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('removed_at', 'is', null)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

export async function listMembers(ctx: AppContext, organizationId: number) {
  const now = ctx.clock().toISOString();
  const [members, invitations] = await Promise.all([
    activeMembers(ctx.db, organizationId),
    ctx.db
      .selectFrom('invitations')
      .selectAll()
      .where('organization_id', '=', organizationId)
      .where('accepted_at', 'is', null)
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', now)
      .orderBy('created_at')
      .execute(),
  ]);
  return { members: members.map(presentMember), invitations: invitations.map(presentInvitation) };
}

function inviteLink(ctx: AppContext, token: string): string {
  return `${ctx.config.publicUrl}/dashboard/accept-invite#token=${token}`;
}

/** POST /organization/members/: mails an invitation; a pending one for the same email is replaced. */
export async function inviteMember(
  ctx: AppContext,
  organizationId: number,
  input: { email: string; role: Role },
  actor: Actor,
) {
  const email = normalizeEmail(input.email);
  const token = newToken();
  const now = ctx.clock();
  const { invitation, organizationName } = await ctx.db.transaction().execute(async (trx) => {
    const organization = await lockOrganization(trx, organizationId);
    const existing = await trx
      .selectFrom('users')
      .select(['organization_id'])
      .where('email', '=', email)
      .where('removed_at', 'is', null)
      .executeTakeFirst();
    if (existing?.organization_id === organizationId)
      throw new ValidationError('email: is already a member.');
    if (existing)
      throw new ValidationError('email: this address already has a Kassa account in another organization.');
    await trx
      .updateTable('invitations')
      .set({ revoked_at: now.toISOString() })
      .where('organization_id', '=', organizationId)
      .where('email', '=', email)
      .where('accepted_at', 'is', null)
      .where('revoked_at', 'is', null)
      .execute();
    const row = await trx
      .insertInto('invitations')
      .values({
        organization_id: organizationId,
        email,
        role: input.role,
        token_hash: sha256Hex(token),
        invited_by: actor.type === 'user' ? actor.id : null,
        created_at: now.toISOString(),
        expires_at: new Date(now.getTime() + INVITATION_TTL_MS).toISOString(),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await recordAudit(
      trx,
      organizationId,
      actor,
      {
        action: 'member.invited',
        target: { type: 'invitation', id: row.id },
        details: { email, role: input.role },
      },
      now.toISOString(),
    );
    return { invitation: row, organizationName: organization.name };
  });
  // The invitation stands if the mail fails; the owner can invite again, which replaces it.
  await ctx.mailer.send({
    to: email,
    subject: `You are invited to ${organizationName} on Kassa`,
    text:
      `${actor.email ?? 'A member'} invited you to join ${organizationName} on Kassa as ${input.role}.\n\n` +
      `Accept and choose your password here (the link works once, for 7 days):\n${inviteLink(ctx, token)}\n`,
  });
  return presentInvitation(invitation);
}

export async function revokeInvitation(ctx: AppContext, organizationId: number, id: number, actor: Actor) {
  const now = ctx.clock().toISOString();
  await ctx.db.transaction().execute(async (trx) => {
    const result = await trx
      .updateTable('invitations')
      .set({ revoked_at: now })
      .where('id', '=', id)
      .where('organization_id', '=', organizationId)
      .where('accepted_at', 'is', null)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) !== 1) throw new NotFoundError('Invitation not found.');
    await recordAudit(
      trx,
      organizationId,
      actor,
      { action: 'invitation.revoked', target: { type: 'invitation', id } },
      now,
    );
  });
}

/**
 * Revokes the pending invitations that `scope` selects, each with its `invitation.revoked` entry in its
 * organization's log, in the caller's transaction.
 */
async function revokePendingInvitations(
  trx: Executor,
  scope: { organizationId?: number; invitedBy?: number; email?: string; exceptId?: number },
  actor: Actor,
  reason: string,
  now: string,
) {
  let query = trx
    .updateTable('invitations')
    .set({ revoked_at: now })
    .where('accepted_at', 'is', null)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', now);
  if (scope.organizationId !== undefined) query = query.where('organization_id', '=', scope.organizationId);
  if (scope.invitedBy !== undefined) query = query.where('invited_by', '=', scope.invitedBy);
  if (scope.email !== undefined) query = query.where('email', '=', scope.email);
  if (scope.exceptId !== undefined) query = query.where('id', '<>', scope.exceptId);
  const revoked = await query.returning(['id', 'organization_id', 'email']).execute();
  for (const invitation of revoked) {
    await recordAudit(
      trx,
      invitation.organization_id,
      actor,
      {
        action: 'invitation.revoked',
        target: { type: 'invitation', id: invitation.id },
        details: { email: invitation.email, reason },
      },
      now,
    );
  }
}

async function ownerCount(trx: Executor, organizationId: number): Promise<number> {
  const row = await trx
    .selectFrom('users')
    .select((eb) => eb.fn.countAll<number | string>().as('count'))
    .where('organization_id', '=', organizationId)
    .where('removed_at', 'is', null)
    .where('role', '=', 'owner')
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

async function memberOf(trx: Executor, organizationId: number, id: number): Promise<UserRow> {
  const member = await trx
    .selectFrom('users')
    .selectAll()
    .where('id', '=', id)
    .where('organization_id', '=', organizationId)
    .where('removed_at', 'is', null)
    .executeTakeFirst();
  if (!member) throw new NotFoundError('Member not found.');
  return member;
}

/** PATCH /organization/members/{id}/ {role}: takes effect on the member's next request. */
export async function changeRole(
  ctx: AppContext,
  organizationId: number,
  id: number,
  role: Role,
  actor: Actor,
) {
  const now = ctx.clock().toISOString();
  return ctx.db.transaction().execute(async (trx) => {
    await lockOrganization(trx, organizationId);
    const member = await memberOf(trx, organizationId, id);
    if (member.role === role) return presentMember(member);
    if (member.role === 'owner' && (await ownerCount(trx, organizationId)) <= 1)
      throw new ValidationError(LAST_OWNER);
    const updated = await trx
      .updateTable('users')
      .set({ role })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirstOrThrow();
    // An owner demoted below inviting must not come back through an invitation sent just before.
    if (roleAllows(member.role, 'members:write') && !roleAllows(role, 'members:write')) {
      const scope = { organizationId, invitedBy: id };
      await revokePendingInvitations(trx, scope, actor, 'inviter_demoted', now);
    }
    await recordAudit(
      trx,
      organizationId,
      actor,
      {
        action: 'member.role_changed',
        target: { type: 'user', id },
        details: { email: member.email, from: member.role, to: role },
      },
      now,
    );
    return presentMember(updated);
  });
}

/**
 * DELETE /organization/members/{id}/: the member's sessions end at once, and the invitations they sent
 * that are still pending are revoked (an owner about to be removed could otherwise invite a second
 * address of theirs and come back).
 */
export async function removeMember(ctx: AppContext, organizationId: number, id: number, actor: Actor) {
  const now = ctx.clock().toISOString();
  await ctx.db.transaction().execute(async (trx) => {
    await lockOrganization(trx, organizationId);
    const member = await memberOf(trx, organizationId, id);
    if (member.role === 'owner' && (await ownerCount(trx, organizationId)) <= 1)
      throw new ValidationError(LAST_OWNER);
    await trx.updateTable('users').set({ removed_at: now }).where('id', '=', id).execute();
    await trx
      .updateTable('sessions')
      .set({ revoked_at: now })
      .where('user_id', '=', id)
      .where('revoked_at', 'is', null)
      .execute();
    await revokePendingInvitations(trx, { organizationId, invitedBy: id }, actor, 'inviter_removed', now);
    await recordAudit(
      trx,
      organizationId,
      actor,
      {
        action: 'member.removed',
        target: { type: 'user', id },
        details: { email: member.email, role: member.role },
      },
      now,
    );
  });
}

/**
 * POST /auth/accept-invite/: creates the member (or brings back a removed account of that email) with the
 * password chosen, spends the invitation, and logs them in. A brought-back account's sessions all end
 * (one a login inserted while the removal committed would otherwise live on), and the address's pending
 * invitations from other organizations are revoked: it now has an account, which they could not be
 * accepted for, and they would let those organizations read its mail in the development mailbox.
 */
export async function acceptInvitation(
  ctx: AppContext,
  input: { token: string; password: string; name?: string },
  client: Client,
): Promise<LoginResult> {
  const invalid = new ValidationError(
    'token: this invitation is invalid, used or expired. Ask for a new one.',
  );
  const now = ctx.clock().toISOString();
  const invitation = await ctx.db
    .selectFrom('invitations')
    .selectAll()
    .where('token_hash', '=', sha256Hex(input.token))
    .where('accepted_at', 'is', null)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  if (!invitation) throw invalid;
  const passwordHash = await newPasswordHash('password', input.password, client.ip);
  return ctx.db.transaction().execute(async (trx) => {
    // The address's pending invitations are locked first, in id order (PostgreSQL; SQLite has one
    // writer): two accepts for one address from two organizations then run one after the other, and
    // the second finds its invitation revoked (400). Each locking only its own would deadlock: each
    // waits for the other's user row, and to revoke the other's invitation.
    const pending = trx
      .selectFrom('invitations')
      .select('id')
      .where('email', '=', invitation.email)
      .where('accepted_at', 'is', null)
      .where('revoked_at', 'is', null)
      .orderBy('id');
    if (isPostgres(trx)) await pending.forUpdate().execute();
    const spent = await trx
      .updateTable('invitations')
      .set({ accepted_at: now })
      .where('id', '=', invitation.id)
      .where('accepted_at', 'is', null)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    if (Number(spent.numUpdatedRows) !== 1) throw invalid;
    const existing = await trx
      .selectFrom('users')
      .selectAll()
      .where('email', '=', invitation.email)
      .executeTakeFirst();
    if (existing && existing.removed_at === null) {
      throw new ValidationError(
        'token: this email already has a Kassa account. Ask to be invited with another address.',
      );
    }
    const fresh = {
      organization_id: invitation.organization_id,
      role: invitation.role,
      name: input.name?.trim() ?? '',
      password_hash: passwordHash,
    };
    const user = existing
      ? await trx
          .updateTable('users')
          .set({
            ...fresh,
            removed_at: null,
            totp_secret: null,
            totp_enabled_at: null,
            totp_last_step: null,
            two_factor_failures: 0,
            two_factor_failures_since: null,
          })
          .where('id', '=', existing.id)
          .returningAll()
          .executeTakeFirstOrThrow()
      : await trx
          .insertInto('users')
          .values({ ...fresh, email: invitation.email, created_at: now })
          .returningAll()
          .executeTakeFirstOrThrow();
    if (existing) {
      await trx.deleteFrom('recovery_codes').where('user_id', '=', user.id).execute();
      await revokeUserSessions(trx, user.id, now);
    }
    await revokePendingInvitations(
      trx,
      { email: invitation.email, exceptId: invitation.id },
      SYSTEM,
      'accepted_elsewhere',
      now,
    );
    await recordAudit(
      trx,
      invitation.organization_id,
      userActor(client, user),
      {
        action: 'member.joined',
        target: { type: 'user', id: user.id },
        details: { role: user.role, invitation_id: invitation.id },
      },
      now,
    );
    return issueSession(trx, ctx, user, client, {
      action: 'login.succeeded',
      details: { two_factor: false, via: 'invitation' },
    });
  });
}

export async function getSecurity(ctx: AppContext, organizationId: number) {
  const row = await ctx.db
    .selectFrom('organizations')
    .select('require_two_factor')
    .where('id', '=', organizationId)
    .executeTakeFirstOrThrow();
  return { require_two_factor: row.require_two_factor === 1 };
}

/** PUT /organization/security/: an owner requires two-factor only once their own account has it. */
export async function setSecurity(
  ctx: AppContext,
  organizationId: number,
  input: { require_two_factor: boolean },
  actor: Actor,
  actorHasTwoFactor: boolean,
) {
  if (input.require_two_factor && !actorHasTwoFactor) {
    throw new ValidationError('require_two_factor: turn on two-factor for your own account first.');
  }
  const now = ctx.clock().toISOString();
  await ctx.db.transaction().execute(async (trx) => {
    const organization = await lockOrganization(trx, organizationId);
    const value = input.require_two_factor ? 1 : 0;
    if (organization.require_two_factor === value) return;
    await trx
      .updateTable('organizations')
      .set({ require_two_factor: value, updated_at: now })
      .where('id', '=', organizationId)
      .execute();
    await recordAudit(
      trx,
      organizationId,
      actor,
      {
        action: 'organization.two_factor_requirement_changed',
        target: { type: 'organization', id: organizationId },
        details: { require_two_factor: input.require_two_factor },
      },
      now,
    );
  });
  return getSecurity(ctx, organizationId);
}
