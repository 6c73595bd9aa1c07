// The reconciler: finishes provider calls whose answer was lost. An operation row still in flight after
// its call's time (the process died), or whose call answered `unknown`, is read back from the provider by
// its key or reference, on the schedule KASSA_RECONCILE_SCHEDULE_MS counts from the call (1 min, 5 min,
// 1 h, 6 h, 20 h). It never makes the write again: a charge whose answer was lost is found, not repeated.
// - The provider has it: its state is recorded through the subject's own transition (the handler's read),
//   and the row is done with the outcome it shows.
// - The provider has no record of it at the second read or later (past any call's time and any search
//   lag): it was never made; the row is done as failed `never_reached_provider`, and the handler may free
//   what waited on it (the checkout's attempt lock).
// - The read fails, or the handler finds the provider and Kassa disagree (charged, but the payment failed
//   meanwhile): the row stays unknown until the last read, then it is flagged for review (dashboard).
import type { Config } from '../../config.ts';
import type { AppContext } from '../../context.ts';
import type { Executor } from '../../db/database.ts';
import type { KnownOutcome } from '../types.ts';
import { claimDueOperations, NEVER_MADE, settleOperation } from './store.ts';
import { type OperationRow, READ_OPERATION_STATES } from './table.ts';

export interface OperationRead {
  /** The outcome the provider's state shows for this write; null when the provider has no record of it. */
  outcome: KnownOutcome | null;
  providerObjectId?: string | null;
  /** Set when the provider and Kassa disagree in a way no transition may settle: flagged at once. */
  conflict?: string | null;
  /** The provider has the write but has not decided it yet (with `outcome` null): read again later. */
  pending?: boolean;
}

export interface OperationHandler {
  /** Reads the provider's state by the operation's key or reference and records it (idempotently). */
  read(ctx: AppContext, operation: OperationRow): Promise<OperationRead>;
  /** The write was never made: release what waited for its answer. */
  neverMade?(ctx: AppContext, operation: OperationRow): Promise<void>;
  /**
   * kassa operation resolve (resolve.ts): reads a flagged operation back once more, changing nothing,
   * and says what to record through the same path as `read` and `neverMade` (the same reading and the
   * same transitions: an answer `read` would record, final or not, is recorded the same way). Absent:
   * the kind is resolved otherwise (`resolvedBy`).
   */
  resolve?(ctx: AppContext, operation: OperationRow): Promise<FlaggedReading>;
  /** The command that resolves a call of this kind when it has no `resolve` (a renewal try has its own). */
  resolvedBy?: (idempotencyKey: string) => string;
}

/** What one more read of a flagged operation shows, and how to record it (resolve.ts). */
export interface FlaggedReading {
  /** What the provider shows, in words (the answer and the audit entry). */
  shows: string;
  /** The outcome the provider shows for this write; null when it has no trace of it (never made). */
  outcome: KnownOutcome | null;
  providerObjectId: string | null;
  /**
   * Records it through the call's own path, in the resolution's transaction (after the operation was
   * settled in it), and returns the subject as it stands after.
   */
  record(trx: Executor, now: string): Promise<ResolvedSubject>;
  /** What follows the commit (a dunned period retried with the new card, …). */
  afterCommit?(): Promise<void>;
}

export interface ResolvedSubject {
  organizationId: number;
  /** The audit entry's target (the payment TX…, the refund RF…, the checkout CS…). */
  target: { type: string; id: string };
  /** What the operator's answer shows of it after (its status, …). */
  state: Record<string, unknown>;
}

export type OperationHandlers = Record<string, OperationHandler>;

const BATCH = 50;
/**
 * Past twice the provider timeout, how much longer a call may still arrive, and then show in a search:
 * the client's pause before its retry, the time from the row to the call, and Stripe's search lag
 * (usually under a minute; helper-30's review).
 */
const ARRIVAL_MARGIN_MS = 60_000;
/** A write the provider does not know is "never made" from this read on (the first may race a slow call). */
const NEVER_MADE_FROM_READ = 2;

/** The outcome of a write the provider has no record of, once it can no longer arrive: never made. */
export const NEVER_MADE_OUTCOME: KnownOutcome = {
  status: 'failed',
  code: NEVER_MADE,
  message: 'The provider has no record of this call: it never reached the provider.',
  retryable: true,
};

/**
 * A call gives up waiting after KASSA_PROVIDER_TIMEOUT_MS but is not cancelled: Stripe's client sends it
 * once more under the same key, so it may reach the provider up to twice that long after it started.
 * Until then "no record" proves nothing, whatever the read (helper-28's review: with a long timeout, a
 * refund taken for never made, its hold released, was then made at Stripe). The time it may arrive until.
 */
export function mayArriveUntil(
  config: Pick<Config, 'providerTimeoutMs'>,
  operation: Pick<OperationRow, 'created_at'>,
): number {
  return Date.parse(operation.created_at) + 2 * config.providerTimeoutMs + ARRIVAL_MARGIN_MS;
}

async function recordRead(
  ctx: AppContext,
  operation: OperationRow,
  patch: { state: 'unknown' | 'flagged'; error: string },
) {
  const now = ctx.clock().toISOString();
  const reads = Number(operation.reads) + 1;
  const schedule = ctx.config.reconcileScheduleMs;
  const last = reads >= schedule.length || patch.state === 'flagged';
  await ctx.db
    .updateTable('provider_operations')
    .set({
      reads,
      last_read_at: now,
      last_read_error: patch.error.slice(0, 500),
      ...(last
        ? { state: 'flagged', flagged_at: now, next_read_at: null }
        : { next_read_at: new Date(Date.parse(operation.created_at) + schedule[reads]).toISOString() }),
      updated_at: now,
    })
    .where('id', '=', operation.id)
    .where('state', 'in', READ_OPERATION_STATES)
    .execute();
}

/** Reads one operation back; returns whether it was settled. */
export async function reconcileOperation(
  ctx: AppContext,
  handlers: OperationHandlers,
  operation: OperationRow,
): Promise<boolean> {
  const handler = handlers[operation.kind];
  if (!handler) {
    await recordRead(ctx, operation, { state: 'flagged', error: `no reconciler for "${operation.kind}"` });
    return false;
  }
  let read: OperationRead;
  try {
    read = await handler.read(ctx, operation);
  } catch (error) {
    await recordRead(ctx, operation, { state: 'unknown', error: `read failed: ${String(error)}` });
    return false;
  }
  if (read.conflict) {
    await recordRead(ctx, operation, { state: 'flagged', error: read.conflict });
    return false;
  }
  if (read.outcome === null && read.pending) {
    // Not "never made": read again on the schedule, flagged for a person after the last read.
    await recordRead(ctx, operation, { state: 'unknown', error: 'the provider has not decided it yet' });
    return false;
  }
  const now = ctx.clock().toISOString();
  const reads = Number(operation.reads) + 1;
  if (read.outcome === null) {
    const mayStillArrive = Date.parse(now) < mayArriveUntil(ctx.config, operation);
    if ((reads < NEVER_MADE_FROM_READ || mayStillArrive) && reads < ctx.config.reconcileScheduleMs.length) {
      await recordRead(ctx, operation, { state: 'unknown', error: 'the provider has no record of it yet' });
      return false;
    }
    const outcome = NEVER_MADE_OUTCOME;
    // What waited is released first: a crash before the row is settled reads it again, harmlessly.
    await handler.neverMade?.(ctx, operation);
    await ctx.db.transaction().execute(async (trx) => {
      await settleOperation(trx, operation.id, outcome, null, now);
      await trx
        .updateTable('provider_operations')
        .set({ reads, last_read_at: now })
        .where('id', '=', operation.id)
        .execute();
    });
    return true;
  }
  await ctx.db.transaction().execute(async (trx) => {
    await settleOperation(
      trx,
      operation.id,
      read.outcome as KnownOutcome,
      read.providerObjectId ?? null,
      now,
    );
    await trx
      .updateTable('provider_operations')
      .set({ reads, last_read_at: now, last_read_error: null })
      .where('id', '=', operation.id)
      .execute();
  });
  return true;
}

/** Worker step: every operation due for a read. Returns how many were settled. */
export async function reconcileDue(ctx: AppContext, handlers: OperationHandlers): Promise<number> {
  const now = ctx.clock().toISOString();
  // The lease outlasts one read (a provider call); another worker may take the row over after it, harmlessly.
  const leaseMs = 2 * ctx.config.providerTimeoutMs;
  const due = await ctx.db.transaction().execute((trx) => claimDueOperations(trx, now, leaseMs, BATCH));
  let settled = 0;
  for (const operation of due) {
    try {
      if (await reconcileOperation(ctx, handlers, operation)) settled += 1;
    } catch {
      // Left leased; read again once the lease runs out.
    }
  }
  return settled;
}
