// What the renewal's steps (renew.ts, renewal-answers.ts) and the subscription's own commands (manage.ts,
// resolve.ts) share about a subscription's cycles: the names of a try's write-ahead operation, the
// subscription's clock, the locks taken (subscription, then cycle), and the moves of a cycle and its
// subscription that a dunning step, a void or a cancel at the period's end make, in the caller's
// transaction. Mails decided in a transaction wait in an Outbox until it has committed.
import type { AppContext } from '../../context.ts';
import { isPostgres } from '../../db/connection.ts';
import type { Executor } from '../../db/database.ts';
import { READ_OPERATION_STATES } from '../../provider/operations/table.ts';
import { lockPayment } from '../payments/store.ts';
import { wasPaid } from '../payments/table.ts';
import { movePayment } from '../payments/transitions.ts';
import type { CustomerMail, DunningStep } from './dunning.ts';
import { sendCustomerMail } from './mails.ts';
import type { SubscriptionCycleRow, SubscriptionPlanRow, SubscriptionRow } from './table.ts';

export const RENEWAL_KIND = 'renewal_charge';
export const CYCLE_SUBJECT = 'subscription_cycle';

/** The idempotency key of try `tryNumber` of a cycle (its write-ahead operation's). */
export function renewalKey(cycleId: number, tryNumber: number): string {
  return `kassa-renew-${cycleId}-${tryNumber}`;
}

type Plan = Pick<
  SubscriptionPlanRow,
  'name' | 'interval' | 'interval_count' | 'public_id' | 'amount' | 'currency'
>;
export type SubscriptionWithPlan = SubscriptionRow & { plan: Plan };

/** The time a subscription lives in: its test clock, or real time. */
export function clockOf(ctx: AppContext, subscription: Pick<SubscriptionRow, 'test_clock_at'>): Date {
  return subscription.test_clock_at === null ? ctx.clock() : new Date(subscription.test_clock_at);
}

/** The subscription with its plan, locked for the rest of the transaction on PostgreSQL. */
export async function lockSubscription(trx: Executor, id: number): Promise<SubscriptionWithPlan> {
  let query = trx.selectFrom('subscriptions').selectAll().where('id', '=', id);
  if (isPostgres(trx)) query = query.forUpdate();
  const row = await query.executeTakeFirstOrThrow();
  const plan = await trx
    .selectFrom('subscription_plans')
    .select(['name', 'interval', 'interval_count', 'public_id', 'amount', 'currency'])
    .where('id', '=', row.plan_id)
    .executeTakeFirstOrThrow();
  return { ...row, plan };
}

/** Mails to send once the transaction that decided them has committed. */
export type Outbox = { subscriptionId: number; mail: CustomerMail }[];

export async function flush(ctx: AppContext, outbox: Outbox) {
  for (const { subscriptionId, mail } of outbox) await sendCustomerMail(ctx, subscriptionId, mail);
}

/**
 * Closes a cycle without a charge (void: canceled; uncollectible: given up) and its open payment: one still
 * taking tries (`processing`) is canceled or failed. One `pending` is left as it is: its charge is at the
 * bank (a debit Stripe shows `processing`), which Kassa cannot take back (Stripe refuses to cancel it);
 * the sync loop and Stripe's webhooks follow it until the bank decides: paid, the period is paid after all
 * (paidAfterCycleClosed); declined, the payment fails (payments/sync.ts, stopIfDeclined).
 * One found paid under its lock (or refund_pending/refunded: it was paid) was charged: the bank paid it
 * and a read recorded it while the cycle was still open (the try flagged, so no try records it), or
 * just before this lock (that read's paidAfterCycleClosed ran before this close committed and found the
 * cycle open). The cycle is then `paid` instead: the period was charged and the money is real; the
 * caller's subscription ends as it says (no new period, nothing charged again), and the customer is owed
 * the receipt, queued in `outbox` (the read that paid it sent none: it found no closed cycle). Locks: the
 * cycle's row (written first), then the payment's, as the worker takes them.
 */
export async function closeCycle(
  trx: Executor,
  cycle: SubscriptionCycleRow,
  status: 'void' | 'uncollectible',
  nowIso: string,
  realNowIso: string,
  outbox: Outbox,
) {
  await trx
    .updateTable('subscription_cycles')
    .set({ status, next_attempt_at: null, leased_by: null, lease_until: null, updated_at: nowIso })
    .where('id', '=', cycle.id)
    .execute();
  if (cycle.payment_id === null) return;
  const payment = await lockPayment(trx, cycle.payment_id);
  if (payment !== undefined && wasPaid(payment.status)) {
    await trx
      .updateTable('subscription_cycles')
      .set({ status: 'paid', updated_at: nowIso })
      .where('id', '=', cycle.id)
      .execute();
    outbox.push({ subscriptionId: cycle.subscription_id, mail: 'receipt' });
    return;
  }
  await movePayment(
    trx,
    cycle.payment_id,
    'processing',
    status === 'void' ? 'canceled' : 'failed',
    realNowIso,
  );
}

/**
 * The hook of payments/transitions.ts, in the transaction that moves a renewal payment to paid: a cycle
 * closed while that payment was `pending` at the bank (closeCycle: void, or uncollectible) is `paid`, for
 * the money is real. Nothing else moves: the subscription stays canceled (canceled_at and the reason kept;
 * a canceled subscription never comes back, as at Stripe) and no period starts. Returns the subscription
 * whose customer is owed the receipt (sent once the transaction has committed), or null. Only the cycle's
 * row is written: no lock is taken on the subscription inside the payment's transaction, and only a closed
 * cycle matches, whose row no other transaction writes (closeCycle locks an open cycle before the payment;
 * this update does not wait for it: on PostgreSQL a row whose committed version is open does not match).
 * A close not yet committed is not seen: 0 rows, and that close finds the payment paid (closeCycle).
 */
export async function paidAfterCycleClosed(
  trx: Executor,
  payment: { id: number; subscription_id: number },
  nowIso: string,
): Promise<number | null> {
  const cycle = await trx
    .updateTable('subscription_cycles')
    .set({ status: 'paid', updated_at: nowIso })
    // By its subscription first: the unique (subscription, period) index finds its few cycles.
    .where('subscription_id', '=', payment.subscription_id)
    .where('payment_id', '=', payment.id)
    .where('status', 'in', ['void', 'uncollectible'])
    .returning('subscription_id')
    .executeTakeFirst();
  return cycle?.subscription_id ?? null;
}

/** Whether the merchant's cancel at the period's end is due: asked for, and that period has ended. */
export function periodEndCancelDue(subscription: SubscriptionRow, nowIso: string): boolean {
  return (
    subscription.cancel_at_period_end === 1 &&
    subscription.status !== 'canceled' &&
    subscription.next_renewal_at !== null &&
    Date.parse(subscription.next_renewal_at) <= Date.parse(nowIso)
  );
}

/** Closes the subscription's cycles still being collected as void (closeCycle), for a cancel. */
export async function voidOpenCycles(
  trx: Executor,
  subscriptionId: number,
  nowIso: string,
  realNowIso: string,
  outbox: Outbox,
) {
  const open = await trx
    .selectFrom('subscription_cycles')
    .selectAll()
    .where('subscription_id', '=', subscriptionId)
    .where('status', 'in', ['processing', 'retrying'])
    .execute();
  for (const cycle of open) await closeCycle(trx, cycle, 'void', nowIso, realNowIso, outbox);
}

/**
 * The cancel at the period's end, once that end has come and no try is in flight: canceled then
 * (`canceled_at` = the period's end, reason merchant), and, as cancel now does, a cycle still being
 * collected is void and its renewal payment canceled. No try is made at or after the period's end
 * (prepareTry), so every charge of the subscription was made before canceled_at.
 */
export async function cancelAtPeriodEnd(
  trx: Executor,
  subscription: SubscriptionRow,
  nowIso: string,
  realNowIso: string,
  outbox: Outbox,
) {
  await voidOpenCycles(trx, subscription.id, nowIso, realNowIso, outbox);
  await trx
    .updateTable('subscriptions')
    .set({
      status: 'canceled',
      canceled_at: subscription.next_renewal_at,
      cancel_reason: 'merchant',
      next_renewal_at: null,
      updated_at: nowIso,
    })
    .where('id', '=', subscription.id)
    .execute();
}

/** Applies a dunning step to the cycle and its subscription (in the caller's transaction). */
export async function applyStep(
  trx: Executor,
  subscription: SubscriptionWithPlan,
  cycle: SubscriptionCycleRow,
  step: DunningStep,
  nowIso: string,
  realNowIso: string,
  outbox: Outbox,
) {
  if (step.cycleStatus === 'uncollectible') {
    await closeCycle(trx, cycle, 'uncollectible', nowIso, realNowIso, outbox);
  } else {
    await trx
      .updateTable('subscription_cycles')
      .set({
        status: step.cycleStatus,
        next_attempt_at: step.nextAttemptAt?.toISOString() ?? null,
        needs_new_card: step.needsNewCard ? 1 : 0,
        leased_by: null,
        lease_until: null,
        updated_at: nowIso,
      })
      .where('id', '=', cycle.id)
      .execute();
  }
  if (subscription.status === 'canceled') return;
  const canceled = step.subscriptionStatus === 'canceled';
  await trx
    .updateTable('subscriptions')
    .set({
      status: step.subscriptionStatus,
      ...(canceled
        ? {
            canceled_at: nowIso,
            cancel_reason: step.cancelReason,
            next_renewal_at: null,
            cancel_at_period_end: 0,
          }
        : {}),
      updated_at: nowIso,
    })
    .where('id', '=', subscription.id)
    .execute();
}

/** A cycle with its subscription locked (in the caller's transaction), re-read under the lock. */
export async function lockCycle(trx: Executor, cycleId: number) {
  const first = await trx
    .selectFrom('subscription_cycles')
    .select('subscription_id')
    .where('id', '=', cycleId)
    .executeTakeFirstOrThrow();
  const subscription = await lockSubscription(trx, first.subscription_id);
  const cycle = await trx
    .selectFrom('subscription_cycles')
    .selectAll()
    .where('id', '=', cycleId)
    .executeTakeFirstOrThrow();
  return { subscription, cycle };
}

/**
 * Whether a try of one of the subscription's cycles is being charged or reconciled (cancel now and the
 * cancel at the period's end wait). A try flagged after the reconciler's last read is not: nobody will
 * read it again, so waiting for it would hold the subscription for ever. It is on the payment's review
 * in the dashboard (payments/review.ts) and the operator resolves it (resolve.ts). If the provider later
 * shows it charged after the cycle was voided: a payment the void canceled (still `processing`, its
 * answer never read) records a provider_conflict instead of becoming paid (applyProviderState); one left
 * `pending` (its charge at the bank) becomes paid, and its cycle `paid` (paidAfterCycleClosed); one paid
 * already when the cycle closes makes it `paid` (closeCycle).
 */
export async function renewalInFlight(
  trx: Executor,
  subscriptionId: number,
  realNowIso: string,
): Promise<boolean> {
  const cycles = await trx
    .selectFrom('subscription_cycles')
    .select(['id', 'lease_until'])
    .where('subscription_id', '=', subscriptionId)
    .where('status', 'in', ['processing', 'retrying'])
    .execute();
  if (cycles.some((cycle) => cycle.lease_until !== null && cycle.lease_until > realNowIso)) return true;
  if (cycles.length === 0) return false;
  const open = await trx
    .selectFrom('provider_operations')
    .select('id')
    .where('subject_type', '=', CYCLE_SUBJECT)
    .where(
      'subject_id',
      'in',
      cycles.map((cycle) => cycle.id),
    )
    .where('state', 'in', READ_OPERATION_STATES)
    .executeTakeFirst();
  return open !== undefined;
}
