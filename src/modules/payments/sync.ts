// Provider sync: the worker loop (every KASSA_SYNC_INTERVAL_MS), sync-status and the provider-webhook
// endpoint all re-read a payment from the provider outside any transaction, then apply the answer in one.

import type { AppContext } from '../../context.ts';
import { NotFoundError, ValidationError } from '../../http/errors.ts';
import {
  type ProviderNotice,
  type ProviderPaymentState,
  ProviderUnavailableError,
} from '../../provider/types.ts';
import { attemptInFlight } from '../checkout/status.ts';
import { lockSession } from '../checkout/store.ts';
import { syncRefundsByProviderIds } from '../refunds/sync.ts';
import { afterPaymentRead } from '../subscriptions/renew.ts';
import { syncSetupById } from '../subscriptions/signup.ts';
import { cancelNotInReconciliation, handCancelToReconciler } from './cancel.ts';
import { MAX_WEBHOOK_IDS } from './provider-webhook-guard.ts';
import * as store from './store.ts';
import type { PaymentRow } from './table.ts';
import { applyProviderState, movePayment } from './transitions.ts';

const BATCH = 100;

/** What re-reading a payment needs: its id, its provider, and the provider's id or else our reference. */
export type SyncTarget = Pick<PaymentRow, 'id' | 'public_id' | 'provider' | 'provider_payment_id'>;

/** The provider payment of a Kassa payment: by the provider's id once known, else by our reference. */
export function readProviderPayment(ctx: AppContext, payment: Omit<SyncTarget, 'id'>) {
  const provider = ctx.providers.named(payment.provider);
  // Without a provider id the first answer was never recorded (the reconciler's case, or a customer
  // asking for the status meanwhile); the reference finds it.
  return payment.provider_payment_id === null
    ? provider.findPayment(payment.public_id)
    : provider.getPayment(payment.provider_payment_id);
}

/**
 * Who makes the stop of a pending payment the bank declined (stopIfDeclined): any read (`read`), unless
 * that stop is with the reconciler already; or the reconciler's own read of its payment_cancel
 * (`reconciler`), or the customer's cancel on the hosted page (`customer`: the page is to show the
 * outcome now, not after the reconciler's next read), which make it whatever the operation's state and
 * let a silent provider throw.
 */
export type DeclineStop = 'read' | 'reconciler' | 'customer';

/**
 * Re-reads one payment from the provider and applies it; true when something visible changed. A pending
 * payment the bank declined is stopped at the provider first, and what the stop leaves is applied.
 */
export async function syncPayment(
  ctx: AppContext,
  payment: SyncTarget,
  stop: DeclineStop = 'read',
): Promise<boolean> {
  const state = await readProviderPayment(ctx, payment);
  if (state === null) return false;
  const stopped = state.outcome === 'PROCESSING' ? await stopIfDeclined(ctx, payment.id, stop) : null;
  return (await applyRead(ctx, payment.id, stopped ?? state)).changed;
}

/** Applies a provider payment's state in its own transaction. */
async function applyRead(ctx: AppContext, paymentId: number, state: ProviderPaymentState) {
  const result = await ctx.db
    .transaction()
    .execute((trx) => applyProviderState(trx, paymentId, state, ctx.clock().toISOString()));
  // A renewal's payment paid by this read (a webhook, the sync loop, sync-status): its cycle's next try
  // is due now, or, its cycle closed meanwhile, its receipt is sent (renew.ts, afterPaymentRead).
  await afterPaymentRead(ctx, result);
  return result;
}

/**
 * A read found the provider payment taking a payment method. When Kassa's payment is `pending` (the bank
 * was deciding), the bank declined it: Stripe moves a processing PaymentIntent back to
 * requires_payment_method, its last_payment_error the decline. Such a payment fails (decisions.md:
 * pending → failed), but not yet: its provider payment is open again, and the hosted page's client
 * secret could still confirm it, which would charge a failed payment. So it is canceled first, and the
 * caller applies the state the cancel leaves instead of the read, with the bank's declined attempt in
 * it (one move, one event): canceled is the failure (applyProviderState fails a pending payment the
 * provider canceled); a success meanwhile (Stripe refuses the cancel) is paid; a new bank debit (refused
 * too) stays pending. Two readers at once both cancel (the second is refused, and reads it canceled)
 * and both apply under the payment's lock: one move. A stale read (made before another found the
 * payment processing) costs only a cancel the provider refuses. A cancel the provider does not answer
 * fails nothing: it is handed to the reconciler as the expirer's is (cancel.ts), and the read is applied.
 * Null when there is nothing to stop (or the stop is the reconciler's). A renewal's payment is the
 * renewal worker's while its cycle is collected (the try's read back records the decline), but not once
 * the cycle is closed (void or uncollectible: the subscription canceled while the bank decided): no try
 * will decide it any more, so it is stopped here like any other, and fails (before, it stayed pending for
 * ever, read again by every pass of the sync loop).
 */
async function stopIfDeclined(
  ctx: AppContext,
  paymentId: number,
  stop: DeclineStop,
): Promise<ProviderPaymentState | null> {
  let pending = ctx.db
    .selectFrom('payments')
    .select(['provider', 'provider_payment_id'])
    .where('id', '=', paymentId)
    .where('status', '=', 'pending')
    .where((eb) =>
      eb.or([
        eb('subscription_id', 'is', null),
        eb.exists(
          eb
            .selectFrom('subscription_cycles')
            .select('subscription_cycles.id')
            // By its subscription first: the unique (subscription, period) index finds its few cycles.
            .whereRef('subscription_cycles.subscription_id', '=', 'payments.subscription_id')
            .whereRef('subscription_cycles.payment_id', '=', 'payments.id')
            .where('subscription_cycles.status', 'in', ['void', 'uncollectible']),
        ),
      ]),
    );
  if (stop === 'read') pending = pending.where(cancelNotInReconciliation);
  const payment = await pending.executeTakeFirst();
  if (payment?.provider_payment_id == null) return null;
  try {
    return await ctx.providers.named(payment.provider).cancelPayment(payment.provider_payment_id);
  } catch (error) {
    if (stop !== 'read' || !(error instanceof ProviderUnavailableError)) throw error;
    await handCancelToReconciler(ctx, paymentId, error);
    return null;
  }
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
/** Where each service instance's expirer is in its cycle through the expired checkouts' payments. */
const expiryCursors = new WeakMap<AppContext, number>();

/**
 * Worker step: the next batch of payments whose provider state may still move, cycling through all of
 * them so none waits behind a long-undecided one. Returns how many changed. (A payment whose first
 * answer was lost has no provider id yet: the reconciler finds it, by its operation row.)
 */
export async function syncDuePayments(ctx: AppContext): Promise<number> {
  const after = cursors.get(ctx) ?? 0;
  const due = await store.paymentsToSync(ctx.db, after, BATCH);
  cursors.set(ctx, due.length < BATCH ? 0 : due[due.length - 1].id);
  return eachCounting(due, (row) => syncPayment(ctx, row));
}

/**
 * Before Kassa gives a payment up (its checkout expired, or the customer canceled): one last look at the
 * provider, then the provider payment is stopped so a customer's browser cannot still confirm it (with
 * Stripe it can, without Kassa). A success meanwhile is applied and wins; otherwise the attempts are
 * recorded and the caller makes its own move (failed or canceled).
 */
export async function stopAtProvider(ctx: AppContext, payment: SyncTarget): Promise<void> {
  await syncPayment(ctx, payment);
  const current = await ctx.db
    .selectFrom('payments')
    .select(['status', 'provider_payment_id'])
    .where('id', '=', payment.id)
    .executeTakeFirstOrThrow();
  if (current.status !== 'processing' || current.provider_payment_id === null) return;
  const state = await ctx.providers.named(payment.provider).cancelPayment(current.provider_payment_id);
  if (!state) return;
  await ctx.db.transaction().execute(async (trx) => {
    const kept = state.outcome === 'CANCELED' ? { ...state, outcome: 'PROCESSING' as const } : state;
    await applyProviderState(trx, payment.id, kept, ctx.clock().toISOString());
  });
}

/**
 * The expiry of one payment whose checkout expired: stopped at the provider (stopAtProvider), then failed
 * under the checkout's lock unless an attempt took the slot meanwhile (its answer, or the next round,
 * decides). True when the payment was failed. Throws ProviderUnavailableError when the provider did not
 * answer the stop, with nothing of Kassa's changed. The expirer and the reconciler's payment_cancel both
 * make this move (cancel.ts).
 */
export async function expirePayment(ctx: AppContext, paymentId: number): Promise<boolean> {
  const payment = await ctx.db
    .selectFrom('payments')
    .select(['id', 'public_id', 'provider', 'provider_payment_id', 'checkout_session_id'])
    .where('id', '=', paymentId)
    .executeTakeFirstOrThrow();
  await stopAtProvider(ctx, payment);
  return ctx.db.transaction().execute(async (trx) => {
    // Under the checkout's lock, as sync-status does: an attempt that took the slot since the read
    // above is left to finish (its answer, or the next round, decides).
    const session = await lockSession(trx, payment.checkout_session_id);
    const now = ctx.clock();
    if (attemptInFlight(session, now)) return false;
    const moved = await movePayment(trx, paymentId, 'processing', 'failed', now.toISOString());
    return moved !== null;
  });
}

/**
 * Worker step: a checkout that expired while its payment was still taking card attempts fails the payment
 * (after stopping it at the provider, so a late success is not lost). An attempt in flight waits. A stop
 * the provider does not answer fails nothing (the customer's browser may still pay): it is recorded as a
 * payment_cancel operation whose outcome is unknown, and from then on the reconciler retries it on its
 * schedule and flags it for review after the last read (cancel.ts), as every other provider call whose
 * answer Kassa lacks; the expirer no longer takes that payment. Each round takes the next batch, cycling
 * through all of them as syncDuePayments does, so no payment keeps the others out. `batch`: tests make
 * it small.
 */
export async function expireCheckouts(ctx: AppContext, batch = BATCH): Promise<number> {
  const now = ctx.clock().toISOString();
  const after = expiryCursors.get(ctx) ?? 0;
  const expired = await store.expiredProcessingPayments(ctx.db, now, after, batch);
  expiryCursors.set(ctx, expired.length < batch ? 0 : expired[expired.length - 1].id);
  return eachCounting(expired, async ({ id }) => {
    try {
      return await expirePayment(ctx, id);
    } catch (error) {
      if (!(error instanceof ProviderUnavailableError)) throw error;
      await handCancelToReconciler(ctx, id, error);
      return false;
    }
  });
}

/** POST /api/provider/webhooks/{provider}/: the body only names what changed; each is re-read. */
export async function handleProviderWebhook(
  ctx: AppContext,
  providerName: string,
  rawBody: string | undefined,
  headers: Record<string, string | string[] | undefined>,
): Promise<{ received: true; payments: number; refunds: number }> {
  if (!ctx.providers.has(providerName)) throw new NotFoundError('Unknown provider.');
  const provider = ctx.providers.named(providerName);
  let parsed: ProviderNotice;
  try {
    parsed = await provider.parseWebhook(rawBody ?? '', headers);
  } catch {
    throw new ValidationError(`body: not a ${provider.name} webhook.`);
  }
  if (parsed.paymentIds.length + parsed.refundIds.length > MAX_WEBHOOK_IDS) {
    throw new ValidationError(`body: a call may name at most ${MAX_WEBHOOK_IDS} ids.`);
  }
  return { received: true, ...(await syncNotice(ctx, provider.name, parsed)) };
}

/** Re-reads what a provider's webhook named: its payments and refunds. */
export async function syncNotice(
  ctx: AppContext,
  providerName: string,
  notice: Pick<ProviderNotice, 'paymentIds' | 'refundIds' | 'setupIds'>,
): Promise<{ payments: number; refunds: number }> {
  // A saved card (setup_intent.succeeded): a trial signup waiting on it makes its subscription.
  for (const setupId of notice.setupIds ?? []) await syncSetupById(ctx, setupId);
  const payments = await eachCounting(notice.paymentIds, async (providerPaymentId) => {
    const row = await store.paymentByProviderId(ctx.db, providerName, providerPaymentId);
    return row ? syncPayment(ctx, row) : false;
  });
  const refunds = await syncRefundsByProviderIds(ctx, providerName, notice.refundIds);
  return { payments, refunds };
}

/** provider-sync's next due time: now while a payment may still move at the provider, else nothing. */
export async function nextPaymentSyncDue(ctx: AppContext): Promise<'now' | null> {
  return (await store.paymentsToSync(ctx.db, 0, 1)).length > 0 ? 'now' : null;
}

/** checkout-expiry's next due time: the earliest expiry of a checkout whose payment still takes attempts. */
export async function nextCheckoutExpiryDue(ctx: AppContext): Promise<number | null> {
  const row = await ctx.db
    .selectFrom('payments')
    .innerJoin('checkout_sessions', 'checkout_sessions.id', 'payments.checkout_session_id')
    .select((eb) => eb.fn.min('checkout_sessions.expires_at').as('due'))
    .where('payments.status', '=', 'processing')
    .where('payments.subscription_id', 'is', null)
    .where(cancelNotInReconciliation)
    .executeTakeFirst();
  return row?.due ? Date.parse(String(row.due)) : null;
}
