// The audit log: who did what, from where. Every entry is written by the service making the change, in the
// transaction of that change (a change that rolls back leaves no entry; an entry that cannot be written
// rolls the change back). Actors: a dashboard user, an API key, the operator (CLI) or the system (worker).
import type { FastifyRequest } from 'fastify';
import type { Executor } from '../../db/database.ts';
import type { ActorType } from './table.ts';

export interface Actor {
  type: ActorType;
  id: number | null;
  email: string | null;
  ip: string | null;
  userAgent: string | null;
}

export const OPERATOR: Actor = { type: 'operator', id: null, email: null, ip: null, userAgent: null };
export const SYSTEM: Actor = { type: 'system', id: null, email: null, ip: null, userAgent: null };

export interface AuditEntry {
  action: string;
  target?: { type: string; id: string | number } | null;
  details?: Record<string, unknown>;
}

/** Where a request came from: its address and user agent. */
export type Client = Pick<Actor, 'ip' | 'userAgent'>;

const MAX_USER_AGENT = 300;

export function clientOf(request: FastifyRequest): Client {
  const agent = request.headers['user-agent'];
  return {
    ip: request.ip,
    userAgent: typeof agent === 'string' && agent ? agent.slice(0, MAX_USER_AGENT) : null,
  };
}

/** A user acting from a client (also before a session exists: a login, an accepted invitation). */
export function userActor(client: Client, user: { id: number; email: string }): Actor {
  return { type: 'user', id: user.id, email: user.email, ...client };
}

/** Whoever authenticated this request: the session's user or the API key. */
export function actorOf(request: FastifyRequest): Actor {
  const principal = request.principal;
  if (principal?.kind === 'session') return userActor(clientOf(request), principal.user);
  if (principal?.kind === 'api_key')
    return { type: 'api_key', id: principal.keyId, email: null, ...clientOf(request) };
  throw new Error('actorOf() needs an authenticated request');
}

/** An action of a user on their own account (login, password, two-factor), from a client. */
export function recordAccountAudit(
  trx: Executor,
  user: { id: number; email: string; organization_id: number },
  client: Client,
  action: string,
  at: string,
  details?: Record<string, unknown>,
): Promise<void> {
  return recordAudit(
    trx,
    user.organization_id,
    userActor(client, user),
    { action, target: { type: 'user', id: user.id }, details },
    at,
  );
}

/** Writes one entry; `trx` is the transaction of the change it records. */
export async function recordAudit(
  trx: Executor,
  organizationId: number,
  actor: Actor,
  entry: AuditEntry,
  at: string,
): Promise<void> {
  await trx
    .insertInto('audit_log')
    .values({
      organization_id: organizationId,
      at,
      actor_type: actor.type,
      actor_id: actor.id,
      actor_email: actor.email,
      action: entry.action,
      target_type: entry.target?.type ?? null,
      target_id: entry.target ? String(entry.target.id) : null,
      ip: actor.ip,
      user_agent: actor.userAgent,
      details: JSON.stringify(entry.details ?? {}),
    })
    .execute();
}
