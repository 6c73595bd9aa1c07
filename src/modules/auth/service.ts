// Dashboard sessions: password login, token issue and check, logout.
// Tokens are 256 random bits; only their SHA-256 is stored. Idle expiry 12 h, absolute 7 days.
import type { AppContext } from '../../context.ts';
import { DUMMY_PASSWORD_HASH, verifyPassword } from '../../lib/crypto.ts';
import { newToken, sha256Hex } from '../../lib/ids.ts';
import * as store from './store.ts';

export const IDLE_TIMEOUT_MS = 12 * 3600 * 1000;
export const ABSOLUTE_TIMEOUT_MS = 7 * 24 * 3600 * 1000;
const TOUCH_INTERVAL_MS = 60 * 1000;

export interface SessionPrincipal {
  kind: 'session';
  sessionId: number;
  userId: number;
  organizationId: number;
  user: { id: number; email: string; name: string };
  organization: { id: number; slug: string; name: string };
  expiresAt: string;
}

export interface LoginResult {
  token: string;
  expires_at: string;
  user: { id: number; email: string; name: string };
  organization: { id: number; slug: string; name: string };
}

function effectiveExpiry(createdAt: string, lastSeenAt: string): number {
  return Math.min(Date.parse(lastSeenAt) + IDLE_TIMEOUT_MS, Date.parse(createdAt) + ABSOLUTE_TIMEOUT_MS);
}

/** Returns the session for valid credentials, or null; the work done is the same for unknown emails. */
export async function login(ctx: AppContext, email: string, password: string): Promise<LoginResult | null> {
  const user = await store.findUserByEmail(ctx.db, email);
  const valid = await verifyPassword(password, user?.password_hash ?? DUMMY_PASSWORD_HASH);
  if (!user || !valid) return null;
  const organization = await ctx.db
    .selectFrom('organizations')
    .select(['id', 'slug', 'name'])
    .where('id', '=', user.organization_id)
    .executeTakeFirstOrThrow();
  const now = ctx.clock();
  const token = newToken();
  await store.insertSession(ctx.db, {
    tokenHash: sha256Hex(token),
    userId: user.id,
    organizationId: organization.id,
    now: now.toISOString(),
    expiresAt: new Date(now.getTime() + ABSOLUTE_TIMEOUT_MS).toISOString(),
  });
  return {
    token,
    expires_at: new Date(effectiveExpiry(now.toISOString(), now.toISOString())).toISOString(),
    user: { id: user.id, email: user.email, name: user.name },
    organization,
  };
}

export async function authenticateSession(ctx: AppContext, token: string): Promise<SessionPrincipal | null> {
  if (token.length < 20 || token.length > 100) return null;
  const row = await store.findSessionByHash(ctx.db, sha256Hex(token));
  if (!row || row.revoked_at) return null;
  const now = ctx.clock().getTime();
  const expiry = effectiveExpiry(row.created_at, row.last_seen_at);
  if (now >= expiry) return null;
  let lastSeen = row.last_seen_at;
  if (now - Date.parse(row.last_seen_at) > TOUCH_INTERVAL_MS) {
    lastSeen = new Date(now).toISOString();
    await store.touchSession(ctx.db, row.session_id, lastSeen);
  }
  return {
    kind: 'session',
    sessionId: row.session_id,
    userId: row.user_id,
    organizationId: row.organization_id,
    user: { id: row.user_id, email: row.email, name: row.user_name },
    organization: { id: row.organization_id, slug: row.slug, name: row.organization_name },
    expiresAt: new Date(effectiveExpiry(row.created_at, lastSeen)).toISOString(),
  };
}

export async function logout(ctx: AppContext, sessionId: number): Promise<void> {
  await store.revokeSession(ctx.db, sessionId, ctx.clock().toISOString());
}
