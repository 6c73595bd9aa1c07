// Waiting, in a test, until another transaction is blocked on a lock the test holds.
import assert from 'node:assert/strict';
import { type Kysely, sql } from 'kysely';
import { isPostgres } from '../../src/db/connection.ts';
import type { Database } from '../../src/db/database.ts';

/**
 * Until a PostgreSQL backend of this database waits on a lock (SQLite, one writer: a moment for the
 * request to queue). `waiter` names what should be waiting, for the failure message.
 */
export async function someoneWaitsOnALock(db: Kysely<Database>, waiter: string): Promise<void> {
  if (!isPostgres(db)) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    return;
  }
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from pg_stat_activity
      where wait_event_type = 'Lock' and datname = current_database()`.execute(db);
    if (rows[0].n > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.fail(`${waiter} never waited on the lock`);
}
