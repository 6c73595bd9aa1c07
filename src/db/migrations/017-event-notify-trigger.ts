// The outbox's wake-up on PostgreSQL, made by the database (docs/performance.md "Webhooks"): every
// statement that inserts events sends a NOTIFY on the schema's channel (outboxChannel in
// ../outbox-signal.ts), which PostgreSQL delivers at the commit, once per transaction and channel, and
// never after a rollback. The service sent that NOTIFY itself before each commit that wrote events:
// one statement more in each such transaction (two per payment). A writer that is not the service (a
// restore, an operator's SQL) now wakes the workers too. SQLite needs nothing: its workers watch the
// database file's write-ahead log.
import { type Kysely, type Migration, type QueryExecutorProvider, sql } from 'kysely';
import type { DatabaseKind } from '../../config.ts';

/**
 * (Re)writes the trigger's function with `channel`, the schema's outbox channel as this process names
 * it. Run by the migration and again at every start (migrate.ts), so that a schema renamed or restored
 * under another name, or a migration run by a process that named it otherwise, wakes the listeners of
 * the processes running now. The function lives in the schema being migrated (the search path's first).
 */
export async function writeOutboxNotify(db: QueryExecutorProvider, channel: string): Promise<void> {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(channel)) throw new Error(`unexpected outbox channel ${channel}`);
  await sql`
    create or replace function kassa_outbox_notify() returns trigger language plpgsql as $$
    begin
      perform pg_notify(${sql.lit(channel)}, '');
      return null;
    end
    $$`.execute(db);
}

/** `channel`: the schema's outbox channel, as the migrating process names it (outboxChannel). */
export function eventNotifyTrigger(kind: DatabaseKind, channel: string): Migration {
  return {
    async up(db: Kysely<unknown>) {
      if (kind !== 'postgres') return;
      await writeOutboxNotify(db, channel);
      await sql`
        create trigger events_notify after insert on events
        for each statement execute function kassa_outbox_notify()`.execute(db);
    },
  };
}
