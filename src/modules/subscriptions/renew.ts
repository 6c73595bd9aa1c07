// The renewal worker (decisions.md "Subscriptions"): charges each period of a subscription exactly once.
//
// 1. schedule: a subscription whose next period has started gets that period's cycle (one per period: a
//    unique index), the periods skipped while the worker was down are recorded void, and next_renewal_at
//    moves to the end of the period. A subscription set to cancel at the period's end is canceled instead,
//    past due as well (its dunning ends then: the cycle void, its payment canceled), once no try is in
//    flight; a try is never made at or after that end (prepareTry cancels instead).
// 2. try: a due cycle is claimed under a lease; in one transaction that holds the subscription's row lock
//    the status is re-read (a canceled subscription is never charged), the renewal payment is opened on
//    the first try, and the try's write-ahead operation row (kassa-renew-{cycle id}-{n}) is committed.
//    Then the provider charges the saved card off-session; then its answer is recorded (step 3,
//    renewal-answers.ts): the payment moves as any payment does (attempts, ledger,
//    transaction.status_changed), and dunning.ts decides the rest (a refusal of a payment the provider
//    shows paid is that payment, not a decline: answerOfTry).
//    An answer that never came leaves the cycle waiting (next_attempt_at null): the reconciler reads the
//    charge back (renewalOperationHandlers in renewal-readback.ts: by the provider payment's id once
//    known, else by reference) and finishes the try. It is never charged again. A renewal payment the
//    provider canceled (by hand in Stripe's Dashboard) is replaced by a new one on the cycle's next try
//    (prepareTry).
//    A try the provider refuses (a refused key, a rate limit) is made again hourly under the same key, for
//    PROVIDER_ERROR_LIMIT_MS; then it waits, flagged. A flagged try (that, or one the reconciler could not
//    read back by its last read) waits for the operator: kassa renewal resolve (resolve.ts).
//
// Time: the schedule runs on the subscription's clock, which is real time, or for a sandbox subscription
// with a test clock the frozen time advance-clock moved it to (renewal-clock.ts); payments and events
// carry real time. What the steps share about cycles and their subscription is in renewal-cycles.ts.
import { randomBytes } from 'node:crypto';
import type { AppContext } from '../../context.ts';
import type { Executor } from '../../db/database.ts';
import { toBigInt } from '../../lib/money.ts';
import { callProvider } from '../../provider/operations/perform.ts';
import { recordOperation, reopenOperation, settleOperation } from '../../provider/operations/store.ts';
import type { OperationRow } from '../../provider/operations/table.ts';
import type { ProviderOutcome } from '../../provider/types.ts';
import { openCheckoutPayment } from '../checkout/provider-form.ts';
import { createCheckoutSession } from '../checkout/service.ts';
import * as checkouts from '../checkout/store.ts';
import { type PaymentRow, wasPaid } from '../payments/table.ts';
import type { AppliedState } from '../payments/transitions.ts';
import { answerOfTry, giveUp } from './dunning.ts';
import { sendCustomerMail } from './mails.ts';
import { periodBounds, renewalDue } from './periods.ts';
import { finishTry, recordDecided, undecidedAsUnknown } from './renewal-answers.ts';
import {
  applyStep,
  CYCLE_SUBJECT,
  cancelAtPeriodEnd,
  clockOf,
  closeCycle,
  flush,
  lockCycle,
  lockSubscription,
  type Outbox,
  periodEndCancelDue,
  RENEWAL_KIND,
  renewalInFlight,
  renewalKey,
  type SubscriptionWithPlan,
} from './renewal-cycles.ts';
import { subscriberBilling } from './signup.ts';
import { claimDueCycles, createCycle } from './store.ts';
import type { SubscriptionCycleRow, SubscriptionRow } from './table.ts';

const BATCH = 20;
/** This process's name on the leases it takes. */
const WORKER_ID = `renewal-${process.pid}-${randomBytes(4).toString('hex')}`;

function recurrenceOf(subscription: SubscriptionWithPlan) {
  return { interval: subscription.plan.interval, intervalCount: subscription.plan.interval_count };
}

/**
 * Step 1 for one subscription whose next period has started (at its clock): the cycle of that period,
 * void cycles for the periods skipped, or the cancellation asked for at the period's end. Returns
 * whether anything changed.
 */
async function scheduleOne(ctx: AppContext, subscriptionId: number, outbox: Outbox): Promise<boolean> {
  return ctx.db.transaction().execute(async (trx) => {
    const subscription = await lockSubscription(trx, subscriptionId);
    const now = clockOf(ctx, subscription);
    const nowIso = now.toISOString();
    const due = subscription.next_renewal_at;
    if (subscription.status === 'canceled' || due === null || Date.parse(due) > now.getTime()) return false;
    if (subscription.cancel_at_period_end === 1) {
      // Past due too: the merchant's cancel ends the dunning at the period's end. A try made before then
      // and not answered yet decides first (finishTry cancels once it is recorded): this pass waits.
      if (await renewalInFlight(trx, subscription.id, ctx.clock().toISOString())) return false;
      await cancelAtPeriodEnd(trx, subscription, nowIso, ctx.clock().toISOString(), outbox);
      outbox.push({ subscriptionId, mail: 'canceled' });
      return true;
    }
    // A subscription still collecting an earlier period starts no new one: the cycle being dunned decides.
    if (subscription.status === 'past_due') return false;
    const last = await trx
      .selectFrom('subscription_cycles')
      .select((eb) => eb.fn.max('period_index').as('last'))
      .where('subscription_id', '=', subscription.id)
      .executeTakeFirst();
    const lastIndex = last?.last === null || last?.last === undefined ? -1 : Number(last.last);
    const anchor = new Date(subscription.anchor_at);
    const recurrence = recurrenceOf(subscription);
    const renewal = renewalDue(anchor, recurrence, lastIndex, now);
    const plan = subscription.plan;
    const cycle = (index: number, status: 'processing' | 'void') => {
      const bounds = periodBounds(anchor, recurrence, index);
      return {
        subscription_id: subscription.id,
        organization_id: subscription.organization_id,
        environment: subscription.environment,
        period_index: index,
        period_start: bounds.start.toISOString(),
        period_end: bounds.end.toISOString(),
        amount: Number(plan.amount),
        currency: plan.currency,
        status,
        attempts: 0,
        next_attempt_at: status === 'void' ? null : nowIso,
        created_at: nowIso,
        updated_at: nowIso,
      };
    };
    if (renewal !== null) {
      for (const index of renewal.void) await createCycle(trx, cycle(index, 'void'));
      await createCycle(trx, cycle(renewal.charge, 'processing'));
    }
    const charged = renewal?.charge ?? lastIndex;
    await trx
      .updateTable('subscriptions')
      .set({
        next_renewal_at: periodBounds(anchor, recurrence, charged + 1).start.toISOString(),
        updated_at: nowIso,
      })
      .where('id', '=', subscription.id)
      .execute();
    return true;
  });
}

/**
 * Subscriptions due for their next period (real-time ones, or the one test clock `only`), and past-due
 * ones whose period ended with a cancel at its end asked for (scheduleOne cancels them).
 */
async function dueSubscriptions(ctx: AppContext, only: SubscriptionRow | null): Promise<number[]> {
  // Other past-due ones wait for the period being dunned (scheduleOne): left out here, or enough of them
  // would fill every batch and starve the rest. The cancels at the period's end get a batch of their
  // own, so those waiting for a try in flight cannot starve the renewals either.
  const due = (past: boolean) => {
    let query = ctx.db
      .selectFrom('subscriptions')
      .select('id')
      .where('next_renewal_at', 'is not', null)
      .orderBy('next_renewal_at')
      .limit(BATCH);
    query = past
      ? query.where('status', '=', 'past_due').where('cancel_at_period_end', '=', 1)
      : query.where('status', 'in', ['trialing', 'active']);
    if (only) {
      return query.where('id', '=', only.id).where('next_renewal_at', '<=', clockOf(ctx, only).toISOString());
    }
    return query.where('test_clock_at', 'is', null).where('next_renewal_at', '<=', ctx.clock().toISOString());
  };
  const [renewing, ending] = await Promise.all([due(false).execute(), due(true).execute()]);
  return [...renewing, ...ending].map((row) => row.id);
}

function metadataOf(subscription: SubscriptionWithPlan, cycle: SubscriptionCycleRow, payment: PaymentRow) {
  return {
    kassa_subscription_id: subscription.public_id,
    kassa_period_index: String(cycle.period_index),
    kassa_transaction_id: payment.public_id,
    kassa_environment: subscription.environment,
  };
}

/** The renewal payment of a cycle: an ordinary payment on a closed checkout of the plan (never hosted). */
async function openRenewalPayment(
  ctx: AppContext,
  trx: Executor,
  subscription: SubscriptionWithPlan,
  cycle: SubscriptionCycleRow,
  nowIso: string,
): Promise<PaymentRow> {
  const created = await createCheckoutSession(trx, ctx, {
    organizationId: subscription.organization_id,
    environment: subscription.environment,
    currency: cycle.currency,
    items: [
      { productId: null, name: subscription.plan.name, unitPrice: toBigInt(cycle.amount), quantity: 1 },
    ],
    priceMode: 'TTC',
    billing: await subscriberBilling(trx, subscription),
    urls: { success: null, failed: null, cancel: null },
    simulate: null,
    paymentLinkId: null,
    // Closed at once: nobody is sent to a hosted page for a renewal (the expiry loop leaves its payment alone).
    ttlS: 0,
    subscriptionPublicId: subscription.public_id,
  });
  const session = await checkouts.findByPublicId(
    trx,
    subscription.organization_id,
    subscription.environment,
    created.checkout_id,
  );
  if (!session) throw new Error(`renewal checkout ${created.checkout_id} is missing`);
  const provider = ctx.providers.named(subscription.provider);
  const payment = await openCheckoutPayment(ctx, trx, session, provider, nowIso);
  await trx
    .updateTable('payments')
    .set({ subscription_id: subscription.id })
    .where('id', '=', payment.id)
    .execute();
  await trx
    .updateTable('subscription_cycles')
    .set({ payment_id: payment.id })
    .where('id', '=', cycle.id)
    .execute();
  return { ...payment, subscription_id: subscription.id };
}

interface PreparedTry {
  subscription: SubscriptionWithPlan;
  cycle: SubscriptionCycleRow;
  payment: PaymentRow;
  operation: OperationRow;
  tryNumber: number;
}

/**
 * Step 2a: under the subscription's lock, re-reads everything and either closes the cycle (the
 * subscription was canceled, or the wait for a new card ran out) or commits the try's write-ahead row.
 */
async function prepareTry(ctx: AppContext, cycleId: number, outbox: Outbox): Promise<PreparedTry | null> {
  return ctx.db.transaction().execute(async (trx) => {
    // Read under the lock: a cancel or another worker may have moved the cycle meanwhile.
    const { subscription, cycle } = await lockCycle(trx, cycleId);
    const now = clockOf(ctx, subscription);
    const nowIso = now.toISOString();
    const realNowIso = ctx.clock().toISOString();
    if (cycle.leased_by !== WORKER_ID || cycle.next_attempt_at === null) return null;
    if (!['processing', 'retrying'].includes(cycle.status)) return null;
    if (subscription.status === 'canceled') {
      await closeCycle(trx, cycle, 'void', nowIso, realNowIso, outbox);
      return null;
    }
    const opened =
      cycle.payment_id === null
        ? null
        : await trx
            .selectFrom('payments')
            .selectAll()
            .where('id', '=', cycle.payment_id)
            .executeTakeFirstOrThrow();
    if (opened !== null && wasPaid(opened.status)) {
      // Paid already, by a webhook or a sync (renewalPaidElsewhere brought this try forward): the period
      // is paid as by a try that succeeded, without a call to the provider and without a try counted.
      // The payment was settled when it moved to paid; recordDecided moves only the cycle and the
      // subscription (and ends the subscription if a cancel at the period's end is due).
      await recordDecided(ctx, trx, subscription, cycle, Number(cycle.attempts), { succeeded: true }, outbox);
      return null;
    }
    if (periodEndCancelDue(subscription, nowIso)) {
      // The period's end came with a cancel at it asked for (a past-due subscription's next try falls
      // due then, or after): no try is made any more; the subscription is canceled instead, as
      // scheduleOne does, unless another try is still in flight (then the pass that sees it answered).
      await trx
        .updateTable('subscription_cycles')
        .set({ leased_by: null, lease_until: null })
        .where('id', '=', cycle.id)
        .execute();
      if (await renewalInFlight(trx, subscription.id, realNowIso)) return null;
      await cancelAtPeriodEnd(trx, subscription, nowIso, realNowIso, outbox);
      outbox.push({ subscriptionId: subscription.id, mail: 'canceled' });
      return null;
    }
    if (cycle.needs_new_card === 1) {
      // The customer gave no new card before the last try's time: the period is not collected.
      await applyStep(trx, subscription, cycle, giveUp(), nowIso, realNowIso, outbox);
      outbox.push({ subscriptionId: subscription.id, mail: 'canceled' });
      return null;
    }
    // A renewal payment Kassa recorded canceled while its cycle is still collected was canceled at the
    // provider (an operator canceled the PaymentIntent in Stripe's Dashboard; Kassa cancels one only when
    // it voids the cycle): final, never charged, and no confirm of it can succeed. Its try counted as a
    // failure; this try charges a new renewal payment (a new provider payment, under this try's key)
    // instead of being refused by the canceled one until the cycle is given up. The same for one
    // `failed` while its cycle is collected: its charge was processing at the bank, which declined it
    // (recordTry); a failed payment is never charged again. Never a second charge: the old one is not
    // charged again, and a payment in any other state is charged again as is.
    const payment =
      opened !== null && opened.status !== 'canceled' && opened.status !== 'failed'
        ? opened
        : await openRenewalPayment(ctx, trx, subscription, cycle, realNowIso);
    const tryNumber = Number(cycle.attempts) + 1;
    const recorded = await recordOperation(
      trx,
      {
        kind: RENEWAL_KIND,
        idempotencyKey: renewalKey(cycle.id, tryNumber),
        provider: subscription.provider,
        environment: subscription.environment,
        organizationId: subscription.organization_id,
        subjectType: CYCLE_SUBJECT,
        subjectId: cycle.id,
        reference: payment.public_id,
        context: { try: tryNumber },
      },
      realNowIso,
      ctx.config.reconcileScheduleMs,
    );
    // Settled already: the provider refused this try's call (providerError, finishTry), so it is made
    // again under the same key.
    const operation =
      recorded.state === 'done'
        ? await reopenOperation(trx, recorded.id, realNowIso, ctx.config.reconcileScheduleMs)
        : recorded;
    const updated = await trx
      .updateTable('subscription_cycles')
      .set({
        attempts: tryNumber,
        first_attempt_at: cycle.first_attempt_at ?? nowIso,
        next_attempt_at: null,
        payment_id: payment.id,
        updated_at: nowIso,
      })
      .where('id', '=', cycle.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    return { subscription, cycle: updated, payment, operation, tryNumber };
  });
}

/** Step 2: one try of a claimed cycle. */
async function tryCycle(ctx: AppContext, cycleId: number, outbox: Outbox): Promise<boolean> {
  const prepared = await prepareTry(ctx, cycleId, outbox);
  if (!prepared) return true;
  const { subscription, cycle, payment, operation, tryNumber } = prepared;
  const provider = ctx.providers.named(subscription.provider);
  const call = await callProvider(ctx.config, operation, () =>
    provider.chargeSavedCard({
      idempotencyKey: operation.idempotency_key,
      payment: { reference: payment.public_id, providerPaymentId: payment.provider_payment_id },
      environment: subscription.environment,
      amountMinor: toBigInt(payment.gross),
      currency: payment.currency,
      refundBasisMinor: toBigInt(payment.gross_ht),
      customerId: subscription.provider_customer_id,
      paymentMethodId: subscription.payment_method_id,
      metadata: metadataOf(subscription, cycle, payment),
    }),
  );
  const outcome: ProviderOutcome = call.answered
    ? answerOfTry(call.value)
    : { status: 'unknown', reason: call.reason };
  const state = call.answered ? call.value.payment : null;
  const recorded = undecidedAsUnknown(outcome);
  // The cycle first, then the operation: a crash in between leaves the operation in flight, which the
  // reconciler reads back and records (finishTry is idempotent); the other order left a settled
  // operation and a cycle no loop would pick up again (helper-29's review).
  // A try flagged for the operator (refused too long) keeps its operation flagged.
  if (await finishTry(ctx, cycle.id, tryNumber, recorded, state, outbox)) return true;
  await ctx.db
    .transaction()
    .execute((trx) =>
      settleOperation(
        trx,
        operation.id,
        recorded,
        state?.providerPaymentId ?? null,
        ctx.clock().toISOString(),
      ),
    );
  return true;
}

/** Cycles due for a try, leased to this process (real-time ones, or those of the one test clock `only`). */
async function claimCycles(ctx: AppContext, only: SubscriptionRow | null): Promise<SubscriptionCycleRow[]> {
  const realNow = ctx.clock();
  const lease = {
    workerId: WORKER_ID,
    now: (only ? clockOf(ctx, only) : realNow).toISOString(),
    leaseNow: realNow.toISOString(),
    until: new Date(realNow.getTime() + 2 * ctx.config.providerTimeoutMs + 30_000).toISOString(),
  };
  return ctx.db.transaction().execute((trx) => claimDueCycles(trx, lease, BATCH, only?.id ?? null));
}

const PUT_OFF_MS = 3_600_000;

/** A claimed cycle whose try could not start: due again in an hour, its lease released. */
async function putOff(ctx: AppContext, cycleId: number) {
  const realNow = ctx.clock();
  await ctx.db
    .updateTable('subscription_cycles')
    .set({
      next_attempt_at: new Date(realNow.getTime() + PUT_OFF_MS).toISOString(),
      leased_by: null,
      lease_until: null,
      updated_at: realNow.toISOString(),
    })
    .where('id', '=', cycleId)
    .where('leased_by', '=', WORKER_ID)
    .where('next_attempt_at', 'is not', null)
    .execute();
}

/**
 * A renewal's payment moved to paid outside this worker (a provider's webhook, a sync, the reconciler):
 * its cycle, if it waits for a later try (processing or retrying, a next try set, no live lease), is due
 * at once, so the worker's next pass records the period paid without a charge (prepareTry) instead of
 * leaving it dunned, the subscription past due, until that try. Called once the payment's transaction
 * has committed, as a statement of its own that touches the cycle's row only: it never writes an open
 * cycle inside the payment's transaction (the worker locks subscription, then cycle, then payment; inside
 * it only a closed cycle is written, by paidAfterCycleClosed, and no worker or cancel locks a closed one).
 * A cycle whose try is in flight needs nothing: that try's answer, or its read back, records the period.
 * One whose try is flagged (no next try) is not made due: it waits for the operator, and a cancel that
 * closes it meanwhile finds the payment paid and makes the period paid (closeCycle).
 */
export async function renewalPaidElsewhere(
  ctx: AppContext,
  payment: Pick<PaymentRow, 'id' | 'subscription_id' | 'status'>,
): Promise<void> {
  if (payment.subscription_id === null || !wasPaid(payment.status)) return;
  const subscription = await ctx.db
    .selectFrom('subscriptions')
    .select('test_clock_at')
    .where('id', '=', payment.subscription_id)
    .executeTakeFirst();
  if (!subscription) return;
  const realNowIso = ctx.clock().toISOString();
  const nowIso = clockOf(ctx, subscription).toISOString();
  await ctx.db
    .updateTable('subscription_cycles')
    .set({ next_attempt_at: nowIso, updated_at: nowIso })
    // By its subscription first: the unique (subscription, period) index finds its few cycles.
    .where('subscription_id', '=', payment.subscription_id)
    .where('payment_id', '=', payment.id)
    .where('status', 'in', ['processing', 'retrying'])
    .where('next_attempt_at', '>', nowIso)
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<=', realNowIso)]))
    .execute();
}

/**
 * After the commit of a payment's move by a read outside the renewal worker (a provider's webhook, the
 * sync loop, the reconciler, an operator's resolution): a renewal's payment paid has its cycle's next try
 * due now (renewalPaidElsewhere); one whose cycle was closed while the bank decided (its period paid
 * after all, payments/transitions.ts) has its receipt sent, once: the move that paid it happened once.
 */
export async function afterPaymentRead(
  ctx: AppContext,
  applied: Pick<AppliedState, 'payment' | 'changed' | 'closedPeriodPaid'>,
): Promise<void> {
  if (applied.changed) await renewalPaidElsewhere(ctx, applied.payment);
  if (applied.closedPeriodPaid !== null) await sendCustomerMail(ctx, applied.closedPeriodPaid, 'receipt');
}

/** One pass: schedules due periods, then tries due cycles. Returns how many things it did. */
export async function runRenewals(ctx: AppContext, only: SubscriptionRow | null = null): Promise<number> {
  const outbox: Outbox = [];
  let done = 0;
  try {
    for (const id of await dueSubscriptions(ctx, only)) if (await scheduleOne(ctx, id, outbox)) done += 1;
    for (const cycle of await claimCycles(ctx, only)) {
      try {
        if (await tryCycle(ctx, cycle.id, outbox)) done += 1;
      } catch (error) {
        // Nothing was charged without its row. A try that cannot start (the organization suspended, the
        // plan's price now outside its limits) is put off an hour, so it neither spins nor starves the
        // batch; a try whose row was written is the reconciler's.
        if (ctx.config.logLevel !== 'silent')
          console.error(`kassa: renewal of cycle ${cycle.id} failed:`, error);
        await putOff(ctx, cycle.id).catch(() => {});
      }
    }
  } finally {
    await flush(ctx, outbox);
  }
  return done;
}
