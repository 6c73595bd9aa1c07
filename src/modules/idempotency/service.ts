// Idempotency-Key on API-key POSTs: the same key and body within 24 h replays the first response;
// the same key with another body is a 422; the same key while the first is still running is a 409.
// The claim is a row with a unique (organization, environment, key), so it holds across processes.
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.ts';
import { ConflictError, UnprocessableError, ValidationError } from '../../http/errors.ts';
import type { ApiKeyPrincipal } from '../api-keys/service.ts';

export const RETENTION_MS = 24 * 3600 * 1000;
const LOCK_MS = 60 * 1000;

declare module 'fastify' {
  interface FastifyRequest {
    idempotencyClaim: number | null;
  }
}

function requestHash(request: FastifyRequest): string {
  return createHash('sha256')
    .update(`${request.method} ${request.url.split('?')[0].replace(/\/+$/, '')}\n${request.rawBody ?? ''}`)
    .digest('hex');
}

function isUniqueViolation(error: unknown): boolean {
  const message = error instanceof Error ? error.message : String(error);
  return /unique|duplicate key/i.test(message);
}

/**
 * Claims the key for this request, or answers from the stored response.
 * Returns true when the reply was already sent (a replay).
 */
export async function claimIdempotencyKey(
  ctx: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
  principal: ApiKeyPrincipal,
): Promise<boolean> {
  const header = request.headers['idempotency-key'];
  if (header === undefined || request.method !== 'POST') return false;
  const key = Array.isArray(header) ? header[0] : header;
  if (key.length < 1 || key.length > 255)
    throw new ValidationError('Idempotency-Key: must be 1 to 255 characters.');
  const hash = requestHash(request);
  const now = ctx.clock();
  const scope = { organization_id: principal.organizationId, environment: principal.environment, key };
  for (let attempt = 0; attempt < 3; attempt += 1) {
    try {
      const row = await ctx.db
        .insertInto('idempotency_keys')
        .values({
          ...scope,
          request_hash: hash,
          status: 'in_progress',
          created_at: now.toISOString(),
          locked_until: new Date(now.getTime() + LOCK_MS).toISOString(),
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      request.idempotencyClaim = row.id;
      return false;
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
    }
    const existing = await ctx.db
      .selectFrom('idempotency_keys')
      .selectAll()
      .where('organization_id', '=', scope.organization_id)
      .where('environment', '=', scope.environment)
      .where('key', '=', key)
      .executeTakeFirst();
    if (!existing) continue;
    if (Date.parse(existing.created_at) + RETENTION_MS < now.getTime()) {
      await ctx.db.deleteFrom('idempotency_keys').where('id', '=', existing.id).execute();
      continue;
    }
    if (existing.request_hash !== hash) {
      throw new UnprocessableError('Idempotency-Key was already used with a different request.');
    }
    if (existing.status === 'done' && existing.response_status !== null) {
      reply.header('idempotent-replayed', 'true');
      reply
        .code(existing.response_status)
        .type('application/json; charset=utf-8')
        .send(existing.response_body ?? '');
      return true;
    }
    if (Date.parse(existing.locked_until) > now.getTime()) {
      throw new ConflictError('A request with this Idempotency-Key is still being processed.');
    }
    // The first request's process died mid-way: take the claim over.
    const taken = await ctx.db
      .updateTable('idempotency_keys')
      .set({ locked_until: new Date(now.getTime() + LOCK_MS).toISOString() })
      .where('id', '=', existing.id)
      .where('locked_until', '=', existing.locked_until)
      .executeTakeFirst();
    if (Number(taken.numUpdatedRows) === 1) {
      request.idempotencyClaim = existing.id;
      return false;
    }
  }
  throw new ConflictError('A request with this Idempotency-Key is still being processed.');
}

/** Stores the response of a claimed request; a 5xx releases the key so a retry runs again. */
export async function recordIdempotentResponse(
  ctx: AppContext,
  request: FastifyRequest,
  status: number,
  body: string,
) {
  const claim = request.idempotencyClaim;
  if (claim === null) return;
  request.idempotencyClaim = null;
  if (status >= 500) {
    await ctx.db.deleteFrom('idempotency_keys').where('id', '=', claim).execute();
    return;
  }
  await ctx.db
    .updateTable('idempotency_keys')
    .set({ status: 'done', response_status: status, response_body: body })
    .where('id', '=', claim)
    .execute();
}

export async function pruneIdempotencyKeys(ctx: AppContext): Promise<number> {
  const cutoff = new Date(ctx.clock().getTime() - RETENTION_MS).toISOString();
  const result = await ctx.db
    .deleteFrom('idempotency_keys')
    .where('created_at', '<', cutoff)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
