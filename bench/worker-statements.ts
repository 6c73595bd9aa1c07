// The webhook worker's two statements on PostgreSQL in isolation: a backlog of events committed in one
// transaction, then claimed (dispatchEvents, 256 at a time) and recorded as delivered (recordAttempts, in
// batches of the size the bench's flushes had), with no HTTP in between. Prints each statement's time per
// delivery: the round trip timed here, and PostgreSQL's own execution time when the server has
// pg_stat_statements (`shared_preload_libraries = 'pg_stat_statements'`; the figure to trust, since
// the round trip also holds the client's work).
//
//   npm run bench:worker   (KASSA_BENCH_DATABASE_URL, default postgres://root@127.0.0.1:5432/test;
//                           EVENTS, default 15000; FLUSH, default 131)
// It works in a schema of its own, dropped at the end.
import { randomUUID } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { loadConfig } from '../src/config.ts';
import { openAndMigrate } from '../src/db/connection.ts';
import type { Database } from '../src/db/database.ts';
import { emitEvent } from '../src/modules/events/emit.ts';
import { type AttemptRecord, recordAttempts } from '../src/modules/webhooks/outcomes.ts';
import { dispatchEvents } from '../src/modules/webhooks/worker-store.ts';
import { DEFAULT_PG_URL } from './service.ts';

const url = process.env.KASSA_BENCH_DATABASE_URL || DEFAULT_PG_URL;
const events = Number(process.env.EVENTS ?? 15_000);
const flushSize = Number(process.env.FLUSH ?? 131);
const schema = `kassa_worker_statements_${process.pid}`;

const config = loadConfig({ ...process.env, DATABASE_URL: url, KASSA_DB_SCHEMA: schema });
const handle = await openAndMigrate(config.database);
const db = handle.db;

/** PostgreSQL's execution time per row of the worker's statements, if pg_stat_statements is there. */
async function statementStats(db: Kysely<Database>, extension: string): Promise<string[] | null> {
  try {
    const { rows } = await sql<{ calls: number; rows: number; total: number; query: string }>`
      select calls::int, rows::int, total_exec_time as total, query from ${sql.id(extension, 'pg_stat_statements')}
      where query like ${`%update "events" set "locked_by"%`} or query like ${'with "outcome"%'}`.execute(db);
    return rows.map(
      (row) =>
        `${row.query.startsWith('with') ? 'flush' : 'claim'}: ${((row.total * 1000) / row.rows).toFixed(1)} µs of PostgreSQL per delivery (${row.calls} statements)`,
    );
  } catch {
    return null;
  }
}

try {
  const now = new Date().toISOString();
  const [organization] = (
    await sql<{ id: number }>`insert into organizations (slug, name, created_at, updated_at)
      values ('worker-statements', 'Worker statements', ${now}, ${now}) returning id`.execute(db)
  ).rows;
  await sql`insert into webhook_endpoints (organization_id, endpoint_url, secret_encrypted, created_at, updated_at, secret_rotated_at)
    values (${organization.id}, 'http://127.0.0.1:9/hook', 'unused', ${now}, ${now}, ${now})`.execute(db);
  await db.transaction().execute(async (trx) => {
    for (let i = 0; i < events; i++)
      await emitEvent(trx, {
        organizationId: organization.id,
        environment: 'production',
        type: 'webhook.test',
        subject: null,
        payload: { message: 'bench', marker: `worker-statements-${i}` },
        now,
      });
  });
  await sql`checkpoint`.execute(db);
  // The extension's schema (the tables' schema is first on the search path).
  const extension = (
    await sql<{ schema: string }>`select extnamespace::regnamespace::text as schema from pg_extension
      where extname = 'pg_stat_statements'`.execute(db)
  ).rows[0]?.schema;
  const stats =
    extension !== undefined &&
    (await sql`select ${sql.id(extension, 'pg_stat_statements_reset')}()`.execute(db).then(
      () => true,
      () => false,
    ));

  let claimMs = 0;
  let flushMs = 0;
  let delivered = 0;
  let pending: AttemptRecord[] = [];
  const flush = async () => {
    const started = performance.now();
    await recordAttempts(db, 'worker-statements', pending, new Date().toISOString());
    flushMs += performance.now() - started;
    pending = [];
  };
  for (;;) {
    const at = new Date();
    const started = performance.now();
    const lease = {
      workerId: 'worker-statements',
      now: at.toISOString(),
      until: new Date(at.getTime() + 15_000).toISOString(),
    };
    const claimed = await dispatchEvents(db, lease, 256, () => randomUUID());
    claimMs += performance.now() - started;
    if (claimed.events === 0) break;
    for (const delivery of claimed.claimed) {
      delivered++;
      pending.push({
        deliveryRowId: null,
        deliveryId: delivery.deliveryId,
        eventType: delivery.eventType,
        first: delivery.first,
        attempt: 1,
        attemptedAt: new Date().toISOString(),
        url: delivery.url ?? '',
        responseStatus: 200,
        durationMs: 1,
        error: null,
        responseBody: null,
        outcome: { status: 'delivered' },
      });
      if (pending.length >= flushSize) await flush();
    }
  }
  if (pending.length > 0) await flush();
  console.log(
    `${delivered} deliveries: claim ${((claimMs * 1000) / delivered).toFixed(1)} µs, flush ${((flushMs * 1000) / delivered).toFixed(1)} µs per delivery (round trips)`,
  );
  const lines = stats && extension ? await statementStats(db, extension) : null;
  console.log(lines ? lines.join('\n') : 'pg_stat_statements is not loaded: no execution times');
} finally {
  await sql`drop schema ${sql.id(schema)} cascade`.execute(db);
  await handle.close();
}
