// Forward-only migrations, run at start-up and by `kassa migrate`. One list for both databases;
// the few type differences (identity columns) are decided by the dialect passed in.
//
// Our own small runner rather than Kysely's Migrator: the Migrator checks for its tables by
// introspecting every schema of the database, which races with other schemas being created or
// dropped (parallel test files, several tenants). Here everything happens in one transaction under a
// lock: an advisory lock per schema on PostgreSQL (so any number of processes may start at once),
// SQLite's single writer otherwise. A failed migration rolls back whole. On PostgreSQL the event
// feed's rows restored from another cluster are then rebased (event-feed-rebase.ts).
import { type Kysely, sql } from 'kysely';
import type { DatabaseKind } from '../config.ts';
import type { Database } from './database.ts';
import { rebaseRestoredEventFeed } from './event-feed-rebase.ts';
import { migrations } from './migrations/index.ts';

export async function migrateToLatest(db: Kysely<Database>, kind: DatabaseKind): Promise<string[]> {
  const list = migrations(kind);
  return db.transaction().execute(async (trx) => {
    if (kind === 'postgres') {
      await sql`select pg_advisory_xact_lock(hashtext(current_schema()), 4242)`.execute(trx);
    }
    await sql`create table if not exists kassa_migrations (name text primary key, applied_at text not null)`.execute(
      trx,
    );
    const done = new Set(
      (await sql<{ name: string }>`select name from kassa_migrations`.execute(trx)).rows.map(
        (row) => row.name,
      ),
    );
    const applied: string[] = [];
    for (const [name, migration] of Object.entries(list).sort(([a], [b]) => a.localeCompare(b))) {
      if (done.has(name)) continue;
      try {
        await migration.up(trx);
      } catch (error) {
        throw new Error(
          `Migration ${name} failed: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
      await sql`insert into kassa_migrations (name, applied_at) values (${name}, ${new Date().toISOString()})`.execute(
        trx,
      );
      applied.push(name);
    }
    // Feed rows restored from another cluster's dump would stay hidden (event-feed-rebase.ts).
    if (kind === 'postgres') await rebaseRestoredEventFeed(trx);
    return applied;
  });
}
