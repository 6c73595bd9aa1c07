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
//    Then the provider charges the saved card off-session; then its answer is recorded: the payment moves
//    as any payment does (attempts, ledger, transaction.status_changed), and dunning.ts decides the rest
//    (a refusal of a payment the provider shows paid is that payment, not a decline: answerOfTry).
//    An answer that never came leaves the cycle waiting (next_attempt_at null): the reconciler reads the
//    charge back (renewalOperationHandlers: by the provider payment's id once known, else by reference)
//    and finishes the try. It is never charged again. A renewal payment the provider canceled (by hand
//    in Stripe's Dashboard) is replaced by a new one on the cycle's next try (prepareTry).
//    A try the provider refuses (a refused key, a rate limit) is made again hourly under the same key, for
//    PROVIDER_ERROR_LIMIT_MS; then it waits, flagged. A flagged try (that, or one the reconciler could not
//    read back by its last read) waits for the operator: kassa renewal resolve (resolve.ts).
//
// Time: the schedule runs on the subscription's clock, which is real time, or for a sandbox subscription
// with a test clock the frozen time advance-clock moved it to; payments and events carry real time.
import { randomBytes } from 'node:crypto';
import type { AppContext } from '../../context.ts';
import { isPostgres } from '../../db/connection.ts';
import type { Executor } from '../../db/database.ts';
import { toBigInt } from '../../lib/money.ts';
import { callProvider } from '../../provider/operations/perform.ts';
import type { OperationHandler, OperationHandlers } from '../../provider/operations/reconciler.ts';
import {
  NEVER_MADE,
  recordOperation,
  reopenOperation,
  settleOperation,
} from '../../provider/operations/store.ts';
import { type OperationRow, READ_OPERATION_STATES } from '../../provider/operations/table.ts';
import {
  outcomeOfAttempt,
  type ProviderAttempt,
  type ProviderOutcome,
  type ProviderPaymentState,
} from '../../provider/types.ts';
import { openCheckoutPayment } from '../checkout/provider-form.ts';
import { createCheckoutSession } from '../checkout/service.ts';
import * as checkouts from '../checkout/store.ts';
import { type PaymentRow, wasPaid } from '../payments/table.ts';
import { applyProviderState, movePayment } from '../payments/transitions.ts';
import {
  afterTry,
  answerOfTry,
  type CustomerMail,
  type DunningStep,
  giveUp,
  MAX_TRIES,
  type TryResult,
} from './dunning.ts';
import { sendCustomerMail } from './mails.ts';
import { periodBounds, renewalDue } from './periods.ts';
import { subscriberBilling } from './signup.ts';
import { claimDueCycles, createCycle } from './store.ts';
import type { SubscriptionCycleRow, SubscriptionPlanRow, SubscriptionRow } from './table.ts';

const BATCH = 20;
/** How long a try the provider refused (not a decline) waits before it is made again. */
const PROVIDER_ERROR_PAUSE_MS = 3_600_000;
/**
 * How long the provider may refuse one try (a refused key, a rate limit), counted on the subscription's
 * clock from the first refusal, before the try is flagged for the operator instead of made again.
 */
export const PROVIDER_ERROR_LIMIT_MS = 72 * 3_600_000;
export const RENEWAL_KIND = 'renewal_charge';
export const CYCLE_SUBJECT = 'subscription_cycle';

/** The idempotency key of try `tryNumber` of a cycle (its write-ahead operation's). */
export function renewalKey(cycleId: number, tryNumber: number): string {
  return `kassa-renew-${cycleId}-${tryNumber}`;
}
/** This process's name on the leases it takes. */
const WORKER_ID = `renewal-${process.pid}-${randomBytes(4).toString('hex')}`;

type Plan = Pick<
  SubscriptionPlanRow,
  'name' | 'interval' | 'interval_count' | 'public_id' | 'amount' | 'currency'
>;
type SubscriptionWithPlan = SubscriptionRow & { plan: Plan };

/** The time a subscription lives in: its test clock, or real time. */
export function clockOf(ctx: AppContext, subscription: Pick<SubscriptionRow, 'test_clock_at'>): Date {
  return subscription.test_clock_at === null ? ctx.clock() : new Date(subscription.test_clock_at);
}

/** The subscription with its plan, locked for the rest of the transaction on PostgreSQL. */
async function lockSubscription(trx: Executor, id: number): Promise<SubscriptionWithPlan> {
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

function recurrenceOf(subscription: SubscriptionWithPlan) {
  return { interval: subscription.plan.interval, intervalCount: subscription.plan.interval_count };
}

/** Mails to send once the transaction that decided them has committed. */
export type Outbox = { subscriptionId: number; mail: CustomerMail }[];

export async function flush(ctx: AppContext, outbox: Outbox) {
  for (const { subscriptionId, mail } of outbox) await sendCustomerMail(ctx, subscriptionId, mail);
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
      await cancelAtPeriodEnd(trx, subscription, nowIso, ctx.clock().toISOString());
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

/** Closes a cycle without a charge (void: canceled; uncollectible: given up) and its open payment. */
async function closeCycle(
  trx: Executor,
  cycle: SubscriptionCycleRow,
  status: 'void' | 'uncollectible',
  nowIso: string,
  realNowIso: string,
) {
  await trx
    .updateTable('subscription_cycles')
    .set({ status, next_attempt_at: null, leased_by: null, lease_until: null, updated_at: nowIso })
    .where('id', '=', cycle.id)
    .execute();
  if (cycle.payment_id !== null) {
    await movePayment(
      trx,
      cycle.payment_id,
      'processing',
      status === 'void' ? 'canceled' : 'failed',
      realNowIso,
    );
  }
}

/** Whether the merchant's cancel at the period's end is due: asked for, and that period has ended. */
function periodEndCancelDue(subscription: SubscriptionRow, nowIso: string): boolean {
  return (
    subscription.cancel_at_period_end === 1 &&
    subscription.status !== 'canceled' &&
    subscription.next_renewal_at !== null &&
    Date.parse(subscription.next_renewal_at) <= Date.parse(nowIso)
  );
}

/**
 * The cancel at the period's end, once that end has come and no try is in flight: canceled then
 * (`canceled_at` = the period's end, reason merchant), and, as cancel now does, a cycle still being
 * collected is void and its renewal payment canceled. No try is made at or after the period's end
 * (prepareTry), so every charge of the subscription was made before canceled_at.
 */
async function cancelAtPeriodEnd(
  trx: Executor,
  subscription: SubscriptionRow,
  nowIso: string,
  realNowIso: string,
) {
  const open = await trx
    .selectFrom('subscription_cycles')
    .selectAll()
    .where('subscription_id', '=', subscription.id)
    .where('status', 'in', ['processing', 'retrying'])
    .execute();
  for (const cycle of open) await closeCycle(trx, cycle, 'void', nowIso, realNowIso);
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
async function applyStep(
  trx: Executor,
  subscription: SubscriptionWithPlan,
  cycle: SubscriptionCycleRow,
  step: DunningStep,
  nowIso: string,
  realNowIso: string,
) {
  if (step.cycleStatus === 'uncollectible') {
    await closeCycle(trx, cycle, 'uncollectible', nowIso, realNowIso);
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
      await closeCycle(trx, cycle, 'void', nowIso, realNowIso);
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
      await cancelAtPeriodEnd(trx, subscription, nowIso, realNowIso);
      outbox.push({ subscriptionId: subscription.id, mail: 'canceled' });
      return null;
    }
    if (cycle.needs_new_card === 1) {
      // The customer gave no new card before the last try's time: the period is not collected.
      await applyStep(trx, subscription, cycle, giveUp(), nowIso, realNowIso);
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

/** A charge the provider has not decided (pending) is recorded, and read back, as an unknown one is. */
function undecidedAsUnknown(outcome: ProviderOutcome): ProviderOutcome {
  return outcome.status === 'pending' ? { status: 'unknown', reason: 'pending' } : outcome;
}

/** What a try's answer means for dunning; null while the charge's outcome is not known. */
function tryResultOf(outcome: ProviderOutcome): TryResult | null {
  switch (outcome.status) {
    case 'succeeded':
      return { succeeded: true };
    case 'failed':
      return { succeeded: false, declineCode: outcome.code };
    case 'requires_action':
      // Off-session, nobody can authenticate: the customer must give the card again (update-card page).
      return { succeeded: false, declineCode: 'authentication_required' };
    default:
      return null;
  }
}

/**
 * Step 3 (also the reconciler's, with the outcome it read): records a try's answer once. A try already
 * finished, or a cycle no longer waiting for this try, is left alone. Returns whether the try's
 * operation was flagged for the operator (the provider refused it for PROVIDER_ERROR_LIMIT_MS).
 */
async function finishTry(
  ctx: AppContext,
  cycleId: number,
  tryNumber: number,
  outcome: ProviderOutcome,
  state: ProviderPaymentState | null,
  outbox: Outbox,
): Promise<boolean> {
  return ctx.db
    .transaction()
    .execute((trx) => recordTry(ctx, trx, cycleId, tryNumber, outcome, state, outbox));
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

/** Whether the cycle is waiting for the answer to try `tryNumber` (made, not recorded, nothing next). */
export function waitsForTry(cycle: SubscriptionCycleRow, tryNumber: number): boolean {
  return (
    Number(cycle.attempts) === tryNumber &&
    cycle.next_attempt_at === null &&
    ['processing', 'retrying'].includes(cycle.status)
  );
}

/**
 * A try the provider refused (no card was tried) is not a try: its number is given back, so the same
 * try, under the same key, is made at `nextAttemptAt`. The cycle's first try time is kept only if an
 * earlier try was made (the retry schedule runs from the first real try). `since`: when the refusals
 * began (null: a new count).
 */
export async function putTryBack(
  trx: Executor,
  cycle: SubscriptionCycleRow,
  tryNumber: number,
  nextAttemptAt: string,
  since: string | null,
  nowIso: string,
) {
  await trx
    .updateTable('subscription_cycles')
    .set({
      attempts: tryNumber - 1,
      first_attempt_at: tryNumber === 1 ? null : cycle.first_attempt_at,
      next_attempt_at: nextAttemptAt,
      provider_errors_since: since,
      leased_by: null,
      lease_until: null,
      updated_at: nowIso,
    })
    .where('id', '=', cycle.id)
    .execute();
}

/**
 * The provider has refused the try for PROVIDER_ERROR_LIMIT_MS: it is not made again by itself. The cycle
 * waits (no next try, as for an answer never read) and the try's operation is flagged, with what the
 * provider said, for the operator: on the renewal payment's review, `kassa renewal list`, `kassa doctor`
 * and /metrics; `kassa renewal resolve` takes it from there.
 */
async function flagRefusedTry(
  ctx: AppContext,
  trx: Executor,
  subscription: SubscriptionRow,
  cycle: SubscriptionCycleRow,
  tryNumber: number,
  refusal: Extract<ProviderOutcome, { status: 'failed' }>,
  since: string,
  nowIso: string,
) {
  const realNowIso = ctx.clock().toISOString();
  await trx
    .updateTable('subscription_cycles')
    .set({
      provider_errors_since: since,
      next_attempt_at: null,
      leased_by: null,
      lease_until: null,
      updated_at: nowIso,
    })
    .where('id', '=', cycle.id)
    .execute();
  const reason = `${subscription.provider} refused every call of this try since ${since} (${refusal.code}: ${refusal.message})`;
  await trx
    .updateTable('provider_operations')
    .set({
      state: 'flagged',
      outcome: 'failed',
      outcome_code: refusal.code,
      outcome_message: refusal.message.slice(0, 500),
      flagged_at: realNowIso,
      next_read_at: null,
      last_read_error: reason.slice(0, 500),
      updated_at: realNowIso,
    })
    .where('idempotency_key', '=', renewalKey(cycle.id, tryNumber))
    .execute();
  if (ctx.config.logLevel !== 'silent')
    console.error(
      `kassa: renewal of cycle ${cycle.id}: ${reason}; flagged for the operator (kassa renewal list)`,
    );
}

/** finishTry in the caller's transaction (kassa renewal resolve records its try in its own). */
export async function recordTry(
  ctx: AppContext,
  trx: Executor,
  cycleId: number,
  tryNumber: number,
  outcome: ProviderOutcome,
  state: ProviderPaymentState | null,
  outbox: Outbox,
): Promise<boolean> {
  const { subscription, cycle } = await lockCycle(trx, cycleId);
  const nowIso = clockOf(ctx, subscription).toISOString();
  const realNowIso = ctx.clock().toISOString();
  if (state && cycle.payment_id !== null) await applyProviderState(trx, cycle.payment_id, state, realNowIso);
  const result = tryResultOf(outcome);
  if (result === null || !waitsForTry(cycle, tryNumber)) return false;
  if (outcome.status === 'failed' && outcome.providerError === true) {
    // The provider refused the call itself (a refused key, a rate limit): no card was tried, so this is
    // not a try. No dunning step and no mail; the same try (same number, same key) is made again after
    // a pause, the fifth as well, until the refusals have lasted PROVIDER_ERROR_LIMIT_MS: then the try
    // is flagged for the operator instead (an hourly retry for ever hid a revoked key).
    const since = cycle.provider_errors_since ?? nowIso;
    if (Date.parse(nowIso) - Date.parse(since) >= PROVIDER_ERROR_LIMIT_MS) {
      await flagRefusedTry(ctx, trx, subscription, cycle, tryNumber, outcome, since, nowIso);
      return true;
    }
    const next = new Date(Date.parse(nowIso) + PROVIDER_ERROR_PAUSE_MS).toISOString();
    await putTryBack(trx, cycle, tryNumber, next, since, nowIso);
    if (ctx.config.logLevel !== 'silent')
      console.error(
        `kassa: renewal of cycle ${cycle.id} refused by ${subscription.provider} (${outcome.code}: ${outcome.message}); the same try again in an hour`,
      );
    return false;
  }
  if (outcome.status === 'failed' && outcome.code === NEVER_MADE && tryNumber < MAX_TRIES) {
    // The try never reached the provider (a crash before the call): nothing was charged and nobody
    // declined, so the period is tried again at once, under the next key. A fifth try has no next
    // one (the cycle's CHECK allows five), so it counts as that try's decline: known, left as is. The
    // provider answered: its refusals are over.
    await trx
      .updateTable('subscription_cycles')
      .set({
        next_attempt_at: nowIso,
        provider_errors_since: null,
        leased_by: null,
        lease_until: null,
        updated_at: nowIso,
      })
      .where('id', '=', cycle.id)
      .execute();
    return false;
  }
  if (!result.succeeded && cycle.payment_id !== null) {
    // A charge that was processing at the bank (the payment `pending`), then declined: the payment is
    // `failed` (pending → failed, one event), as a checkout's is. It takes no more tries: the next one
    // charges a new renewal payment (prepareTry), and its declined PaymentIntent is never confirmed again.
    await movePayment(trx, cycle.payment_id, 'pending', 'failed', realNowIso);
  }
  return recordDecided(ctx, trx, subscription, cycle, tryNumber, result, outbox);
}

/**
 * A try decided (its answer, or its payment found paid already: prepareTry), in the caller's
 * transaction that holds the subscription's lock: the dunning step, its mail, and a cancel at the
 * period's end that was waiting for it. The payment is not moved here (the try's provider state was
 * applied before, and settled the payment once if it became paid).
 */
async function recordDecided(
  ctx: AppContext,
  trx: Executor,
  subscription: SubscriptionWithPlan,
  cycle: SubscriptionCycleRow,
  tryNumber: number,
  result: TryResult,
  outbox: Outbox,
): Promise<false> {
  const nowIso = clockOf(ctx, subscription).toISOString();
  const realNowIso = ctx.clock().toISOString();
  if (cycle.provider_errors_since !== null) {
    // The provider answered, or the payment is paid: its refusals are over.
    await trx
      .updateTable('subscription_cycles')
      .set({ provider_errors_since: null })
      .where('id', '=', cycle.id)
      .execute();
  }
  const step = afterTry(new Date(cycle.first_attempt_at ?? nowIso), tryNumber, result);
  if (periodEndCancelDue(subscription, nowIso)) {
    // A try made before the period's end, at which the merchant canceled, answered after it (the
    // cancel waited for it). A success paid the period it was made for, which ended at canceled_at:
    // it is kept (receipt). A decline is not dunned: the cycle is void, its payment canceled. Either
    // way the subscription ends at the period's end, reason merchant, and nothing is tried again.
    if (result.succeeded) {
      await applyStep(trx, subscription, cycle, step, nowIso, realNowIso);
      outbox.push({ subscriptionId: subscription.id, mail: 'receipt' });
    } else await closeCycle(trx, cycle, 'void', nowIso, realNowIso);
    if (!(await renewalInFlight(trx, subscription.id, realNowIso))) {
      await cancelAtPeriodEnd(trx, subscription, nowIso, realNowIso);
      outbox.push({ subscriptionId: subscription.id, mail: 'canceled' });
    }
    return false;
  }
  await applyStep(trx, subscription, cycle, step, nowIso, realNowIso);
  if (step.mail) outbox.push({ subscriptionId: subscription.id, mail: step.mail });
  return false;
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
 * has committed, as a statement of its own that touches the cycle's row only: it never takes a lock
 * inside the payment's transaction (the worker locks subscription, then cycle, then payment). A cycle
 * whose try is in flight needs nothing: that try's answer, or its read back, records the period.
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

/** How far behind Kassa's clock a provider's may be, when an attempt is matched to a try by time. */
const CLOCK_SKEW_MS = 60_000;

/**
 * The attempt a renewal try made, at the provider: the one under the try's key, where the provider says
 * which write made each attempt (the simulator). Stripe does not (a charge carries no idempotency key):
 * there, a PaymentIntent that succeeded paid the period, whichever try charged it; otherwise the try's
 * attempt is the newest one made since its row was written (tries are days apart, or five minutes and
 * more when one never reached the provider), else the newest one Kassa has not recorded (a clock Kassa
 * runs ahead of the provider's: a subscription's test clock). A cycle's tries run one after another,
 * off-session, so nobody else makes attempts on its payment. Undefined: the try made none.
 */
async function attemptOfTry(
  ctx: AppContext,
  operation: OperationRow,
  state: ProviderPaymentState,
): Promise<ProviderAttempt | undefined> {
  const keyed = state.attempts.find((known) => known.idempotencyKey === operation.idempotency_key);
  if (keyed || state.attempts.some((known) => known.idempotencyKey != null)) return keyed;
  const newestFirst = [...state.attempts].sort((a, b) => b.attemptedAt.localeCompare(a.attemptedAt));
  if (state.outcome === 'PAYMENT_SUCCESS')
    return newestFirst.find((known) => known.status === 'succeeded') ?? newestFirst[0];
  // Made since the try's row was written (the provider's clock may be a little behind ours): the
  // sync loop or a webhook may have recorded it already (helper-30's review), so it is found by time.
  const since = Date.parse(operation.created_at) - CLOCK_SKEW_MS;
  const made = newestFirst.find((attempt) => Date.parse(attempt.attemptedAt) >= since);
  if (made) return made;
  // The cycle's payment's attempts; one recorded while it was pending (an earlier read) is still this
  // try's to decide.
  const recorded = await ctx.db
    .selectFrom('deposit_attempts')
    .innerJoin('subscription_cycles', 'subscription_cycles.payment_id', 'deposit_attempts.payment_id')
    .select('deposit_attempts.provider_attempt_id')
    .where('subscription_cycles.id', '=', operation.subject_id)
    .where('deposit_attempts.status', 'not in', ['pending', 'processing'])
    .execute();
  const known = new Set(recorded.map((row) => row.provider_attempt_id));
  return newestFirst.find((attempt) => !known.has(attempt.attemptId));
}

/** The try a renewal charge's operation made (its context's `try`). */
export function tryNumberOf(operation: Pick<OperationRow, 'context'>): number {
  return Number((JSON.parse(operation.context) as { try?: number }).try ?? 0);
}

/** What the provider's state of a cycle's payment shows of one try: its attempt's outcome, or unknown. */
export async function outcomeOfTry(
  ctx: AppContext,
  operation: OperationRow,
  state: ProviderPaymentState,
): Promise<ProviderOutcome> {
  const attempt = await attemptOfTry(ctx, operation, state);
  return attempt
    ? outcomeOfAttempt(attempt, state.nextAction ?? null)
    : { status: 'unknown', reason: 'no attempt of this try at the provider' };
}

/**
 * The provider's state of the payment a try charged: read by its provider id once Kassa has recorded it
 * (an earlier try's answer, a webhook, a sync), by the try's reference only while none is known. A read
 * by id is consistent; Stripe's search by reference is not (a minute behind, more during an outage), so it
 * could miss the PaymentIntent a try has just made and have it taken for never made.
 */
async function providerStateOfTry(
  ctx: AppContext,
  operation: OperationRow,
): Promise<ProviderPaymentState | null> {
  const provider = ctx.providers.named(operation.provider);
  const payment =
    operation.organization_id === null
      ? undefined
      : await ctx.db
          .selectFrom('payments')
          .select('provider_payment_id')
          .where('organization_id', '=', operation.organization_id)
          .where('public_id', '=', operation.reference)
          .executeTakeFirst();
  const known = payment?.provider_payment_id ?? null;
  return known === null ? provider.findPayment(operation.reference) : provider.getPayment(known);
}

/**
 * The reconciler's side: a renewal charge whose answer was lost is read back, never made again. Whatever
 * the provider has of the cycle's payment is recorded first (its provider id above all: the next try
 * confirms that payment instead of making another one); a charge the provider has not decided yet is
 * read again on the reconciler's schedule, not taken for one that was never made.
 */
const renewalCharge: OperationHandler = {
  async read(ctx, operation) {
    const state = await providerStateOfTry(ctx, operation);
    const tryNumber = tryNumberOf(operation);
    if (!state) return { outcome: null };
    const outcome = await outcomeOfTry(ctx, operation, state);
    const outbox: Outbox = [];
    // An outcome not known yet (pending, or no attempt) only records the provider's state.
    await finishTry(ctx, operation.subject_id, tryNumber, undecidedAsUnknown(outcome), state, outbox);
    await flush(ctx, outbox);
    if (outcome.status === 'unknown') return { outcome: null };
    if (outcome.status === 'pending') return { outcome: null, pending: true };
    return { outcome, providerObjectId: state.providerPaymentId };
  },
  async neverMade(ctx, operation) {
    // Never reached the provider: nothing was charged; the period is tried again at once (finishTry).
    const tryNumber = tryNumberOf(operation);
    const outbox: Outbox = [];
    await finishTry(
      ctx,
      operation.subject_id,
      tryNumber,
      {
        status: 'failed',
        code: NEVER_MADE,
        message: 'never reached the provider',
        retryable: true,
      },
      null,
      outbox,
    );
    await flush(ctx, outbox);
  },
  // Flagged, it waits for the operator's statement (paid or not charged) and goes on with the dunning.
  resolvedBy: (key) => `kassa renewal resolve ${key} paid|not-charged`,
};

export const renewalOperationHandlers: OperationHandlers = { [RENEWAL_KIND]: renewalCharge };

/**
 * Whether a try of one of the subscription's cycles is being charged or reconciled (cancel now and the
 * cancel at the period's end wait). A try flagged after the reconciler's last read is not: nobody will
 * read it again, so waiting for it would hold the subscription for ever. It is on the payment's review
 * in the dashboard (payments/review.ts) and the operator resolves it (resolve.ts); if the provider
 * later shows it charged after the cycle was voided, the payment records a provider_conflict instead of
 * becoming paid (applyProviderState).
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

/** advance-clock runs at most this many passes (each a schedule and a try): far more than 400 days need. */
const MAX_CLOCK_PASSES = 2_000;

/**
 * POST /subscriptions/{id}/advance-clock/ (sandbox only): a test clock like Stripe's. The subscription's
 * time moves `days` forward from where it stands (real time the first time), and every renewal and retry
 * that falls due on the way runs now, in order, before the answer. The worker leaves clocked ones alone.
 * `recordStart` (the audit entry) is written in the transaction of the clock's first move: the passes
 * charge through the provider, so they cannot share one transaction, and the first move is the change
 * the merchant asked for (an advance whose first move fails leaves no entry, and one whose entry fails
 * leaves the clock where it was).
 */
export async function advanceClock(
  ctx: AppContext,
  subscription: SubscriptionRow,
  days: number,
  recordStart?: (trx: Executor) => Promise<void>,
): Promise<void> {
  const target = new Date(clockOf(ctx, subscription).getTime() + days * 86_400_000);
  // The time of a pass that did nothing: what was due then is waiting (a cancel at the period's end on a
  // try in flight), so the clock steps past it instead of running that pass again and again.
  let idleAt: number | null = null;
  for (let pass = 0; pass < MAX_CLOCK_PASSES; pass += 1) {
    const current = await ctx.db
      .selectFrom('subscriptions')
      .selectAll()
      .where('id', '=', subscription.id)
      .executeTakeFirstOrThrow();
    // Step to the next moment something falls due (or the target), so each try runs at its own time.
    const next = await nextDueAt(ctx, current, idleAt);
    const at =
      next !== null && next < target.getTime()
        ? Math.max(next, clockOf(ctx, current).getTime())
        : target.getTime();
    const move = (db: Executor) =>
      db
        .updateTable('subscriptions')
        .set({ test_clock_at: new Date(at).toISOString() })
        .where('id', '=', subscription.id)
        .execute();
    if (pass === 0 && recordStart) {
      await ctx.db.transaction().execute(async (trx) => {
        await move(trx);
        await recordStart(trx);
      });
    } else await move(ctx.db);
    const moved = await runRenewals(ctx, { ...current, test_clock_at: new Date(at).toISOString() });
    if (moved === 0 && at >= target.getTime()) return;
    idleAt = moved === 0 ? at : null;
  }
}

/** The earliest time (later than `after`, if given) a renewal or a retry of the subscription falls due, or null. */
async function nextDueAt(
  ctx: AppContext,
  subscription: SubscriptionRow,
  after: number | null,
): Promise<number | null> {
  const times: number[] = [];
  if (
    subscription.next_renewal_at !== null &&
    subscription.status !== 'canceled' &&
    (subscription.status !== 'past_due' || subscription.cancel_at_period_end === 1)
  ) {
    times.push(Date.parse(subscription.next_renewal_at));
  }
  const cycle = await ctx.db
    .selectFrom('subscription_cycles')
    .select((eb) => eb.fn.min('next_attempt_at').as('next'))
    .where('subscription_id', '=', subscription.id)
    .where('status', 'in', ['processing', 'retrying'])
    .executeTakeFirst();
  if (cycle?.next) times.push(Date.parse(String(cycle.next)));
  const later = after === null ? times : times.filter((time) => time > after);
  return later.length ? Math.min(...later) : null;
}

/** The renewals loop's next due time: the earliest real-time renewal or try. */
export async function nextRenewalDue(ctx: AppContext): Promise<number | null> {
  const renewal = await ctx.db
    .selectFrom('subscriptions')
    .select((eb) => eb.fn.min('next_renewal_at').as('due'))
    .where('test_clock_at', 'is', null)
    .where((eb) =>
      eb.or([
        eb('status', 'in', ['trialing', 'active']),
        eb.and([eb('status', '=', 'past_due'), eb('cancel_at_period_end', '=', 1)]),
      ]),
    )
    .executeTakeFirst();
  const attempt = await ctx.db
    .selectFrom('subscription_cycles')
    .select((eb) => eb.fn.min('next_attempt_at').as('due'))
    .where('status', 'in', ['processing', 'retrying'])
    .where('subscription_id', 'in', (eb) =>
      eb.selectFrom('subscriptions').select('id').where('test_clock_at', 'is', null),
    )
    .executeTakeFirst();
  const times = [renewal?.due, attempt?.due].filter(Boolean).map((due) => Date.parse(String(due)));
  return times.length ? Math.min(...times) : null;
}
