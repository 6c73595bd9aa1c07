// Retention: what the service writes for its own bookkeeping is deleted once it has served its purpose,
// so the database grows with the business (payments, refunds, payouts, which are never deleted), not with
// traffic. One worker loop, in batches, oldest first, each batch in its own transaction:
// - webhook deliveries that are finished (delivered or failed for good), with their attempts, and
//   dispatched events no delivery refers to any more, with their feed rows (PostgreSQL's event_feed):
//   after KASSA_RETENTION_DAYS (30; 0 keeps them);
// - dashboard sessions a day after they expired or were revoked, and refund verification codes, login
//   challenges and password-reset links a day after they expired (none can be used by then);
// - failed-password counts (login_failures) once their window has ended: a new failure would start a
//   new window anyway;
// - the ids of provider events handled (Stripe's, kept to deduplicate them) 30 days after they were
//   handled: Stripe stops retrying an event after 3 days;
// - a webhook secret's previous secret once the overlap its rotation asked for has ended;
// - audit log entries after AUDIT_RETENTION_DAYS (400), whatever KASSA_RETENTION_DAYS says: the audit
//   trail outlives a year (PCI DSS 10.5.1 asks for twelve months).
// Pending deliveries and undispatched events are never touched, however old.
import { type ExpressionBuilder, sql } from 'kysely';
import type { AppContext } from '../../context.ts';
import { isPostgres } from '../../db/connection.ts';
import type { Database, Executor } from '../../db/database.ts';
import { dropExpiredPreviousSecrets } from '../webhooks/store.ts';

const BATCH = 500;
const DAY_MS = 24 * 60 * 60 * 1000;
export const AUDIT_RETENTION_DAYS = 400;

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

// No foreign key stops this deleting an event a redelivery has just referred to (migration 025): on
// PostgreSQL the batch is locked first, skipping the events a redelivery holds (`FOR KEY SHARE`), and the
// delete checks again that no delivery refers to them. Its statement's snapshot, taken after the locks,
// sees every redelivery committed before them; one that comes after waits for this transaction, then
// finds its event gone and answers 404. On SQLite the transaction holds the only write lock.
// On PostgreSQL the events' rows in event_feed go in the same transaction.
async function pruneEvents(db: Executor, cutoff: string): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const batch = trx
      .selectFrom('events')
      .select('id')
      .where('created_at', '<', cutoff)
      // Dispatched before the cutoff too: a claim dispatches its events before their deliveries are
      // written (webhook_leases), and an event older than the cutoff may have been claimed just now.
      .where('dispatched_at', '<', cutoff)
      .where(noDeliveryRefersToEvent)
      .orderBy('created_at')
      .limit(BATCH);
    const rows = await (isPostgres(trx) ? batch.forUpdate().skipLocked() : batch).execute();
    if (rows.length === 0) return 0;
    const ids = rows.map((row) => row.id);
    const deleted = await trx
      .deleteFrom('events')
      .where('id', 'in', ids)
      .where(noDeliveryRefersToEvent)
      .returning('id')
      .execute();
    // The feed's rows of these events (PostgreSQL, migration 027), by primary key: no foreign key
    // deletes them, so the same transaction does.
    if (isPostgres(trx) && deleted.length > 0) {
      const gone = deleted.map((row) => row.id);
      await trx.deleteFrom('event_feed').where('event_id', 'in', gone).execute();
    }
    return deleted.length;
  });
}

async function pruneCredentials(db: Executor, dayAgo: string): Promise<number> {
  const sessions = await db
    .deleteFrom('sessions')
    .where((eb) => eb.or([eb('expires_at', '<', dayAgo), eb('revoked_at', '<', dayAgo)]))
    .executeTakeFirst();
  let deleted = Number(sessions.numDeletedRows);
  for (const table of ['refund_verification_codes', 'login_challenges', 'password_resets'] as const) {
    const result = await db.deleteFrom(table).where('expires_at', '<', dayAgo).executeTakeFirst();
    deleted += Number(result.numDeletedRows);
  }
  return deleted;
}

// A login counts its three rows in one transaction; on PostgreSQL the batch skips rows one holds rather
// than wait for them while holding others (a deadlock with a login restarting two ended windows).
async function pruneLoginFailures(db: Executor, windowOver: string): Promise<number> {
  const result = await db
    .deleteFrom('login_failures')
    .where('key_hash', 'in', (eb) => {
      const batch = eb
        .selectFrom('login_failures')
        .select('key_hash')
        .where('window_started_at', '<=', windowOver)
        .orderBy('window_started_at')
        .limit(BATCH);
      return isPostgres(db) ? batch.forUpdate().skipLocked() : batch;
    })
    .where('window_started_at', '<=', windowOver)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

async function pruneAuditLog(db: Executor, cutoff: string): Promise<number> {
  const result = await db
    .deleteFrom('audit_log')
    .where('id', 'in', (eb) =>
      eb.selectFrom('audit_log').select('id').where('at', '<', cutoff).orderBy('at').limit(BATCH),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

const PROVIDER_EVENT_DAYS = 30;

async function pruneProviderEvents(db: Executor, cutoff: string): Promise<number> {
  const result = await db.deleteFrom('provider_events').where('processed_at', '<', cutoff).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** One pass of the retention loop; returns how many rows it deleted (the worker repeats while > 0). */
export async function pruneExpiredRecords(ctx: AppContext): Promise<number> {
  const now = ctx.clock().getTime();
  // Not counted: one statement drops them all, so there is no batch to repeat.
  await dropExpiredPreviousSecrets(ctx.db, new Date(now).toISOString());
  let deleted = await pruneCredentials(ctx.db, new Date(now - DAY_MS).toISOString());
  deleted += await pruneLoginFailures(
    ctx.db,
    new Date(now - ctx.config.rateLimits.loginWindowMs).toISOString(),
  );
  deleted += await pruneAuditLog(ctx.db, new Date(now - AUDIT_RETENTION_DAYS * DAY_MS).toISOString());
  deleted += await pruneProviderEvents(ctx.db, new Date(now - PROVIDER_EVENT_DAYS * DAY_MS).toISOString());
  if (ctx.config.retentionDays > 0) {
    const cutoff = new Date(now - ctx.config.retentionDays * DAY_MS).toISOString();
    deleted += await pruneDeliveries(ctx.db, cutoff);
    deleted += await pruneEvents(ctx.db, cutoff);
  }
  return deleted;
}
