// Refund queries. Every lookup by id is scoped by organization (and environment for API keys).
import { isPostgres } from '../../db/connection.ts';
import type { Executor } from '../../db/database.ts';
import { isPublicId, parseNumericId } from '../../lib/ids.ts';
import { toBigInt } from '../../lib/money.ts';
import type { Environment } from '../api-keys/table.ts';
import type { RefundRow, RefundStatus } from './table.ts';

export interface Scope {
  organizationId: number;
  /** null: the dashboard, which sees both environments. */
  environment: Environment | null;
}

/** The payment a refund request names (public TX id or numeric id), locked on PostgreSQL. */
export async function lockPayment(trx: Executor, scope: Scope, reference: string) {
  const numeric = parseNumericId(reference);
  if (numeric === null && !isPublicId('payment', reference)) return undefined;
  let query = trx.selectFrom('payments').selectAll().where('organization_id', '=', scope.organizationId);
  if (scope.environment) query = query.where('environment', '=', scope.environment);
  query = numeric === null ? query.where('public_id', '=', reference) : query.where('id', '=', numeric);
  return (isPostgres(trx) ? query.forUpdate() : query).executeTakeFirst();
}

export async function lockPaymentById(trx: Executor, paymentId: number) {
  const query = trx.selectFrom('payments').selectAll().where('id', '=', paymentId);
  return (isPostgres(trx) ? query.forUpdate() : query).executeTakeFirstOrThrow();
}

/**
 * What stops a new refund of a payment besides its amounts, in one read: a refund in flight, and a refund
 * whose provider contradicts it (conflict-flag.ts), by its public id.
 */
export async function refundBlockers(
  db: Executor,
  paymentId: number,
): Promise<{ inFlight: boolean; conflict: string | null }> {
  const rows = await db
    .selectFrom('refunds')
    .select(['public_id', 'status', 'provider_conflict'])
    .where('payment_id', '=', paymentId)
    .where((eb) =>
      eb.or([eb('status', 'in', ['pending', 'processing']), eb('provider_conflict', 'is not', null)]),
    )
    .orderBy('id')
    .execute();
  return {
    inFlight: rows.some((row) => row.status === 'pending' || row.status === 'processing'),
    conflict: rows.find((row) => row.provider_conflict !== null)?.public_id ?? null,
  };
}

/** What the provider has refunded of a payment so far (HT basis): the sum over completed refunds. */
export async function completedRefundHt(db: Executor, paymentId: number): Promise<bigint> {
  const row = await db
    .selectFrom('refunds')
    .select((eb) => eb.fn.sum<number | string | null>('amount_in_cents').as('total'))
    .where('payment_id', '=', paymentId)
    .where('status', '=', 'completed')
    .executeTakeFirst();
  return toBigInt(row?.total ?? 0);
}

/** A refund with its payment's public id, as the API presents it. */
export function selectRefunds(db: Executor) {
  return db
    .selectFrom('refunds')
    .innerJoin('payments', 'payments.id', 'refunds.payment_id')
    .selectAll('refunds')
    .select('payments.public_id as payment_public_id');
}

export type RefundWithPayment = RefundRow & { payment_public_id: string };

export async function findRefund(
  db: Executor,
  scope: Scope,
  given: string,
): Promise<RefundWithPayment | undefined> {
  const numeric = parseNumericId(given);
  // The creation response's refund_public_id is the public id without its RF prefix: accept it too.
  const reference = !isPublicId('refund', given) && isPublicId('refund', `RF${given}`) ? `RF${given}` : given;
  if (numeric === null && !isPublicId('refund', reference)) return undefined;
  let query = selectRefunds(db).where('refunds.organization_id', '=', scope.organizationId);
  if (scope.environment) query = query.where('refunds.environment', '=', scope.environment);
  query =
    numeric === null
      ? query.where('refunds.public_id', '=', reference)
      : query.where('refunds.id', '=', numeric);
  return query.executeTakeFirst();
}

export function getRefund(db: Executor, refundId: number) {
  return db.selectFrom('refunds').selectAll().where('id', '=', refundId).executeTakeFirst();
}

/**
 * Moves a refund from one of `from` to `to`. Returns false when another process moved it first:
 * the conditional update is what makes each transition happen once.
 */
export async function transitionRefund(
  trx: Executor,
  refundId: number,
  from: RefundStatus[],
  to: RefundStatus,
  changes: { provider_refund_id?: string | null; error_message?: string | null },
  now: string,
): Promise<boolean> {
  const result = await trx
    .updateTable('refunds')
    .set({ status: to, ...changes, updated_at: now })
    .where('id', '=', refundId)
    .where('status', 'in', from)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Refunds the sync loop looks at: processing ones, and pending ones whose provider call never answered. */
export function refundsToSync(db: Executor, pendingBefore: string, limit: number) {
  return db
    .selectFrom('refunds')
    .selectAll()
    .where((eb) =>
      eb.or([
        eb('status', '=', 'processing'),
        eb.and([eb('status', '=', 'pending'), eb('updated_at', '<', pendingBefore)]),
      ]),
    )
    .orderBy('updated_at')
    .limit(limit)
    .execute();
}

/** Whether a database error is the one-refund-in-flight unique index refusing a second refund. */
export function isInFlightConflict(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const constraint = 'constraint' in error ? String(error.constraint) : '';
  return (
    constraint === 'refunds_one_in_flight' ||
    /refunds_one_in_flight|UNIQUE constraint failed: refunds\.payment_id/.test(error.message)
  );
}
