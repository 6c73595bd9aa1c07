// Subscription plans: what a merchant sells on a schedule. A plan's price, currency and interval never
// change (a new price is a new plan); its name and whether it takes new signups do. Each plan shows its
// signup page's address and two figures: the subscriptions that are not canceled, and their monthly
// recurring revenue.
import type { AppContext } from '../../context.ts';
import type { Executor } from '../../db/database.ts';
import { NotFoundError, ValidationError } from '../../http/errors.ts';
import { isPublicId, newPublicId } from '../../lib/ids.ts';
import { formatAmount, mulDivHalfUp, toBigInt } from '../../lib/money.ts';
import type { Environment } from '../api-keys/table.ts';
import { type Actor, recordAudit } from '../audit/record.ts';
import { cleanName, parsePrice } from '../products/service.ts';
import type { Interval } from './periods.ts';
import type { SubscriptionPlanRow } from './table.ts';

export interface PlanStats {
  active_subscriptions: number;
  /** Minor units per month of the subscriptions that pay (active and past due). */
  mrrMinor: bigint;
}

/**
 * One period's amount as a monthly figure, rounded half up to the minor unit: a month is 1/12 of a
 * year, a week 7 and a day 1 of the 365/12 days of an average month.
 */
export function monthlyAmount(amount: bigint, interval: Interval, count: number): bigint {
  const n = BigInt(count);
  switch (interval) {
    case 'month':
      return mulDivHalfUp(amount, 1n, n);
    case 'year':
      return mulDivHalfUp(amount, 1n, 12n * n);
    case 'week':
      return mulDivHalfUp(amount, 365n, 12n * 7n * n);
    case 'day':
      return mulDivHalfUp(amount, 365n, 12n * n);
  }
}

export function signupUrl(ctx: AppContext, publicId: string): string {
  return `${ctx.config.publicUrl}/subscribe/${publicId}`;
}

export function presentPlan(ctx: AppContext, row: SubscriptionPlanRow, stats: PlanStats | undefined) {
  return {
    id: row.public_id,
    name: row.name,
    amount: formatAmount(toBigInt(row.amount)),
    currency: row.currency,
    interval: row.interval,
    interval_count: row.interval_count,
    trial_days: row.trial_days,
    environment: row.environment,
    is_active: row.is_active === 1,
    signup_url: signupUrl(ctx, row.public_id),
    stats: {
      active_subscriptions: stats?.active_subscriptions ?? 0,
      mrr: formatAmount(stats?.mrrMinor ?? 0n),
    },
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** Per plan: subscriptions not canceled, and the monthly revenue of those that pay. */
async function statsOf(db: Executor, plans: SubscriptionPlanRow[]): Promise<Map<number, PlanStats>> {
  const stats = new Map<number, PlanStats>();
  if (plans.length === 0) return stats;
  const rows = await db
    .selectFrom('subscriptions')
    .select(['plan_id', 'status'])
    .select((eb) => eb.fn.countAll<number | string>().as('count'))
    .where(
      'plan_id',
      'in',
      plans.map((plan) => plan.id),
    )
    .where('status', '<>', 'canceled')
    .groupBy(['plan_id', 'status'])
    .execute();
  const paying = new Map<number, bigint>();
  for (const row of rows) {
    const count = Number(row.count);
    const entry = stats.get(row.plan_id) ?? { active_subscriptions: 0, mrrMinor: 0n };
    entry.active_subscriptions += count;
    stats.set(row.plan_id, entry);
    if (row.status === 'active' || row.status === 'past_due')
      paying.set(row.plan_id, (paying.get(row.plan_id) ?? 0n) + BigInt(count));
  }
  // Rounded once per plan, on the sum: three subscriptions of 7.00 a week are 91.25 a month, not 3 × 30.42.
  for (const plan of plans) {
    const entry = stats.get(plan.id);
    const count = paying.get(plan.id);
    if (entry && count)
      entry.mrrMinor = monthlyAmount(toBigInt(plan.amount) * count, plan.interval, plan.interval_count);
  }
  return stats;
}

async function findPlan(db: Executor, organizationId: number, publicId: string) {
  if (!isPublicId('plan', publicId)) return undefined;
  return db
    .selectFrom('subscription_plans')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('public_id', '=', publicId)
    .executeTakeFirst();
}

async function presentOne(ctx: AppContext, row: SubscriptionPlanRow) {
  return presentPlan(ctx, row, (await statsOf(ctx.db, [row])).get(row.id));
}

export async function listPlans(ctx: AppContext, organizationId: number, environment: Environment) {
  const rows = await ctx.db
    .selectFrom('subscription_plans')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('environment', '=', environment)
    .orderBy('id', 'desc')
    .execute();
  const stats = await statsOf(ctx.db, rows);
  return rows.map((row) => presentPlan(ctx, row, stats.get(row.id)));
}

export async function getPlan(ctx: AppContext, organizationId: number, publicId: string) {
  const row = await findPlan(ctx.db, organizationId, publicId);
  if (!row) throw new NotFoundError('Plan not found.');
  return presentOne(ctx, row);
}

export interface PlanInput {
  name: string;
  amount: unknown;
  currency?: 'USD' | 'EUR';
  interval: Interval;
  interval_count?: number;
  trial_days?: number;
  environment?: Environment;
}

export async function createPlan(ctx: AppContext, organizationId: number, input: PlanInput, actor: Actor) {
  const name = cleanName(input.name);
  const amount = parsePrice('amount', input.amount);
  if (amount > BigInt(Number.MAX_SAFE_INTEGER)) throw new ValidationError('amount: is too large.');
  const now = ctx.clock().toISOString();
  const row = await ctx.db.transaction().execute(async (trx) => {
    const inserted = await trx
      .insertInto('subscription_plans')
      .values({
        public_id: newPublicId('plan'),
        organization_id: organizationId,
        environment: input.environment ?? 'production',
        name,
        amount: Number(amount),
        currency: input.currency ?? 'USD',
        interval: input.interval,
        interval_count: input.interval_count ?? 1,
        trial_days: input.trial_days ?? 0,
        is_active: 1,
        created_at: now,
        updated_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await recordAudit(
      trx,
      organizationId,
      actor,
      {
        action: 'subscription_plan.created',
        target: { type: 'subscription_plan', id: inserted.public_id },
        details: { name: inserted.name, environment: inserted.environment },
      },
      now,
    );
    return inserted;
  });
  return presentPlan(ctx, row, undefined);
}

export async function updatePlan(
  ctx: AppContext,
  organizationId: number,
  publicId: string,
  input: { name?: string; is_active?: boolean },
  actor: Actor,
) {
  const existing = await findPlan(ctx.db, organizationId, publicId);
  if (!existing) throw new NotFoundError('Plan not found.');
  const changes: { name?: string; is_active?: number } = {};
  if (input.name !== undefined) changes.name = cleanName(input.name);
  if (input.is_active !== undefined) changes.is_active = input.is_active ? 1 : 0;
  const now = ctx.clock().toISOString();
  const row = await ctx.db.transaction().execute(async (trx) => {
    const updated = await trx
      .updateTable('subscription_plans')
      .set({ ...changes, updated_at: now })
      .where('id', '=', existing.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    await recordAudit(
      trx,
      organizationId,
      actor,
      {
        action: 'subscription_plan.updated',
        target: { type: 'subscription_plan', id: existing.public_id },
        details: { changes: input },
      },
      now,
    );
    return updated;
  });
  return presentOne(ctx, row);
}
