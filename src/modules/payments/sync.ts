// Provider sync: the worker loop (every KASSA_SYNC_INTERVAL_MS), sync-status and the provider-webhook
// endpoint all re-read a payment from the provider outside any transaction, then apply the answer in one.
import type { AppContext } from '../../context.ts';
import { NotFoundError, ValidationError } from '../../http/errors.ts';
import { syncRefundsByProviderIds } from '../refunds/sync.ts';
import * as store from './store.ts';
import type { PaymentRow } from './table.ts';
import { applyProviderState, movePayment } from './transitions.ts';

const BATCH = 100;
/**
 * A processing payment still without a provider id this long after its creation lost its first answer
 * (the process died, or the call timed out, after the provider had recorded the attempt): the sync loop
 * then looks it up by reference. Sooner, the hosted step's own call is most likely still in flight.
 */
export const UNANSWERED_AFTER_MS = 5_000;

/** What re-reading a payment needs: its id, and the provider's id or else our reference. */
export type SyncTarget = Pick<PaymentRow, 'id' | 'public_id' | 'provider_payment_id'>;

/** Re-reads one payment from the provider and applies it; true when something visible changed. */
export async function syncPayment(ctx: AppContext, payment: SyncTarget): Promise<boolean> {
  // Without a provider id the first attempt's answer was never recorded; the reference finds it.
  const state =
    payment.provider_payment_id === null
      ? await ctx.provider.findPayment(payment.public_id)
      : await ctx.provider.getPayment(payment.provider_payment_id);
  if (state === null) return false;
  return ctx.db.transaction().execute(async (trx) => {
    const result = await applyProviderState(trx, payment.id, state, ctx.clock().toISOString());
    return result.changed;
  });
}

/** Runs `work` on each item; one failure does not stop the others (the first is rethrown after). */
async function eachCounting<T>(items: T[], work: (item: T) => Promise<boolean>): Promise<number> {
  let changed = 0;
  let failure: unknown = null;
  for (const item of items) {
    try {
      if (await work(item)) changed += 1;
    } catch (error) {
      failure ??= error;
    }
  }
  if (failure !== null) throw failure;
  return changed;
}

/** Where each service instance's sync loop is in its cycle through the payments to sync. */
const cursors = new WeakMap<AppContext, number>();

/**
 * Worker step: the next batch of payments whose provider state may still move, cycling through all of
 * them so none waits behind a long-undecided one. Returns how many changed.
 */
export async function syncDuePayments(ctx: AppContext): Promise<number> {
  const after = cursors.get(ctx) ?? 0;
  const unansweredBefore = new Date(ctx.clock().getTime() - UNANSWERED_AFTER_MS).toISOString();
  const due = await store.paymentsToSync(ctx.db, after, BATCH, unansweredBefore);
  cursors.set(ctx, due.length < BATCH ? 0 : due[due.length - 1].id);
  return eachCounting(due, (row) => syncPayment(ctx, row));
}

/**
 * Worker step: a checkout that expired while its payment was still taking card attempts fails the payment
 * (after one last look at the provider, so a late success is not lost). An attempt in flight waits.
 */
export async function expireCheckouts(ctx: AppContext): Promise<number> {
  const now = ctx.clock().toISOString();
  const expired = await store.expiredProcessingPayments(ctx.db, now, BATCH);
  return eachCounting(expired, async ({ id }) => {
    const payment = await ctx.db
      .selectFrom('payments')
      .select(['id', 'public_id', 'provider_payment_id'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    await syncPayment(ctx, payment);
    return ctx.db.transaction().execute(async (trx) => {
      const moved = await movePayment(trx, id, 'processing', 'failed', ctx.clock().toISOString());
      return moved !== null;
    });
  });
}

/** POST /api/provider/webhooks/{provider}/: the body only names what changed; each is re-read. */
export async function handleProviderWebhook(
  ctx: AppContext,
  providerName: string,
  rawBody: string | undefined,
  headers: Record<string, string | string[] | undefined>,
): Promise<{ received: true; payments: number; refunds: number }> {
  if (providerName !== ctx.provider.name) throw new NotFoundError('Unknown provider.');
  let parsed: { paymentIds: string[]; refundIds: string[] };
  try {
    parsed = ctx.provider.parseWebhook(rawBody ?? '', headers);
  } catch {
    throw new ValidationError(`body: not a ${ctx.provider.name} webhook.`);
  }
  const payments = await eachCounting(parsed.paymentIds, async (providerPaymentId) => {
    const row = await store.paymentByProviderId(ctx.db, ctx.provider.name, providerPaymentId);
    return row ? syncPayment(ctx, row) : false;
  });
  const refunds = await syncRefundsByProviderIds(ctx, parsed.refundIds);
  return { received: true, payments, refunds };
}
