// Retention: what the service writes for its own bookkeeping is deleted once it has served its purpose,
// so the database grows with the business (payments, refunds, payouts, which are never deleted), not with
// traffic. One worker loop, in batches, oldest first, each batch in its own transaction:
// - webhook deliveries that are finished (delivered or failed for good), with their attempts, and
//   dispatched events no delivery refers to any more: after KASSA_RETENTION_DAYS (30; 0 keeps them);
// - dashboard sessions a day after they expired or were revoked, and refund verification codes a day
//   after they expired (neither can be used by then).
// Pending deliveries and undispatched events are never touched, however old.
import { type ExpressionBuilder, sql } from 'kysely';
import type { AppContext } from '../../context.ts';
import type { Database, Executor } from '../../db/database.ts';

const BATCH = 500;
const DAY_MS = 24 * 60 * 60 * 1000;

async function pruneDeliveries(db: Executor, cutoff: string): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const rows = await trx
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('created_at', '<', cutoff)
      .where('status', '<>', 'pending')
      .orderBy('created_at')
      .limit(BATCH)
      .execute();
    const ids = rows.map((row) => row.id);
    if (ids.length === 0) return 0;
    await trx.deleteFrom('webhook_attempts').where('delivery_id', 'in', ids).execute();
    await trx.deleteFrom('webhook_deliveries').where('id', 'in', ids).execute();
    return ids.length;
  });
}

/** The events row of the query has no delivery (first or redelivery) left. */
function noDeliveryRefersToEvent(eb: ExpressionBuilder<Database, 'events'>) {
  return eb.not(
    eb.exists(
      eb
        .selectFrom('webhook_deliveries')
        .select(sql.lit(1).as('one'))
        .whereRef('webhook_deliveries.event_id', '=', 'events.id'),
    ),
  );
}

async function pruneEvents(db: Executor, cutoff: string): Promise<number> {
  // One statement: the batch is chosen and deleted together, so a redelivery made meanwhile keeps its event.
  const result = await db
    .deleteFrom('events')
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('events')
        .select('id')
        .where('created_at', '<', cutoff)
        .where('dispatched_at', 'is not', null)
        .where(noDeliveryRefersToEvent)
        .orderBy('created_at')
        .limit(BATCH),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

async function pruneCredentials(db: Executor, dayAgo: string): Promise<number> {
  const sessions = await db
    .deleteFrom('sessions')
    .where((eb) => eb.or([eb('expires_at', '<', dayAgo), eb('revoked_at', '<', dayAgo)]))
    .executeTakeFirst();
  const codes = await db
    .deleteFrom('refund_verification_codes')
    .where('expires_at', '<', dayAgo)
    .executeTakeFirst();
  return Number(sessions.numDeletedRows) + Number(codes.numDeletedRows);
}

/** One pass of the retention loop; returns how many rows it deleted (the worker repeats while > 0). */
export async function pruneExpiredRecords(ctx: AppContext): Promise<number> {
  const now = ctx.clock().getTime();
  let deleted = await pruneCredentials(ctx.db, new Date(now - DAY_MS).toISOString());
  if (ctx.config.retentionDays > 0) {
    const cutoff = new Date(now - ctx.config.retentionDays * DAY_MS).toISOString();
    deleted += await pruneDeliveries(ctx.db, cutoff);
    deleted += await pruneEvents(ctx.db, cutoff);
  }
  return deleted;
}
