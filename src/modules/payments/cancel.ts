// The expiry's stop at the provider as a provider operation (payment_cancel, kassa-cancel-{payment TX…}).
// The expirer asks the provider for one last look at an expired checkout's payment and to cancel it
// (sync.ts, stopAtProvider). A stop the provider does not answer proves nothing: the customer's browser
// may still pay, so the payment may not be failed. Were the expirer to ask again at every round, a
// provider that stays silent would leave the payment `processing` for ever, seen by no one. Recorded here
// as an operation whose outcome is unknown, it is retried by the reconciler on KASSA_RECONCILE_SCHEDULE_MS
// and flagged for review after the last read, like every provider call whose answer Kassa lacks
// (reconcile.ts, payment_cancel), and the expirer leaves its payment alone while it is open.
// The same stop, under the same key, ends a `pending` payment the bank declined (sync.ts, stopIfDeclined):
// its provider payment takes a payment method again, so it is canceled before the payment is failed.
import type { ExpressionBuilder } from 'kysely';
import type { AppContext } from '../../context.ts';
import type { Database } from '../../db/database.ts';
import { recordOperation, reopenOperation, settleOperation } from '../../provider/operations/store.ts';
import { OPEN_OPERATION_STATES } from '../../provider/operations/table.ts';

export const CANCEL_KIND = 'payment_cancel';

/** The operation's key: one per payment, made again (reopened) if the expirer stops it again later. */
export function cancelKey(paymentPublicId: string): string {
  return `kassa-cancel-${paymentPublicId}`;
}

/**
 * Records the expirer's unanswered stop of a payment as a payment_cancel operation whose outcome is
 * unknown (its first read on the reconciler's schedule). Its key may have been used before (a flagged
 * stop resolved while the provider payment was still open, which the expirer then stopped again): that
 * row is reopened, so its reads and its flag count from this stop.
 */
export async function handCancelToReconciler(
  ctx: AppContext,
  paymentId: number,
  error: Error,
): Promise<void> {
  const schedule = ctx.config.reconcileScheduleMs;
  await ctx.db.transaction().execute(async (trx) => {
    const now = ctx.clock().toISOString();
    const payment = await trx
      .selectFrom('payments')
      .select(['id', 'public_id', 'provider', 'provider_payment_id', 'organization_id', 'environment'])
      .where('id', '=', paymentId)
      .executeTakeFirstOrThrow();
    let operation = await recordOperation(
      trx,
      {
        kind: CANCEL_KIND,
        idempotencyKey: cancelKey(payment.public_id),
        provider: payment.provider,
        environment: payment.environment,
        organizationId: payment.organization_id,
        subjectType: 'payment',
        subjectId: payment.id,
        reference: payment.public_id,
        context: { provider_payment_id: payment.provider_payment_id },
      },
      now,
      schedule,
    );
    if (operation.state === 'done') operation = await reopenOperation(trx, operation.id, now, schedule);
    await settleOperation(trx, operation.id, { status: 'unknown', reason: error.message }, null, now);
  });
}

/**
 * A payment whose stop is not with the reconciler (neither being read back nor flagged for review): the
 * expirer takes only those, and counts only those as due; a read stops only those (sync.ts,
 * stopIfDeclined). For a query on `payments`.
 */
export function cancelNotInReconciliation(eb: ExpressionBuilder<Database, 'payments'>) {
  return eb.not(
    eb.exists(
      eb
        .selectFrom('provider_operations')
        .select('provider_operations.id')
        .where('provider_operations.subject_type', '=', 'payment')
        .whereRef('provider_operations.subject_id', '=', 'payments.id')
        .where('provider_operations.kind', '=', CANCEL_KIND)
        .where('provider_operations.state', 'in', OPEN_OPERATION_STATES),
    ),
  );
}
