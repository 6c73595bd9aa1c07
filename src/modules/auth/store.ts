// Users and sessions queries.
import type { Executor } from '../../db/database.ts';

export function findUserByEmail(db: Executor, email: string) {
  return db
    .selectFrom('users')
    .selectAll()
    .where('email', '=', email.trim().toLowerCase())
    .executeTakeFirst();
}

export function insertSession(
  db: Executor,
  values: { tokenHash: string; userId: number; organizationId: number; now: string; expiresAt: string },
) {
  return db
    .insertInto('sessions')
    .values({
      token_hash: values.tokenHash,
      user_id: values.userId,
      organization_id: values.organizationId,
      created_at: values.now,
      last_seen_at: values.now,
      expires_at: values.expiresAt,
    })
    .execute();
}

export function findSessionByHash(db: Executor, tokenHash: string) {
  return db
    .selectFrom('sessions')
    .innerJoin('users', 'users.id', 'sessions.user_id')
    .innerJoin('organizations', 'organizations.id', 'sessions.organization_id')
    .select([
      'sessions.id as session_id',
      'sessions.created_at',
      'sessions.last_seen_at',
      'sessions.expires_at',
      'sessions.revoked_at',
      'users.id as user_id',
      'users.email',
      'users.name as user_name',
      'organizations.id as organization_id',
      'organizations.slug',
      'organizations.name as organization_name',
    ])
    .where('sessions.token_hash', '=', tokenHash)
    .executeTakeFirst();
}

export function touchSession(db: Executor, sessionId: number, now: string) {
  return db.updateTable('sessions').set({ last_seen_at: now }).where('id', '=', sessionId).execute();
}

export function revokeSession(db: Executor, sessionId: number, now: string) {
  return db.updateTable('sessions').set({ revoked_at: now }).where('id', '=', sessionId).execute();
}
