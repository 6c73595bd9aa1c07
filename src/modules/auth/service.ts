// Dashboard sessions: the password step of a login, the two-factor step when the user has it, token issue
// and check, recent authentication, the session list, logout.
// Tokens are 256 random bits; only their SHA-256 is stored. Idle expiry 12 h, absolute 7 days.
import type { AppContext } from '../../context.ts';
import type { Executor } from '../../db/database.ts';
import { ForbiddenError, NotFoundError, UnauthorizedError } from '../../http/errors.ts';
import { newToken, sha256Hex } from '../../lib/ids.ts';
import { type Client, recordAccountAudit, recordAudit, userActor } from '../audit/record.ts';
import type { Role } from '../members/roles.ts';
import { passwordMatches } from './passwords.ts';
import { CHALLENGE_TRIES, claimChallengeTry } from './second-factor-tries.ts';
import * as store from './store.ts';
import type { UserRow } from './table.ts';
import { checkSecondFactor } from './two-factor.ts';

export const IDLE_TIMEOUT_MS = 12 * 3600 * 1000;
export const ABSOLUTE_TIMEOUT_MS = 7 * 24 * 3600 * 1000;
const TOUCH_INTERVAL_MS = 60 * 1000;
const CHALLENGE_TTL_MS = 5 * 60 * 1000;
const CHALLENGE_INVALID = 'This login challenge is invalid or has expired. Log in again.';

export interface SessionPrincipal {
  kind: 'session';
  sessionId: number;
  userId: number;
  organizationId: number;
  user: { id: number; email: string; name: string };
  organization: { id: number; slug: string; name: string };
  expiresAt: string;
  role: Role;
  twoFactorEnabled: boolean;
  /** The organization requires two-factor and this member has not set it up: only their account is open. */
  twoFactorSetupRequired: boolean;
  /** The last login or identity confirmation of this session. */
  authenticatedAt: string | null;
}

export interface SessionBody {
  expires_at: string;
  user: { id: number; email: string; name: string };
  organization: { id: number; slug: string; name: string };
  role: Role;
  two_factor_enabled: boolean;
  two_factor_setup_required: boolean;
}

export interface LoginResult extends SessionBody {
  token: string;
}

export type LoginOutcome =
  | { kind: 'failed' }
  | { kind: 'challenge'; body: { two_factor_required: true; challenge: string; expires_at: string } }
  | { kind: 'session'; result: LoginResult };

function effectiveExpiry(createdAt: string, lastSeenAt: string): number {
  return Math.min(Date.parse(lastSeenAt) + IDLE_TIMEOUT_MS, Date.parse(createdAt) + ABSOLUTE_TIMEOUT_MS);
}

export function sessionBody(principal: SessionPrincipal): SessionBody {
  return {
    expires_at: principal.expiresAt,
    user: principal.user,
    organization: principal.organization,
    role: principal.role,
    two_factor_enabled: principal.twoFactorEnabled,
    two_factor_setup_required: principal.twoFactorSetupRequired,
  };
}

async function loginFailed(
  ctx: AppContext,
  user: UserRow,
  client: Client,
  reason: string,
  details: Record<string, unknown> = {},
) {
  const now = ctx.clock().toISOString();
  await ctx.db
    .transaction()
    .execute((trx) => recordAccountAudit(trx, user, client, 'login.failed', now, { reason, ...details }));
}

/** Issues a session for a user who proved who they are, with its audit entry, in one transaction. */
export async function issueSession(
  trx: Executor,
  ctx: AppContext,
  user: UserRow,
  client: Client,
  audit: { action: string; details: Record<string, unknown> },
): Promise<LoginResult> {
  const organization = await store.findOrganization(trx, user.organization_id);
  const now = ctx.clock().toISOString();
  const token = newToken();
  await store.insertSession(trx, {
    tokenHash: sha256Hex(token),
    userId: user.id,
    organizationId: organization.id,
    now,
    expiresAt: new Date(Date.parse(now) + ABSOLUTE_TIMEOUT_MS).toISOString(),
    ...client,
  });
  await store.setLastLogin(trx, user.id, now);
  await recordAccountAudit(trx, user, client, audit.action, now, audit.details);
  const twoFactorEnabled = user.totp_enabled_at !== null;
  return {
    token,
    expires_at: new Date(effectiveExpiry(now, now)).toISOString(),
    user: { id: user.id, email: user.email, name: user.name },
    organization: { id: organization.id, slug: organization.slug, name: organization.name },
    role: user.role,
    two_factor_enabled: twoFactorEnabled,
    two_factor_setup_required: organization.require_two_factor === 1 && !twoFactorEnabled,
  };
}

/** The password step. The work done is the same for unknown emails (a dummy hash). */
export async function passwordStep(
  ctx: AppContext,
  email: string,
  password: string,
  client: Client,
): Promise<LoginOutcome> {
  const user = await store.findUserByEmail(ctx.db, email);
  const valid = await passwordMatches(user?.password_hash, password, client.ip);
  if (!user) return { kind: 'failed' };
  if (!valid) {
    await loginFailed(ctx, user, client, 'password');
    return { kind: 'failed' };
  }
  if (user.totp_enabled_at === null) {
    const result = await ctx.db
      .transaction()
      .execute((trx) =>
        issueSession(trx, ctx, user, client, { action: 'login.succeeded', details: { two_factor: false } }),
      );
    return { kind: 'session', result };
  }
  const challenge = newToken();
  const now = ctx.clock();
  const expiresAt = new Date(now.getTime() + CHALLENGE_TTL_MS).toISOString();
  await ctx.db
    .insertInto('login_challenges')
    .values({
      user_id: user.id,
      token_hash: sha256Hex(challenge),
      created_at: now.toISOString(),
      expires_at: expiresAt,
    })
    .execute();
  return { kind: 'challenge', body: { two_factor_required: true, challenge, expires_at: expiresAt } };
}

/** A password login without a second step (operator tools and test fixtures): the session, or null. */
export async function login(
  ctx: AppContext,
  email: string,
  password: string,
  client: Client = { ip: null, userAgent: null },
): Promise<LoginResult | null> {
  const outcome = await passwordStep(ctx, email, password, client);
  return outcome.kind === 'session' ? outcome.result : null;
}

/** The user a live login challenge belongs to (whose codes the second step checks and counts). */
export async function challengedUser(ctx: AppContext, challenge: string): Promise<UserRow> {
  const now = ctx.clock().toISOString();
  const row = await ctx.db
    .selectFrom('login_challenges')
    .select(['user_id'])
    .where('token_hash', '=', sha256Hex(challenge))
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .where('attempts', '<', CHALLENGE_TRIES)
    .executeTakeFirst();
  const user = row && (await store.findUserById(ctx.db, row.user_id));
  if (!user || user.totp_enabled_at === null) throw new UnauthorizedError(CHALLENGE_INVALID);
  return user;
}

/**
 * The second step: a TOTP code (each step accepted once) or an unused recovery code. A challenge takes
 * CHALLENGE_TRIES codes, counted in the database before each is checked; after that many wrong ones
 * it is spent and the password is needed again.
 */
export async function secondStep(
  ctx: AppContext,
  user: UserRow,
  challenge: string,
  code: string,
  client: Client,
): Promise<LoginResult | null> {
  const challengeHash = sha256Hex(challenge);
  const now = ctx.clock().toISOString();
  let tries = 0;
  const result = await checkSecondFactor(ctx, user, code, client, {
    claim: async (trx) => {
      const counted = await claimChallengeTry(trx, user.id, challengeHash, now);
      if (counted === null) throw new UnauthorizedError(CHALLENGE_INVALID);
      tries = counted;
    },
    accepted: async (trx, method) => {
      const consumed = await trx
        .updateTable('login_challenges')
        .set({ used_at: now })
        .where('token_hash', '=', challengeHash)
        .where('used_at', 'is', null)
        .executeTakeFirst();
      if (Number(consumed.numUpdatedRows) !== 1) throw new UnauthorizedError(CHALLENGE_INVALID);
      return issueSession(trx, ctx, user, client, {
        action: 'login.succeeded',
        details: { two_factor: true, method },
      });
    },
  });
  if (result) return result;
  const spent = tries >= CHALLENGE_TRIES;
  await loginFailed(ctx, user, client, 'two_factor_code', spent ? { challenge_spent: true } : {});
  if (spent)
    throw new UnauthorizedError(
      `Invalid two-factor code. After ${CHALLENGE_TRIES} wrong codes this login is spent: log in again.`,
    );
  return null;
}

/** POST /auth/confirm/: the password, or a second-factor code, makes the session recent again. */
export async function confirmIdentity(
  ctx: AppContext,
  principal: SessionPrincipal,
  proof: { password?: string; code?: string },
  client: Client,
): Promise<boolean> {
  const user = await store.findUserById(ctx.db, principal.userId);
  if (!user) throw new UnauthorizedError('Invalid or expired session token.');
  const now = ctx.clock().toISOString();
  if (proof.password !== undefined) {
    if (!(await passwordMatches(user.password_hash, proof.password, client.ip))) return false;
    await ctx.db.transaction().execute(async (trx) => {
      await store.markAuthenticated(trx, principal.sessionId, now);
      await recordAccountAudit(trx, user, client, 'identity.confirmed', now, { method: 'password' });
    });
    return true;
  }
  if (user.totp_enabled_at === null)
    throw new ForbiddenError('Two-factor is not on for your account; confirm with your password.');
  const confirmed = await checkSecondFactor(ctx, user, proof.code ?? '', client, {
    accepted: async (trx, method) => {
      await store.markAuthenticated(trx, principal.sessionId, now);
      await recordAccountAudit(trx, user, client, 'identity.confirmed', now, { method });
      return true;
    },
  });
  return confirmed ?? false;
}

export async function authenticateSession(ctx: AppContext, token: string): Promise<SessionPrincipal | null> {
  if (token.length < 20 || token.length > 100) return null;
  const row = await store.findSessionByHash(ctx.db, sha256Hex(token));
  if (!row || row.revoked_at || row.removed_at) return null;
  const now = ctx.clock().getTime();
  const expiry = effectiveExpiry(row.created_at, row.last_seen_at);
  if (now >= expiry) return null;
  let lastSeen = row.last_seen_at;
  if (now - Date.parse(row.last_seen_at) > TOUCH_INTERVAL_MS) {
    lastSeen = new Date(now).toISOString();
    await store.touchSession(ctx.db, row.session_id, lastSeen);
  }
  const twoFactorEnabled = row.totp_enabled_at !== null;
  return {
    kind: 'session',
    sessionId: row.session_id,
    userId: row.user_id,
    organizationId: row.organization_id,
    user: { id: row.user_id, email: row.email, name: row.user_name },
    organization: { id: row.organization_id, slug: row.slug, name: row.organization_name },
    expiresAt: new Date(effectiveExpiry(row.created_at, lastSeen)).toISOString(),
    role: row.role,
    twoFactorEnabled,
    twoFactorSetupRequired: row.require_two_factor === 1 && !twoFactorEnabled,
    authenticatedAt: row.authenticated_at,
  };
}

/** POST /auth/logout/: ends the current session, audited in the same transaction. */
export async function logout(ctx: AppContext, principal: SessionPrincipal, client: Client): Promise<void> {
  const now = ctx.clock().toISOString();
  await ctx.db.transaction().execute(async (trx) => {
    await store.revokeSession(trx, principal.sessionId, now);
    await recordAudit(
      trx,
      principal.organizationId,
      userActor(client, principal.user),
      { action: 'session.logged_out', target: { type: 'session', id: principal.sessionId } },
      now,
    );
  });
}

/** GET /auth/sessions/: the user's live sessions, the current one marked. */
export async function listSessions(ctx: AppContext, principal: SessionPrincipal) {
  const now = ctx.clock();
  const rows = await store.liveSessionsOf(ctx.db, principal.userId, now.toISOString());
  return rows
    .filter((row) => effectiveExpiry(row.created_at, row.last_seen_at) > now.getTime())
    .map((row) => ({
      id: row.id,
      created_at: row.created_at,
      last_seen_at: row.last_seen_at,
      ip: row.ip,
      user_agent: row.user_agent,
      current: row.id === principal.sessionId,
    }));
}

/** DELETE /auth/sessions/{id}/: ends one of the user's own sessions (the current one too). */
export async function revokeOwnSession(
  ctx: AppContext,
  principal: SessionPrincipal,
  sessionId: number,
  client: Client,
) {
  const now = ctx.clock().toISOString();
  await ctx.db.transaction().execute(async (trx) => {
    if (!(await store.revokeSessionOf(trx, principal.userId, sessionId, now)))
      throw new NotFoundError('Session not found.');
    await recordAudit(
      trx,
      principal.organizationId,
      userActor(client, principal.user),
      {
        action: 'session.revoked',
        target: { type: 'session', id: sessionId },
      },
      now,
    );
  });
}
