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
import { readFileSync } from 'node:fs';
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

// The connections are named, so that their backends' CPU can be read (backendCpuSeconds).
const applicationName = `kassa_worker_statements_${process.pid}`;
const named = new URL(url);
named.searchParams.set('application_name', applicationName);
const config = loadConfig({ ...process.env, DATABASE_URL: named.href, KASSA_DB_SCHEMA: schema });
const handle = await openAndMigrate(config.database);
const db = handle.db;

/** PostgreSQL's execution time, WAL and buffer reads per delivery of the worker's two statements (pg_stat_statements). */
async function statementStats(
  db: Kysely<Database>,
  extension: string,
  deliveries: number,
): Promise<string[] | null> {
  try {
    const { rows } = await sql<{ kind: string; calls: number; total: number; wal: number; blocks: number }>`
      select case when query like 'with "outcome"%' then 'flush' else 'claim' end as kind, sum(calls)::int as calls,
        sum(total_exec_time)::float8 as total, sum(wal_bytes)::float8 as wal,
        sum(shared_blks_hit + shared_blks_read)::float8 as blocks
      from ${sql.id(extension, 'pg_stat_statements')}
      where query like ${'with "leased"%'} or query like ${'with "outcome"%'}
      group by 1 order by 1`.execute(db);
    // Per delivery, not per row returned: a flush returns its attempts' rows, a claim its events'.
    return rows.map(
      (row) =>
        `${row.kind}: ${((row.total * 1000) / deliveries).toFixed(1)} µs of PostgreSQL per delivery, ${(row.wal / deliveries).toFixed(0)} bytes of WAL, ${(row.blocks / deliveries).toFixed(1)} buffer reads (${row.calls} statements)`,
    );
  } catch {
    return null;
  }
}

/**
 * The CPU seconds (user + system, from /proc) of this script's PostgreSQL backends: unlike the execution
 * time pg_stat_statements keeps, which is wall time, it does not grow while other work on the machine
 * keeps a backend waiting for a CPU. Null where /proc cannot be read (PostgreSQL on another host).
 */
async function backendCpuSeconds(db: Kysely<Database>): Promise<Map<number, number> | null> {
  const { rows } = await sql<{ pid: number }>`select pid from pg_stat_activity
    where application_name = ${applicationName}`.execute(db);
  const seconds = new Map<number, number>();
  for (const { pid } of rows) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      seconds.set(pid, (Number(fields[11]) + Number(fields[12])) / 100);
    } catch {
      return null;
    }
  }
  return seconds;
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

  const cpuBefore = await backendCpuSeconds(db);
  let claimMs = 0;
  let flushMs = 0;
  let delivered = 0;
  let pending: AttemptRecord[] = [];
  // The leases of claims whose outcomes are all in `pending`: released by the next flush, as the worker does.
  let released: number[] = [];
  const flush = async () => {
    const started = performance.now();
    await recordAttempts(db, 'worker-statements', pending, new Date().toISOString(), released);
    released = [];
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
    const leaseId = claimed.claimed[0]?.leaseId;
    if (leaseId != null) released.push(leaseId);
  }
  if (pending.length > 0 || released.length > 0) await flush();
  const cpuAfter = await backendCpuSeconds(db);
  console.log(
    `${delivered} deliveries: claim ${((claimMs * 1000) / delivered).toFixed(1)} µs, flush ${((flushMs * 1000) / delivered).toFixed(1)} µs per delivery (round trips)`,
  );
  if (cpuBefore && cpuAfter) {
    let seconds = 0;
    for (const [pid, after] of cpuAfter) seconds += after - (cpuBefore.get(pid) ?? 0);
    console.log(
      `PostgreSQL backends: ${((seconds * 1e6) / delivered).toFixed(1)} µs of CPU per delivery, claim and flush (${cpuAfter.size} connections)`,
    );
  }
  const lines = stats && extension ? await statementStats(db, extension, delivered) : null;
  console.log(lines ? lines.join('\n') : 'pg_stat_statements is not loaded: no execution times');
} finally {
  await sql`drop schema ${sql.id(schema)} cascade`.execute(db);
  await handle.close();
}
