// The renewals' times: a sandbox subscription's test clock moved forward, every renewal and retry on the
// way run in order (advanceClock), and the next time the renewals loop has something due.
import type { AppContext } from '../../context.ts';
import type { Executor } from '../../db/database.ts';
import { runRenewals } from './renew.ts';
import { clockOf } from './renewal-cycles.ts';
import type { SubscriptionRow } from './table.ts';

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
