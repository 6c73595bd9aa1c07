// Idempotency-Key on API-key POSTs: the same key and body within 24 h replays the first response;
// the same key with another body is a 422; a duplicate of a request still running waits for it and
// replays its answer, and is a 409 only when the first is still running after the wait.
// The claim is a row with a unique (organization, environment, key), so it holds across processes.
// A route whose change commits before it answers records its answer in that same transaction
// (recordIdempotentResponseIn): if the process dies between the commit and the reply, a retry that
// takes the key over replays that answer instead of making the change a second time.
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.ts';
import type { Executor } from '../../db/database.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { ConflictError, UnprocessableError, ValidationError } from '../../http/errors.ts';
import { decrypt, encrypt } from '../../lib/crypto.ts';
import type { ApiKeyPrincipal } from '../api-keys/service.ts';

export const RETENTION_MS = 24 * 3600 * 1000;
/** How long a duplicate waits for the first request to finish before answering 409. */
const WAIT_MS = 5000;

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

/**
 * Stored answers are encrypted (AES-256-GCM under KASSA_SECRET_KEY): a checkout's answer holds its token,
 * the customer's bearer capability, which must not sit in the database in the clear for 24 hours.
 * Answers stored before this (plain JSON) still replay.
 */
const SEALED = 'enc1.';

function sealAnswer(body: string, key: Buffer): string {
  return SEALED + encrypt(body, key);
}

function openAnswer(stored: string | null, key: Buffer): string | null {
  return stored?.startsWith(SEALED) ? decrypt(stored.slice(SEALED.length), key) : stored;
}

/** The key that seals a claimed request's answer (the in-transaction recorder has no context of its own). */
const sealingKeys = new WeakMap<FastifyRequest, Buffer>();

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function sendReplay(reply: FastifyReply, status: number, body: string | null): true {
  reply.header('idempotent-replayed', 'true');
  reply
    .code(status)
    .type('application/json; charset=utf-8')
    .send(body ?? '');
  return true;
}

/**
 * Claims the key for this request, or answers from the stored response.
 * A duplicate that arrives while the first request is still running waits for it (up to WAIT_MS, polling
 * the row) and then replays its answer, which is what a client retrying after a timeout expects; only
 * when the first is still running after the wait is it a 409. Returns true when the reply was sent.
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
  const scope = { organization_id: principal.organizationId, environment: principal.environment, key };
  // Real time, not ctx.clock: this bounds how long the request waits.
  const deadline = Date.now() + WAIT_MS;
  let pause = 10;
  for (;;) {
    const now = ctx.clock();
    try {
      const row = await ctx.db
        .insertInto('idempotency_keys')
        .values({
          ...scope,
          request_hash: hash,
          status: 'in_progress',
          created_at: now.toISOString(),
          locked_until: new Date(now.getTime() + ctx.config.idempotencyLockMs).toISOString(),
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      request.idempotencyClaim = row.id;
      sealingKeys.set(request, ctx.config.secretKey);
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
    if (existing && Date.parse(existing.created_at) + RETENTION_MS < now.getTime()) {
      await ctx.db.deleteFrom('idempotency_keys').where('id', '=', existing.id).execute();
    } else if (existing && existing.request_hash !== hash) {
      throw new UnprocessableError('Idempotency-Key was already used with a different request.');
    } else if (existing?.status === 'done' && existing.response_status !== null) {
      return sendReplay(
        reply,
        existing.response_status,
        openAnswer(existing.response_body, ctx.config.secretKey),
      );
    } else if (existing && Date.parse(existing.locked_until) <= now.getTime()) {
      if (existing.status === 'committed' && existing.response_status !== null) {
        // The first request committed its change with an answer, then its process died before the
        // final one: the change stands, so its answer is replayed (the request is not run again).
        return sendReplay(
          reply,
          existing.response_status,
          openAnswer(existing.response_body, ctx.config.secretKey),
        );
      }
      // The first request's process died mid-way, before any change: take the claim over.
      const taken = await ctx.db
        .updateTable('idempotency_keys')
        .set({ locked_until: new Date(now.getTime() + ctx.config.idempotencyLockMs).toISOString() })
        .where('id', '=', existing.id)
        .where('locked_until', '=', existing.locked_until)
        // Still unanswered as this statement sees it: the first request may have recorded an answer
        // (which leaves locked_until as it was) since the read above; it is replayed then, not run
        // again (on PostgreSQL this update waits for that commit and checks the row again).
        .where('status', '=', 'in_progress')
        .where('response_status', 'is', null)
        .executeTakeFirst();
      if (Number(taken.numUpdatedRows) === 1) {
        request.idempotencyClaim = existing.id;
        sealingKeys.set(request, ctx.config.secretKey);
        return false;
      }
    }
    // Still running (or just released by a 5xx, or taken over by another duplicate): look again shortly.
    if (Date.now() >= deadline) {
      throw new ConflictError('A request with this Idempotency-Key is still being processed.');
    }
    await sleep(pause);
    pause = Math.min(pause * 2, 100);
  }
}

/** Requests whose change committed together with a recorded answer (recordIdempotentResponseIn). */
const answeredWithChange = new WeakSet<FastifyRequest>();

/**
 * Inside the transaction that makes a claimed request's change: records `body` (serialised as the reply
 * would be) as the key's answer, committed with the change or not at all. The key stays in progress:
 * (status committed), so a duplicate arriving meanwhile keeps waiting for the request's own reply, which replaces this answer
 * when the request completes (it may say more, e.g. the provider's answer) unless it is a 5xx. This one
 * is replayed only if the request never completes (its process died after the change committed).
 */
export async function recordIdempotentResponseIn(
  trx: Executor,
  request: FastifyRequest,
  status: number,
  body: unknown,
): Promise<void> {
  const claim = request.idempotencyClaim;
  const key = sealingKeys.get(request);
  if (claim === null || key === undefined) return;
  await trx
    .updateTable('idempotency_keys')
    // 'committed', not 'in_progress': a process of the previous release (rolling upgrade) takes over
    // an expired in_progress claim and would run the request again; it neither takes over nor replays
    // a status it does not know, so its duplicate waits (then 409) instead.
    .set({
      status: 'committed',
      response_status: status,
      response_body: sealAnswer(JSON.stringify(body), key),
    })
    .where('id', '=', claim)
    .execute();
  answeredWithChange.add(request);
}

/**
 * Stores the response of a claimed request. A 5xx releases the key so a retry runs again, unless the
 * change already committed with its answer: then that answer stays, and a retry replays it.
 */
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
    if (answeredWithChange.has(request)) {
      // The change committed with its answer: that answer is the key's from now on.
      await ctx.db.updateTable('idempotency_keys').set({ status: 'done' }).where('id', '=', claim).execute();
      return;
    }
    await ctx.db.deleteFrom('idempotency_keys').where('id', '=', claim).execute();
    return;
  }
  await ctx.db
    .updateTable('idempotency_keys')
    .set({ status: 'done', response_status: status, response_body: sealAnswer(body, ctx.config.secretKey) })
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
