// Provider sync: the worker loop (every KASSA_SYNC_INTERVAL_MS), sync-status and the provider-webhook
// endpoint all re-read a payment from the provider outside any transaction, then apply the answer in one.
import type { AppContext } from '../../context.ts';
import { NotFoundError, ValidationError } from '../../http/errors.ts';
import { syncRefundsByProviderIds } from '../refunds/sync.ts';
import * as store from './store.ts';
import { applyProviderState, movePayment } from './transitions.ts';

const BATCH = 100;

/** Re-reads one payment from the provider and applies it; true when something visible changed. */
export async function syncPayment(
  ctx: AppContext,
  paymentId: number,
  providerPaymentId: string,
): Promise<boolean> {
  const state = await ctx.provider.getPayment(providerPaymentId);
  if (state === null) return false;
  return ctx.db.transaction().execute(async (trx) => {
    const result = await applyProviderState(trx, paymentId, state, ctx.clock().toISOString());
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
  const due = await store.paymentsToSync(ctx.db, after, BATCH);
  cursors.set(ctx, due.length < BATCH ? 0 : due[due.length - 1].id);
  return eachCounting(due, (row) =>
    row.provider_payment_id === null
      ? Promise.resolve(false)
      : syncPayment(ctx, row.id, row.provider_payment_id),
  );
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
      .select('provider_payment_id')
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    if (payment.provider_payment_id !== null) await syncPayment(ctx, id, payment.provider_payment_id);
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
    return row ? syncPayment(ctx, row.id, providerPaymentId) : false;
  });
  const refunds = await syncRefundsByProviderIds(ctx, parsed.refundIds);
  return { received: true, payments, refunds };
}
