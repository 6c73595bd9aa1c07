// Users, sessions, two-factor and password-reset queries.
import type { Executor } from '../../db/database.ts';

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** An active (not removed) user by email. */
export function findUserByEmail(db: Executor, email: string) {
  return db
    .selectFrom('users')
    .selectAll()
    .where('email', '=', normalizeEmail(email))
    .where('removed_at', 'is', null)
    .executeTakeFirst();
}

export function findUserById(db: Executor, userId: number) {
  return db
    .selectFrom('users')
    .selectAll()
    .where('id', '=', userId)
    .where('removed_at', 'is', null)
    .executeTakeFirst();
}

export function findOrganization(db: Executor, organizationId: number) {
  return db
    .selectFrom('organizations')
    .select(['id', 'slug', 'name', 'require_two_factor'])
    .where('id', '=', organizationId)
    .executeTakeFirstOrThrow();
}

export interface NewSession {
  tokenHash: string;
  userId: number;
  organizationId: number;
  now: string;
  expiresAt: string;
  ip: string | null;
  userAgent: string | null;
}

export function insertSession(db: Executor, values: NewSession) {
  return db
    .insertInto('sessions')
    .values({
      token_hash: values.tokenHash,
      user_id: values.userId,
      organization_id: values.organizationId,
      created_at: values.now,
      last_seen_at: values.now,
      expires_at: values.expiresAt,
      authenticated_at: values.now,
      ip: values.ip,
      user_agent: values.userAgent,
    })
    .execute();
}

/**
 * A session with its user and organization. The session's organization must still be its user's: a
 * session a login inserted while a removal committed (so the removal did not revoke it) must not open
 * the old organization once the account has joined another one (acceptInvitation reuses the row).
 */
export function findSessionByHash(db: Executor, tokenHash: string) {
  return db
    .selectFrom('sessions')
    .innerJoin('users', (join) =>
      join
        .onRef('users.id', '=', 'sessions.user_id')
        .onRef('users.organization_id', '=', 'sessions.organization_id'),
    )
    .innerJoin('organizations', 'organizations.id', 'sessions.organization_id')
    .select([
      'sessions.id as session_id',
      'sessions.created_at',
      'sessions.last_seen_at',
      'sessions.expires_at',
      'sessions.revoked_at',
      'sessions.authenticated_at',
      'users.id as user_id',
      'users.email',
      'users.name as user_name',
      'users.role',
      'users.removed_at',
      'users.totp_enabled_at',
      'organizations.id as organization_id',
      'organizations.slug',
      'organizations.name as organization_name',
      'organizations.require_two_factor',
    ])
    .where('sessions.token_hash', '=', tokenHash)
    .executeTakeFirst();
}

export function touchSession(db: Executor, sessionId: number, now: string) {
  return db.updateTable('sessions').set({ last_seen_at: now }).where('id', '=', sessionId).execute();
}

export function markAuthenticated(db: Executor, sessionId: number, now: string) {
  return db
    .updateTable('sessions')
    .set({ authenticated_at: now, last_seen_at: now })
    .where('id', '=', sessionId)
    .execute();
}

export function revokeSession(db: Executor, sessionId: number, now: string) {
  return db.updateTable('sessions').set({ revoked_at: now }).where('id', '=', sessionId).execute();
}

/** Revokes the user's live sessions, all of them or all but `keep`; returns how many. */
export async function revokeUserSessions(db: Executor, userId: number, now: string, keep?: number) {
  let query = db
    .updateTable('sessions')
    .set({ revoked_at: now })
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null);
  if (keep !== undefined) query = query.where('id', '<>', keep);
  const result = await query.executeTakeFirst();
  return Number(result.numUpdatedRows);
}

export function liveSessionsOf(db: Executor, userId: number, notExpiredAt: string) {
  return db
    .selectFrom('sessions')
    .select(['id', 'created_at', 'last_seen_at', 'authenticated_at', 'ip', 'user_agent'])
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', notExpiredAt)
    .orderBy('last_seen_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
}

export async function revokeSessionOf(db: Executor, userId: number, sessionId: number, now: string) {
  const result = await db
    .updateTable('sessions')
    .set({ revoked_at: now })
    .where('id', '=', sessionId)
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export function setLastLogin(db: Executor, userId: number, now: string) {
  return db.updateTable('users').set({ last_login_at: now }).where('id', '=', userId).execute();
}
