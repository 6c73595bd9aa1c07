// Refund sync: the worker loop (every KASSA_SYNC_INTERVAL_MS) and the provider-webhook path both re-read
// refunds from the provider and record what changed. A pending refund's lost answer is the reconciler's:
// it reads the refund back by its reference (refundOperationHandlers), never sending it twice. The loop
// reads refunds in flight only; a webhook re-reads whatever refund it names, finished ones too, so a
// provider that changes its word about one is heard (and flagged: conflict-flag.ts).
import type { AppContext } from '../../context.ts';
import type { Executor } from '../../db/database.ts';
import type { OperationHandler, OperationHandlers } from '../../provider/operations/reconciler.ts';
import { operationByKey } from '../../provider/operations/store.ts';
import type { OperationRow } from '../../provider/operations/table.ts';
import type { ProviderRefundState } from '../../provider/types.ts';
import { isFinished } from './conflict-flag.ts';
import type { RefundDeps } from './service.ts';
import { recordRefundOperation, recordSubmitted, refundOutcome, submitToProvider } from './service.ts';
import * as store from './store.ts';
import type { RefundRow } from './table.ts';
import { recordProviderAnswer, recordProviderAnswerIn } from './transitions.ts';

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

/** Whether recording an answer changed what the refund shows: its status, or its provider conflict. */
function changed(before: RefundRow, after: RefundRow): boolean {
  return after.status !== before.status || after.provider_conflict_status !== before.provider_conflict_status;
}

/** Re-reads one refund from the provider and records it; true when its status (or its conflict) changed. */
export async function syncRefund(deps: RefundDeps, refund: RefundRow): Promise<boolean> {
  // A finished refund is only read (never submitted), and only by the provider's id.
  if (isFinished(refund.status) && !refund.provider_refund_id) return false;
  if (refund.status === 'pending' || !refund.provider_refund_id) return submitLegacyPending(deps, refund);
  const { provider } = await paymentOf(deps.db, refund);
  const state = await deps.providers
    .named(provider)
    .getRefund(refund.provider_refund_id)
    .catch(() => null);
  if (state === null || (state.status === 'processing' && refund.status === 'processing')) return false;
  return changed(refund, await recordProviderAnswer(deps, refund.id, state));
}

/** Worker step: every processing refund (and pending ones older than operation rows). Returns how many changed. */
export async function syncRefunds(deps: RefundDeps): Promise<number> {
  const pendingBefore = new Date(deps.clock().getTime() - PENDING_RETRY_MS).toISOString();
  const refunds = await store.refundsToSync(deps.db, pendingBefore, BATCH);
  return syncEach(deps, refunds);
}

/**
 * A refund the provider names by an id Kassa does not hold: read from the provider, it is Kassa's when it
 * carries the reference of a refund of this provider that has no provider id yet (its creation answer was
 * lost, or the reconciler took it for never made and it arrived after all). True when that changed it.
 */
async function syncByReference(deps: RefundDeps, providerName: string, providerRefundId: string) {
  const state = await deps.providers
    .named(providerName)
    .getRefund(providerRefundId)
    .catch(() => null);
  if (!state?.reference) return false;
  const refund = await deps.db
    .selectFrom('refunds')
    .innerJoin('payments', 'payments.id', 'refunds.payment_id')
    .selectAll('refunds')
    .where('refunds.public_id', '=', state.reference)
    .where('payments.provider', '=', providerName)
    .where((eb) =>
      eb.or([eb('refunds.provider_refund_id', 'is', null), eb('refunds.provider_refund_id', '=', '')]),
    )
    .executeTakeFirst();
  if (!refund) return false;
  return changed(refund, await recordProviderAnswer(deps, refund.id, state));
}

/**
 * The provider-webhook path: the refunds the provider says changed, by the provider's refund ids, whatever
 * their status (a finished one the provider contradicts is flagged); an id Kassa does not hold is read and
 * matched by the reference the provider kept.
 */
export async function syncRefundsByProviderIds(
  deps: RefundDeps,
  providerName: string,
  providerRefundIds: string[],
): Promise<number> {
  if (providerRefundIds.length === 0) return 0;
  const refunds = await deps.db
    .selectFrom('refunds')
    .selectAll()
    .where('provider_refund_id', 'in', providerRefundIds)
    .execute();
  const known = new Set(refunds.map((refund) => refund.provider_refund_id));
  const unknown = providerRefundIds.filter((id) => !known.has(id));
  let changes = await syncEach(deps, refunds);
  for (const id of unknown) if (await syncByReference(deps, providerName, id)) changes += 1;
  return changes;
}

/** What a refund the provider never received is recorded as: failed, its hold released. */
const NEVER_SENT: ProviderRefundState = {
  providerRefundId: '',
  status: 'failed',
  errorMessage: 'The refund never reached the provider; nothing was refunded.',
};

/** The refund the operation made, read by its reference; null when the provider has none. */
function findOperationRefund(ctx: AppContext, operation: OperationRow) {
  const context = JSON.parse(operation.context) as { provider_payment_id?: string | null };
  if (!context.provider_payment_id) return Promise.resolve(null);
  return ctx.providers.named(operation.provider).findRefund(operation.reference, context.provider_payment_id);
}

const refundOperation: OperationHandler = {
  async read(ctx, operation) {
    const state = await findOperationRefund(ctx, operation);
    if (!state) return { outcome: null };
    await recordProviderAnswer(ctx, operation.subject_id, state);
    return { outcome: refundOutcome(state), providerObjectId: state.providerRefundId };
  },
  /** Never sent: the refund fails and its hold is released; the merchant may refund again. */
  async neverMade(ctx, operation) {
    await recordProviderAnswer(ctx, operation.subject_id, NEVER_SENT, 'never_made');
  },
  /**
   * kassa operation resolve: read once more, and recorded as `read` records it (completed: the wallet
   * debited; failed: the hold released; processing: the refund sync follows it from here) or, with no
   * refund at the provider, as `neverMade`.
   */
  async resolve(ctx, operation) {
    const state = await findOperationRefund(ctx, operation);
    return {
      shows: state
        ? `refund ${state.status} (${[state.providerRefundId, state.errorMessage].filter(Boolean).join(': ')})`
        : `no refund for ${operation.reference}`,
      outcome: state ? refundOutcome(state) : null,
      providerObjectId: state?.providerRefundId || null,
      async record(trx, now) {
        const refund = state
          ? await recordProviderAnswerIn(trx, operation.subject_id, state, 'read', now)
          : await recordProviderAnswerIn(trx, operation.subject_id, NEVER_SENT, 'never_made', now);
        const payment = await trx
          .selectFrom('payments')
          .select(['public_id', 'status'])
          .where('id', '=', refund.payment_id)
          .executeTakeFirstOrThrow();
        return {
          organizationId: refund.organization_id,
          target: { type: 'refund', id: refund.public_id },
          state: {
            refund_id: refund.public_id,
            refund_status: refund.status,
            provider_conflict: refund.provider_conflict,
            transaction_id: payment.public_id,
            payment_status: payment.status,
          },
        };
      },
    };
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
