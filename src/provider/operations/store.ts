// Write-ahead operation rows: one is committed before every provider call (in the caller's transaction,
// with the change that needs the call), and settled with the provider's answer afterwards. A crash at any
// point leaves a row the reconciler finishes (reconciler.ts).

import type { UpdateQueryBuilder, UpdateResult } from 'kysely';
import { isPostgres } from '../../db/connection.ts';
import type { Database, Executor } from '../../db/database.ts';
import { deferWrite } from '../../db/write-behind.ts';
import type { Environment } from '../../modules/api-keys/table.ts';
import type { KnownOutcome, ProviderOutcome } from '../types.ts';
import { OPEN_OPERATION_STATES, type OperationRow, READ_OPERATION_STATES } from './table.ts';

export interface NewOperation {
  kind: string;
  idempotencyKey: string;
  provider: string;
  environment: Environment;
  organizationId: number | null;
  subjectType: string;
  subjectId: number;
  reference: string;
  /** What a read needs besides the reference (never card data). */
  context?: Record<string, string | number | null>;
}

/** Outcome code of a write the provider still had no record of at a later read: it was never made. */
export const NEVER_MADE = 'never_reached_provider';

function at(start: string, offsetMs: number): string {
  return new Date(Date.parse(start) + offsetMs).toISOString();
}

function operationValues(operation: NewOperation, now: string, scheduleMs: readonly number[]) {
  return {
    organization_id: operation.organizationId,
    environment: operation.environment,
    provider: operation.provider,
    kind: operation.kind,
    idempotency_key: operation.idempotencyKey,
    subject_type: operation.subjectType,
    subject_id: operation.subjectId,
    reference: operation.reference,
    context: JSON.stringify(operation.context ?? {}),
    state: 'in_flight' as const,
    outcome: null,
    outcome_code: null,
    outcome_message: null,
    provider_object_id: null,
    next_read_at: at(now, scheduleMs[0] ?? 60_000),
    last_read_at: null,
    last_read_error: null,
    flagged_at: null,
    created_at: now,
    updated_at: now,
  };
}

/**
 * Records the operation before its call. The same key again (a retry of the same write) returns the row
 * already there, so a write is made under one key however often its caller starts it.
 */
export async function recordOperation(
  trx: Executor,
  operation: NewOperation,
  now: string,
  scheduleMs: readonly number[],
): Promise<OperationRow> {
  const inserted = await trx
    .insertInto('provider_operations')
    .values(operationValues(operation, now, scheduleMs))
    .onConflict((conflict) => conflict.column('idempotency_key').doNothing())
    .returningAll()
    .executeTakeFirst();
  if (inserted) return inserted;
  return trx
    .selectFrom('provider_operations')
    .selectAll()
    .where('idempotency_key', '=', operation.idempotencyKey)
    .executeTakeFirstOrThrow();
}

/** An operation recorded by recordNewOperation: its row but the id, which was not read back. */
export type NewOperationRow = Omit<OperationRow, 'id'> & { id: null };

/**
 * Records the operation of a subject made in the caller's transaction (a payment just opened), whose key
 * no earlier call can have taken: nothing needs reading back, so the insert is held with the
 * transaction's other writes (write-behind.ts) and sent with them, in the transaction, before the commit
 * that precedes the call. A key taken all the same fails the transaction (the unique key), never
 * silently. Settle it by its key (settleOperation).
 */
export async function recordNewOperation(
  trx: Executor,
  operation: NewOperation,
  now: string,
  scheduleMs: readonly number[],
): Promise<NewOperationRow> {
  const values = operationValues(operation, now, scheduleMs);
  await deferWrite(trx, trx.insertInto('provider_operations').values(values));
  return { ...values, id: null, reads: 0 };
}

/**
 * Records the answer to the call. A known outcome settles the row (done); `unknown` leaves it for the
 * reconciler, whose first read is already scheduled. A row already settled keeps its answer, except the
 * reconciler's "never made" conclusion, which a late real answer replaces.
 */
type OperationUpdate = UpdateQueryBuilder<
  Database,
  'provider_operations',
  'provider_operations',
  UpdateResult
>;

export async function settleOperation(
  trx: Executor,
  /** The row's id, or its idempotency key (a row recorded by recordNewOperation). */
  operation: number | { key: string },
  outcome: ProviderOutcome,
  providerObjectId: string | null,
  now: string,
): Promise<void> {
  // Nothing is read back (whether the row was still open is the guard's to decide): the update goes with
  // the transaction's next statement (write-behind.ts).
  const row = (query: OperationUpdate) =>
    typeof operation === 'number'
      ? query.where('id', '=', operation)
      : query.where('idempotency_key', '=', operation.key);
  if (outcome.status === 'unknown') {
    await deferWrite(
      trx,
      row(
        trx
          .updateTable('provider_operations')
          .set({ state: 'unknown', last_read_error: outcome.reason.slice(0, 500), updated_at: now }),
      ).where('state', '=', 'in_flight'),
    );
    return;
  }
  await deferWrite(
    trx,
    row(trx.updateTable('provider_operations').set(settled(outcome, providerObjectId, now))).where((eb) =>
      eb.or([eb('state', 'in', OPEN_OPERATION_STATES), eb('outcome_code', '=', NEVER_MADE)]),
    ),
  );
}

function settled(outcome: KnownOutcome, providerObjectId: string | null, now: string) {
  return {
    state: 'done' as const,
    outcome: outcome.status,
    outcome_code: outcome.status === 'failed' ? outcome.code : null,
    outcome_message: outcome.status === 'failed' ? outcome.message.slice(0, 500) : null,
    provider_object_id: providerObjectId,
    next_read_at: null,
    updated_at: now,
  };
}

/**
 * Settles a flagged operation with the outcome an operator's resolution established (kassa operation
 * resolve, kassa renewal resolve), in the caller's transaction; false when it is no longer flagged
 * (another resolution settled it first), so an operation is resolved once.
 */
export async function settleFlaggedOperation(
  trx: Executor,
  operationId: number,
  outcome: KnownOutcome,
  providerObjectId: string | null,
  now: string,
): Promise<boolean> {
  const result = await trx
    .updateTable('provider_operations')
    .set({ ...settled(outcome, providerObjectId, now), last_read_at: now })
    .where('id', '=', operationId)
    .where('state', '=', 'flagged')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** How many operations are flagged for review, by kind (kassa doctor, /metrics). */
export async function flaggedOperationCounts(db: Executor): Promise<{ kind: string; count: number }[]> {
  const rows = await db
    .selectFrom('provider_operations')
    .select(['kind', (eb) => eb.fn.countAll<number>().as('count')])
    .where('state', '=', 'flagged')
    .groupBy('kind')
    .orderBy('kind')
    .execute();
  return rows.map((row) => ({ kind: row.kind, count: Number(row.count) }));
}

/**
 * Makes a settled operation the write-ahead row of a new call under the same key: the provider refused
 * the earlier call before it did anything (Stripe saves no idempotent result for a request it refused),
 * so the same write is made again and its answer recorded, or read back by the reconciler, as a first one.
 */
export async function reopenOperation(
  trx: Executor,
  operationId: number,
  now: string,
  scheduleMs: readonly number[],
): Promise<OperationRow> {
  return trx
    .updateTable('provider_operations')
    .set({
      state: 'in_flight',
      outcome: null,
      outcome_code: null,
      outcome_message: null,
      provider_object_id: null,
      // A new call: the reconciler's reads and its "never made" margin count from it, not from the
      // refused one (an old created_at would let a lost answer be taken for never made at the first
      // read, and the next try charge again while this one still lands).
      created_at: now,
      reads: 0,
      next_read_at: at(now, scheduleMs[0] ?? 60_000),
      last_read_at: null,
      last_read_error: null,
      flagged_at: null,
      updated_at: now,
    })
    .where('id', '=', operationId)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** How many operations of a kind a subject has had: the n of its next key (kassa-pay-{id}-{n}). */
export async function countOperations(
  trx: Executor,
  subjectType: string,
  subjectId: number,
  kind: string,
): Promise<number> {
  const row = await trx
    .selectFrom('provider_operations')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('subject_type', '=', subjectType)
    .where('subject_id', '=', subjectId)
    .where('kind', '=', kind)
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

/** The operations of a subject whose outcome is not known (still being reconciled, or flagged), oldest first. */
export function unresolvedOperationsOf(db: Executor, subjectType: string, subjectIds: number[]) {
  if (subjectIds.length === 0) return Promise.resolve([] as OperationRow[]);
  return db
    .selectFrom('provider_operations')
    .selectAll()
    .where('subject_type', '=', subjectType)
    .where('subject_id', 'in', subjectIds)
    .where('state', 'in', ['unknown', 'flagged'])
    .orderBy('id')
    .execute();
}

export function operationByKey(db: Executor, idempotencyKey: string) {
  return db
    .selectFrom('provider_operations')
    .selectAll()
    .where('idempotency_key', '=', idempotencyKey)
    .executeTakeFirst();
}

/**
 * Claims up to `limit` operations due for a read, leasing them for `leaseMs` (other workers skip them:
 * SKIP LOCKED on PostgreSQL; SQLite has one writer).
 */
export async function claimDueOperations(trx: Executor, now: string, leaseMs: number, limit: number) {
  let due = trx
    .selectFrom('provider_operations')
    .select('id')
    .where('state', 'in', READ_OPERATION_STATES)
    .where('next_read_at', '<=', now)
    .orderBy('next_read_at')
    .limit(limit);
  if (isPostgres(trx)) due = due.forUpdate().skipLocked();
  return trx
    .updateTable('provider_operations')
    .set({ next_read_at: at(now, leaseMs) })
    .where('id', 'in', due)
    .returningAll()
    .execute();
}

/** The reconciler's next due time: the earliest read of an operation still in flight or unknown. */
export async function nextOperationReadDue(db: Executor): Promise<number | null> {
  const row = await db
    .selectFrom('provider_operations')
    .select((eb) => eb.fn.min('next_read_at').as('due'))
    .where('state', 'in', READ_OPERATION_STATES)
    .executeTakeFirst();
  return row?.due ? Date.parse(String(row.due)) : null;
}
