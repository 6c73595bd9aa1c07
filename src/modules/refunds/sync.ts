// Refund sync: the worker loop (every KASSA_SYNC_INTERVAL_MS) and the provider-webhook path both
// re-read refunds from the provider and record what changed.
import type { Executor } from '../../db/database.ts';
import type { RefundDeps } from './service.ts';
import { submitToProvider } from './service.ts';
import * as store from './store.ts';
import type { RefundRow } from './table.ts';
import { recordProviderAnswer } from './transitions.ts';

const BATCH = 100;
/** A pending refund older than this lost its provider answer (crash, timeout) and is submitted again. */
const PENDING_RETRY_MS = 10_000;

async function paymentOf(db: Executor, refund: RefundRow) {
  return db
    .selectFrom('payments')
    .select('provider_payment_id')
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

/** Re-reads one refund from the provider and records it; true when its status changed. */
export async function syncRefund(deps: RefundDeps, refund: RefundRow): Promise<boolean> {
  const state =
    refund.status === 'pending' || !refund.provider_refund_id
      ? // Submitting again is safe: the provider deduplicates on the refund's public id.
        await submitToProvider(deps, refund, await paymentOf(deps.db, refund))
      : await deps.provider.getRefund(refund.provider_refund_id).catch(() => null);
  if (state === null || (state.status === 'processing' && refund.status === 'processing')) return false;
  const after = await recordProviderAnswer(deps, refund.id, state);
  return after.status !== refund.status;
}

/** Worker step: every processing refund, and stale pending ones. Returns how many changed. */
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
