// Refund sync: the worker loop (every KASSA_SYNC_INTERVAL_MS) and the provider-webhook path both re-read
// refunds from the provider and record what changed. A pending refund's lost answer is the reconciler's:
// it reads the refund back by its reference (refundOperationHandlers), never sending it twice.
import type { Executor } from '../../db/database.ts';
import type { OperationHandler, OperationHandlers } from '../../provider/operations/reconciler.ts';
import { operationByKey } from '../../provider/operations/store.ts';
import type { RefundDeps } from './service.ts';
import { recordRefundOperation, recordSubmitted, refundOutcome, submitToProvider } from './service.ts';
import * as store from './store.ts';
import type { RefundRow } from './table.ts';
import { recordProviderAnswer } from './transitions.ts';

const BATCH = 100;
/** A pending refund this old without an operation row predates them (made before migration 009). */
const PENDING_RETRY_MS = 10_000;

async function paymentOf(db: Executor, refund: Pick<RefundRow, 'payment_id'>) {
  return db
    .selectFrom('payments')
    .select(['provider', 'provider_payment_id'])
    .where('id', '=', refund.payment_id)
    .executeTakeFirstOrThrow();
}

/** Syncs each refund; one that fails does not stop the others (the first error is rethrown after). */
async function syncEach(deps: RefundDeps, refunds: RefundRow[]): Promise<number> {
  let changed = 0;
  let failure: unknown = null;
  for (const refund of refunds) {
    try {
      if (await syncRefund(deps, refund)) changed += 1;
    } catch (error) {
      failure ??= error;
    }
  }
  if (failure !== null) throw failure;
  return changed;
}

/** A pending refund made before operation rows existed: submitted under its row now (the same key). */
async function submitLegacyPending(deps: RefundDeps, refund: RefundRow): Promise<boolean> {
  if (await operationByKey(deps.db, `kassa-refund-${refund.public_id}`)) return false;
  const payment = await paymentOf(deps.db, refund);
  const operation = await deps.db
    .transaction()
    .execute((trx) => recordRefundOperation(deps, trx, refund, payment, deps.clock().toISOString()));
  const state = await submitToProvider(deps, refund, payment, operation);
  if (state === null) return false;
  const after = await recordSubmitted(deps, refund.id, operation, state);
  return after.status !== refund.status;
}

/** Re-reads one refund from the provider and records it; true when its status changed. */
export async function syncRefund(deps: RefundDeps, refund: RefundRow): Promise<boolean> {
  if (refund.status === 'pending' || !refund.provider_refund_id) return submitLegacyPending(deps, refund);
  const { provider } = await paymentOf(deps.db, refund);
  const state = await deps.providers
    .named(provider)
    .getRefund(refund.provider_refund_id)
    .catch(() => null);
  if (state === null || (state.status === 'processing' && refund.status === 'processing')) return false;
  const after = await recordProviderAnswer(deps, refund.id, state);
  return after.status !== refund.status;
}

/** Worker step: every processing refund (and pending ones older than operation rows). Returns how many changed. */
export async function syncRefunds(deps: RefundDeps): Promise<number> {
  const pendingBefore = new Date(deps.clock().getTime() - PENDING_RETRY_MS).toISOString();
  const refunds = await store.refundsToSync(deps.db, pendingBefore, BATCH);
  return syncEach(deps, refunds);
}

/** The provider-webhook path: the refunds the provider says changed, by the provider's refund ids. */
export async function syncRefundsByProviderIds(
  deps: RefundDeps,
  providerRefundIds: string[],
): Promise<number> {
  if (providerRefundIds.length === 0) return 0;
  const refunds = await deps.db
    .selectFrom('refunds')
    .selectAll()
    .where('provider_refund_id', 'in', providerRefundIds)
    .where('status', 'in', ['pending', 'processing'])
    .execute();
  return syncEach(deps, refunds);
}

const refundOperation: OperationHandler = {
  async read(ctx, operation) {
    const context = JSON.parse(operation.context) as { provider_payment_id?: string | null };
    if (!context.provider_payment_id) return { outcome: null };
    const state = await ctx.providers
      .named(operation.provider)
      .findRefund(operation.reference, context.provider_payment_id);
    if (!state) return { outcome: null };
    await recordProviderAnswer(ctx, operation.subject_id, state);
    return { outcome: refundOutcome(state), providerObjectId: state.providerRefundId };
  },
  /** Never sent: the refund fails and its hold is released; the merchant may refund again. */
  async neverMade(ctx, operation) {
    await recordProviderAnswer(ctx, operation.subject_id, {
      providerRefundId: '',
      status: 'failed',
      errorMessage: 'The refund never reached the provider; nothing was refunded.',
    });
  },
};

export const refundOperationHandlers: OperationHandlers = { refund: refundOperation };

/** refund-sync's next due time: now while a refund is pending or processing, else nothing. */
export async function nextRefundSyncDue(deps: RefundDeps): Promise<'now' | null> {
  const row = await deps.db
    .selectFrom('refunds')
    .select('id')
    .where('status', 'in', ['pending', 'processing'])
    .limit(1)
    .executeTakeFirst();
  return row ? 'now' : null;
}
