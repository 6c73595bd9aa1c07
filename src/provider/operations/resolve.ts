// The operator's way out of a provider call flagged for review (kassa operation list / kassa operation
// resolve; docs/operations.md "Flagged provider calls"). A call is flagged when the reconciler could still
// not read its outcome back at its last read (20 hours after it), or found the provider and Kassa
// disagreeing; nothing reads it again, and what waited on it (a checkout's attempt, a refund's hold) waits.
//
// The operator states nothing: having looked at the provider, they ask Kassa to read the call back once
// more, as the reconciler does (its kind's handler, `resolve`), and Kassa records what that read shows
// through the call's own path, the one the reconciler takes when a read succeeds (the kind's handler reads
// and records with the same functions in `read` and `resolve`):
// - the provider has it (charged, declined, refunded, refused, saved, or not final yet: processing,
//   waiting for the customer's 3-D Secure): recorded as any answer is (applyProviderState, the refund's
//   completion, failure or processing, the setup applied); what is not final is then followed by the
//   subject's own sync, as after the reconciler's read, and the answer says what it still waits for
//   (`waiting`: kassa operation resolve exits 1 with it). Nothing is ever charged again;
// - the provider has no trace of it, and it can no longer arrive: it never reached the provider, as the
//   reconciler's "never made" (the checkout's attempt slot freed, the refund failed and its hold released);
// - the provider cannot be read, or has no trace of it yet while it may still arrive: refused, nothing
//   changes.
// The operation is settled only if it is still flagged, in the transaction that records the read and
// writes the audit entry (provider_operation.resolved, actor operator), so a call is resolved once
// however many operators run the command; the wallet's movements are posted once per kind and subject
// whatever happens (wallet_movements_once). A renewal try keeps its own command (kassa renewal resolve),
// where the operator says what happened and the dunning goes on from it.
import type { AppContext } from '../../context.ts';
import type { Executor } from '../../db/database.ts';
import { ConflictError, DomainError, NotFoundError, ValidationError } from '../../http/errors.ts';
import { type Actor, OPERATOR, recordAudit } from '../../modules/audit/record.ts';
import type { KnownOutcome } from '../types.ts';
import {
  type FlaggedReading,
  mayArriveUntil,
  NEVER_MADE_OUTCOME,
  type OperationHandlers,
} from './reconciler.ts';
import { operationByKey, settleFlaggedOperation } from './store.ts';
import type { OperationRow } from './table.ts';

/** Where a call that is not flagged stands, in words (also kassa renewal resolve's refusal). */
export function describeOperationState(operation: OperationRow): string {
  if (operation.state === 'done')
    return `it is done (${[operation.outcome, operation.outcome_code].filter(Boolean).join(': ')})`;
  return 'the reconciler is still reading it back';
}

function notFlagged(operation: OperationRow): ConflictError {
  return new ConflictError(
    `${operation.idempotency_key} is not flagged: ${describeOperationState(operation)}. Only a flagged provider call can be resolved.`,
  );
}

/** The flagged operation and its kind's resolver; refused for anything else. */
async function flaggedOperation(ctx: AppContext, handlers: OperationHandlers, key: string) {
  const operation = await operationByKey(ctx.db, key);
  if (!operation) throw new NotFoundError(`No provider operation ${key}.`);
  const handler = handlers[operation.kind];
  if (!handler?.resolve) {
    const command = handler?.resolvedBy?.(key);
    throw new ValidationError(
      command
        ? `${key} is a ${operation.kind} operation: resolve it with ${command}.`
        : `${key} is a ${operation.kind} operation, which Kassa cannot read back: settle it at the provider.`,
    );
  }
  if (operation.state !== 'flagged') throw notFlagged(operation);
  return { operation, resolve: handler.resolve };
}

/** One more read of the provider, changing nothing; refused when it cannot be read or may still arrive. */
async function readOnceMore(
  ctx: AppContext,
  operation: OperationRow,
  resolve: NonNullable<OperationHandlers[string]['resolve']>,
): Promise<FlaggedReading> {
  let reading: FlaggedReading;
  try {
    reading = await resolve(ctx, operation);
  } catch (error) {
    if (error instanceof DomainError) throw error;
    const reason = error instanceof Error ? error.message : String(error);
    throw new DomainError(
      502,
      `Kassa could not read ${operation.idempotency_key} back from ${operation.provider} (${reason}). Nothing changed; resolve it once the provider answers.`,
    );
  }
  const until = mayArriveUntil(ctx.config, operation);
  if (reading.outcome === null && ctx.clock().getTime() < until) {
    throw new ConflictError(
      `${operation.provider} has no trace of ${operation.idempotency_key} yet, but the call may still reach it until ${new Date(until).toISOString()}. Nothing changed; resolve it after that.`,
    );
  }
  return reading;
}

async function slugOf(trx: Executor, organizationId: number): Promise<string> {
  const row = await trx
    .selectFrom('organizations')
    .select('slug')
    .where('id', '=', organizationId)
    .executeTakeFirstOrThrow();
  return row.slug;
}

/**
 * What a recorded answer still waits for, in words; null when it is final. The reconciler records such an
 * answer and leaves the rest to the subject's own sync (the payment's, the refund's, the checkout page).
 */
function stillWaiting(outcome: KnownOutcome): string | null {
  if (outcome.status === 'requires_action') return "still waiting for the customer's authentication";
  if (outcome.status === 'pending') return 'still processing at the provider';
  return null;
}

/** The answer of kassa operation resolve: the call, what the provider showed and recorded, its subject after. */
export interface ResolvedOperation {
  operation: string;
  kind: string;
  organization: string;
  provider: string;
  provider_shows: string;
  provider_object_id: string | null;
  outcome: KnownOutcome['status'];
  outcome_code: string | null;
  /** What the answer recorded still waits for (the customer's authentication, …); null when final. */
  waiting: string | null;
  /** The subject's state after (ResolvedSubject.state: payment_status, refund_status, …). */
  [field: string]: unknown;
}

/**
 * Resolves a flagged provider call (its idempotency key) from one more read of the provider. Throws a
 * DomainError, with nothing changed, when the call is not flagged, the provider cannot be read or has no
 * trace of it while it may still arrive, or its kind has a command of its own. An answer that is not final
 * (processing, waiting for the customer) is recorded as the reconciler records it, and `waiting` says so.
 */
export async function resolveFlaggedOperation(
  ctx: AppContext,
  handlers: OperationHandlers,
  key: string,
  actor: Actor = OPERATOR,
): Promise<ResolvedOperation> {
  const { operation, resolve } = await flaggedOperation(ctx, handlers, key);
  const reading = await readOnceMore(ctx, operation, resolve);
  const outcome = reading.outcome ?? NEVER_MADE_OUTCOME;
  const result = await ctx.db.transaction().execute(async (trx) => {
    const now = ctx.clock().toISOString();
    if (!(await settleFlaggedOperation(trx, operation.id, outcome, reading.providerObjectId, now))) {
      throw notFlagged((await operationByKey(trx, key)) ?? operation);
    }
    const subject = await reading.record(trx, now);
    const recorded = {
      outcome: outcome.status,
      outcome_code: outcome.status === 'failed' ? outcome.code : null,
    };
    await recordAudit(
      trx,
      subject.organizationId,
      actor,
      {
        action: 'provider_operation.resolved',
        target: subject.target,
        details: {
          operation: key,
          kind: operation.kind,
          provider: operation.provider,
          provider_shows: reading.shows,
          provider_object_id: reading.providerObjectId,
          ...recorded,
          ...subject.state,
        },
      },
      now,
    );
    return { organization: await slugOf(trx, subject.organizationId), recorded, subject };
  });
  await reading.afterCommit?.();
  return {
    operation: key,
    kind: operation.kind,
    organization: result.organization,
    provider: operation.provider,
    provider_shows: reading.shows,
    provider_object_id: reading.providerObjectId,
    ...result.recorded,
    waiting: stillWaiting(outcome),
    ...result.subject.state,
  };
}

/** The flagged calls of every kind and organization (or one), oldest flag first: what waits for the operator. */
export async function listFlaggedOperations(
  db: Executor,
  handlers: OperationHandlers,
  filter: { org?: string; kind?: string; limit: number },
) {
  let query = db
    .selectFrom('provider_operations')
    .leftJoin('organizations', 'organizations.id', 'provider_operations.organization_id')
    .select([
      'provider_operations.idempotency_key',
      'provider_operations.kind',
      'provider_operations.provider',
      'provider_operations.environment',
      'provider_operations.reference',
      'provider_operations.outcome',
      'provider_operations.last_read_error',
      'provider_operations.created_at',
      'provider_operations.flagged_at',
      'organizations.slug',
    ])
    .where('provider_operations.state', '=', 'flagged');
  if (filter.org !== undefined) query = query.where('organizations.slug', '=', filter.org);
  if (filter.kind !== undefined) query = query.where('provider_operations.kind', '=', filter.kind);
  const rows = await query
    .orderBy('provider_operations.flagged_at')
    .orderBy('provider_operations.id')
    .limit(filter.limit)
    .execute();
  return rows.map((row) => {
    const handler = handlers[row.kind];
    return {
      operation: row.idempotency_key,
      kind: row.kind,
      organization: row.slug,
      environment: row.environment,
      provider: row.provider,
      // The payment (TX…), refund (RF…) or subscription (SU…) the call was about.
      reference: row.reference,
      // refused: the provider refused every call for its limit (a renewal try); unknown: not read back.
      why: row.outcome === 'failed' ? 'refused' : 'unknown',
      reason: row.last_read_error,
      called_at: row.created_at,
      flagged_at: row.flagged_at,
      // The command that resolves it (null: a kind Kassa cannot read back).
      resolve: handler?.resolve
        ? `kassa operation resolve ${row.idempotency_key}`
        : (handler?.resolvedBy?.(row.idempotency_key) ?? null),
    };
  });
}
