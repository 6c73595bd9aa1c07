// What the provider tests look at besides the API: the write-ahead operation rows, the simulator's own
// record of a payment, the settlements in the ledger, the events of a payment.
import type { AppContext } from '../../src/context.ts';
import { reconcileDue, reconcileOperation } from '../../src/provider/operations/reconciler.ts';
import { simulatorDb } from '../../src/provider/simulator/store.ts';
import type { ProviderAttempt } from '../../src/provider/types.ts';
import { operationHandlers } from '../../src/worker/loops.ts';

type Ctx = Pick<AppContext, 'db'>;

export function operationsOf(ctx: Ctx, subjectType: string, subjectId: number) {
  return ctx.db
    .selectFrom('provider_operations')
    .selectAll()
    .where('subject_type', '=', subjectType)
    .where('subject_id', '=', subjectId)
    .orderBy('id')
    .execute();
}

/** The attempts (charges) the simulator recorded for a payment, oldest first; [] when it has none. */
export async function simAttempts(ctx: Ctx, reference: string): Promise<ProviderAttempt[]> {
  const row = await simulatorDb(ctx.db)
    .selectFrom('sim_payments')
    .select('attempts')
    .where('reference', '=', reference)
    .executeTakeFirst();
  return row ? (JSON.parse(row.attempts) as ProviderAttempt[]) : [];
}

/** How many times the wallet was credited for a payment. */
export async function settlementsOf(ctx: Ctx, paymentId: number): Promise<number> {
  const row = await ctx.db
    .selectFrom('wallet_movements')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('kind', '=', 'settlement')
    .where('reference_id', '=', paymentId)
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

/** The statuses of a payment's transaction.status_changed events, oldest first. */
export async function eventStatuses(ctx: Ctx, paymentPublicId: string): Promise<string[]> {
  const rows = await ctx.db
    .selectFrom('events')
    .select('payload')
    .where('subject', '=', paymentPublicId)
    .where('type', '=', 'transaction.status_changed')
    .orderBy('id')
    .execute();
  return rows.map((row) => (JSON.parse(row.payload) as { status: string }).status);
}

/** One pass of the reconciler, as the worker runs it. */
export function reconcile(ctx: AppContext): Promise<number> {
  return reconcileDue(ctx, operationHandlers);
}

/**
 * A provider call whose answer was lost, read for the last time by a reconciler that cannot reach the
 * provider: flagged for review, as after 20 hours of failed reads.
 */
export async function flagAfterLastRead(ctx: AppContext, idempotencyKey: string, reason: string) {
  const operation = () =>
    ctx.db
      .selectFrom('provider_operations')
      .selectAll()
      .where('idempotency_key', '=', idempotencyKey)
      .executeTakeFirstOrThrow();
  const unknown = await operation();
  await ctx.db
    .updateTable('provider_operations')
    .set({ reads: ctx.config.reconcileScheduleMs.length - 1 })
    .where('id', '=', unknown.id)
    .execute();
  const unreachable = {
    [unknown.kind]: {
      read: async () => {
        throw new Error(reason);
      },
    },
  };
  await reconcileOperation(ctx, unreachable, await operation());
  const flagged = await operation();
  if (flagged.state !== 'flagged') throw new Error(`${idempotencyKey} is ${flagged.state}, not flagged`);
  return flagged;
}
