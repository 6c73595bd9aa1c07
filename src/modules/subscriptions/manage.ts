// The merchant's view of subscriptions: the list (filters, search, pages), the detail with its cycles,
// and cancellation, now or at the end of the period. Nothing here charges: renewals are the worker's.
import type { FastifyRequest } from 'fastify';
import { sql } from 'kysely';
import type { AppContext } from '../../context.ts';
import { isPostgres } from '../../db/connection.ts';
import type { Executor } from '../../db/database.ts';
import { ConflictError, NotFoundError, ValidationError } from '../../http/errors.ts';
import {
  choiceParam,
  containsPattern,
  pageRequest,
  paginated,
  param,
  queryOf,
  searchParam,
} from '../../http/pagination.ts';
import { isPublicId } from '../../lib/ids.ts';
import { formatAmount, toBigInt } from '../../lib/money.ts';
import type { Environment } from '../api-keys/table.ts';
import { type Actor, recordAudit } from '../audit/record.ts';
import type { SubscriptionStatus } from './dunning.ts';
import { periodBounds, periodIndexAt } from './periods.ts';
import { advanceClock } from './renewal-clock.ts';
import { clockOf, flush, type Outbox, renewalInFlight, voidOpenCycles } from './renewal-cycles.ts';
import { createUpdateCardLink } from './signup.ts';
import type { SubscriptionCycleRow, SubscriptionPlanRow, SubscriptionRow } from './table.ts';

const STATUSES: readonly SubscriptionStatus[] = ['trialing', 'active', 'past_due', 'canceled'];
const ENVIRONMENTS: readonly Environment[] = ['production', 'sandbox'];

type SubscriptionWithPlan = SubscriptionRow &
  Pick<SubscriptionPlanRow, 'interval' | 'interval_count'> & { plan_public_id: string; plan_name: string };

function withPlan(db: Executor) {
  return db
    .selectFrom('subscriptions')
    .innerJoin('subscription_plans', 'subscription_plans.id', 'subscriptions.plan_id')
    .selectAll('subscriptions')
    .select([
      'subscription_plans.public_id as plan_public_id',
      'subscription_plans.name as plan_name',
      'subscription_plans.interval',
      'subscription_plans.interval_count',
    ]);
}

/**
 * The period a subscription is in: the trial (signup to trial end) before the anchor, otherwise the
 * period of the anchor's schedule that holds the moment, which is now, or the cancellation time.
 */
function currentPeriod(row: SubscriptionWithPlan, now: Date): { start: string; end: string } {
  const anchor = new Date(row.anchor_at);
  const at = row.canceled_at === null ? now : new Date(row.canceled_at);
  const recurrence = { interval: row.interval, intervalCount: row.interval_count };
  const k = periodIndexAt(anchor, recurrence, at);
  if (k < 0) return { start: row.created_at, end: row.anchor_at };
  const bounds = periodBounds(anchor, recurrence, k);
  return { start: bounds.start.toISOString(), end: bounds.end.toISOString() };
}

export function presentSubscription(row: SubscriptionWithPlan, now: Date) {
  // A sandbox subscription on a test clock lives at the clock's time.
  const period = currentPeriod(row, row.test_clock_at === null ? now : new Date(row.test_clock_at));
  return {
    id: row.public_id,
    plan: { id: row.plan_public_id, name: row.plan_name },
    status: row.status,
    environment: row.environment,
    customer_email: row.customer_email,
    customer_name: row.customer_name,
    card: {
      brand: row.card_brand,
      last4: row.card_last4,
      exp_month: row.card_exp_month,
      exp_year: row.card_exp_year,
    },
    current_period_start: period.start,
    current_period_end: period.end,
    trial_end: row.trial_end,
    cancel_at_period_end: row.cancel_at_period_end === 1,
    canceled_at: row.canceled_at,
    cancel_reason: row.cancel_reason,
    test_clock_at: row.test_clock_at,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

function presentCycle(row: SubscriptionCycleRow & { transaction_id: string | null }) {
  return {
    period_index: row.period_index,
    period_start: row.period_start,
    period_end: row.period_end,
    amount: formatAmount(toBigInt(row.amount)),
    currency: row.currency,
    status: row.status,
    attempts: row.attempts,
    next_attempt_at: row.next_attempt_at,
    transaction_id: row.transaction_id,
  };
}

export async function listSubscriptions(ctx: AppContext, organizationId: number, request: FastifyRequest) {
  const query = queryOf(request);
  const status = choiceParam(query, 'status', STATUSES);
  const environment = choiceParam(query, 'environment', ENVIRONMENTS) ?? 'production';
  const plan = param(query, 'plan') || undefined;
  const search = searchParam(query);
  const page = pageRequest(query);
  let filtered = withPlan(ctx.db)
    .where('subscriptions.organization_id', '=', organizationId)
    .where('subscriptions.environment', '=', environment);
  if (status) filtered = filtered.where('subscriptions.status', '=', status);
  // A plan filter that names no plan of this organization matches nothing (not a 400: a deleted or
  // mistyped id lists an empty page, as a search does).
  if (plan) filtered = filtered.where('subscription_plans.public_id', '=', plan);
  if (search) {
    const pattern = containsPattern(search);
    filtered = filtered.where((eb) =>
      eb.or([
        eb(sql`lower(subscriptions.customer_email)`, 'like', sql`${pattern} escape '\\'`),
        eb(sql`lower(coalesce(subscriptions.customer_name, ''))`, 'like', sql`${pattern} escape '\\'`),
      ]),
    );
  }
  const counted = await filtered
    .clearSelect()
    .select((eb) => eb.fn.countAll<number | string>().as('count'))
    .executeTakeFirstOrThrow();
  const rows = await filtered
    .orderBy('subscriptions.id', 'desc')
    .limit(page.pageSize)
    .offset(page.offset)
    .execute();
  const now = ctx.clock();
  return paginated(
    request,
    page,
    Number(counted.count),
    rows.map((row) => presentSubscription(row, now)),
  );
}

async function findSubscription(db: Executor, organizationId: number, publicId: string) {
  if (!isPublicId('subscription', publicId)) return undefined;
  return withPlan(db)
    .where('subscriptions.organization_id', '=', organizationId)
    .where('subscriptions.public_id', '=', publicId)
    .executeTakeFirst();
}

export async function getSubscription(ctx: AppContext, organizationId: number, publicId: string) {
  const row = await findSubscription(ctx.db, organizationId, publicId);
  if (!row) throw new NotFoundError('Subscription not found.');
  const cycles = await ctx.db
    .selectFrom('subscription_cycles')
    .leftJoin('payments', 'payments.id', 'subscription_cycles.payment_id')
    .selectAll('subscription_cycles')
    .select('payments.public_id as transaction_id')
    .where('subscription_cycles.subscription_id', '=', row.id)
    .orderBy('subscription_cycles.period_index', 'desc')
    .execute();
  return { ...presentSubscription(row, ctx.clock()), cycles: cycles.map(presentCycle) };
}

/**
 * Cancels a subscription. At the period's end (the default): it stays as it is until then, and the
 * renewal that would start the next period cancels it instead. Now: canceled at once, with reason
 * merchant; its unpaid cycles are void and never tried again. A period is either charged before
 * canceled_at or never: while a renewal holds its cycle's lease (a charge may be under way), cancel now
 * is a 409 and changes nothing. The renewal worker must take the subscription's row lock and re-read its
 * status before it writes a try's write-ahead row.
 */
export async function cancelSubscription(
  ctx: AppContext,
  organizationId: number,
  publicId: string,
  atPeriodEnd: boolean,
  actor: Actor,
) {
  const existing = await findSubscription(ctx.db, organizationId, publicId);
  if (!existing) throw new NotFoundError('Subscription not found.');
  if (existing.status === 'canceled') throw new ConflictError('The subscription is already canceled.');
  const outbox: Outbox = [];
  await ctx.db.transaction().execute(async (trx) => {
    // The subscription's row lock (PostgreSQL; SQLite runs one write transaction at a time) orders this
    // against a renewal, which takes the same lock to check the status before it charges.
    if (isPostgres(trx))
      await trx.selectFrom('subscriptions').select('id').where('id', '=', existing.id).forUpdate().execute();
    // The time the cancellation takes effect: read under the lock, not before waiting for it (a renewal
    // that held the lock meanwhile charged before this moment). A sandbox test clock's time, if it has one.
    const realNow = ctx.clock().toISOString();
    const now = clockOf(ctx, existing).toISOString();
    if (atPeriodEnd) {
      const updated = await trx
        .updateTable('subscriptions')
        .set({ cancel_at_period_end: 1, updated_at: now })
        .where('id', '=', existing.id)
        .where('status', '<>', 'canceled')
        .executeTakeFirst();
      if (updated.numUpdatedRows === 0n) throw new ConflictError('The subscription is already canceled.');
    } else {
      if (await renewalInFlight(trx, existing.id, realNow))
        throw new ConflictError('A renewal of this subscription is being charged; try again in a minute.');
      const updated = await trx
        .updateTable('subscriptions')
        .set({
          status: 'canceled',
          canceled_at: now,
          cancel_reason: 'merchant',
          cancel_at_period_end: 0,
          next_renewal_at: null,
          updated_at: now,
        })
        .where('id', '=', existing.id)
        .where('status', '<>', 'canceled')
        .executeTakeFirst();
      if (updated.numUpdatedRows === 0n) throw new ConflictError('The subscription is already canceled.');
      // A period being dunned stops: its cycle void, its renewal payment canceled (no try is in flight:
      // checked above). One pending at the bank (its try flagged after the reconciler's last read) is not:
      // Kassa cannot take it back; it is followed until the bank decides. One the bank paid already (read
      // while the cycle waited, or just before this cancel's lock on it) makes the period paid, with its
      // receipt, and the subscription still ends now (renewal-cycles.ts, closeCycle).
      await voidOpenCycles(trx, existing.id, now, realNow, outbox);
    }
    await recordAudit(
      trx,
      organizationId,
      actor,
      {
        action: 'subscription.canceled',
        target: { type: 'subscription', id: existing.public_id },
        details: { at_period_end: atPeriodEnd },
      },
      realNow,
    );
  });
  // The receipt of a period found paid when its cycle closed, once the cancel has committed.
  await flush(ctx, outbox);
  return getSubscription(ctx, organizationId, publicId);
}

/** POST /subscriptions/{id}/advance-clock/: sandbox subscriptions only (production time never moves). */
export async function advanceSubscriptionClock(
  ctx: AppContext,
  organizationId: number,
  publicId: string,
  days: number,
  actor: Actor,
) {
  const existing = await findSubscription(ctx.db, organizationId, publicId);
  if (!existing) throw new NotFoundError('Subscription not found.');
  if (existing.environment !== 'sandbox') {
    throw new ValidationError(
      'Only a sandbox subscription has a test clock; production time cannot be moved.',
    );
  }
  await advanceClock(ctx, existing, days, (trx) =>
    recordAudit(
      trx,
      organizationId,
      actor,
      {
        action: 'subscription.clock_advanced',
        target: { type: 'subscription', id: existing.public_id },
        details: { days },
      },
      ctx.clock().toISOString(),
    ),
  );
  return getSubscription(ctx, organizationId, publicId);
}

/** POST /subscriptions/{id}/update-card-link/: the customer's single-use page to save a new card. */
export async function updateCardLink(
  ctx: AppContext,
  organizationId: number,
  publicId: string,
  actor: Actor,
) {
  const existing = await findSubscription(ctx.db, organizationId, publicId);
  if (!existing) throw new NotFoundError('Subscription not found.');
  if (existing.status === 'canceled') {
    throw new ConflictError('The subscription is canceled; there is no card to update.');
  }
  return createUpdateCardLink(ctx, existing.id, (trx) =>
    recordAudit(
      trx,
      organizationId,
      actor,
      {
        action: 'subscription.update_card_link_created',
        target: { type: 'subscription', id: existing.public_id },
      },
      ctx.clock().toISOString(),
    ),
  );
}
