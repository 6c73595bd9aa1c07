// The outbox's wake-up on PostgreSQL, made by the database (docs/webhooks.md, "How delivery works"):
// a statement that inserts events, and a delivery inserted to be sent (a redelivery or a test delivery:
// attempt_count 0; the worker's record of an attempt has 1 or more), send a NOTIFY on the channel of
// the schema the table is in (outboxChannel in ../outbox-signal.ts computes the same name), which
// PostgreSQL delivers at the commit, once per transaction, channel and payload, never after a
// rollback. The payload is the table: a worker reads its due deliveries for webhook_deliveries, and
// need not for events alone. The service sent that NOTIFY itself before each such commit: one statement more in each (two per
// payment). The name comes from the table's schema, not from a setting, so every process on the
// schema, however it names it (KASSA_DB_SCHEMA or a search_path), listens on the same channel, and a
// writer that is not the service (an operator's SQL) wakes the workers too. SQLite needs nothing: its
// workers watch the database file's write-ahead log.
import { type Kysely, type Migration, sql } from 'kysely';
import type { DatabaseKind } from '../../config.ts';

export function eventNotifyTrigger(kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      if (kind !== 'postgres') return;
      // A channel name has at most 63 bytes (pg_notify refuses more): a longer one names the schema
      // by its MD5 instead.
      await sql`
        create function kassa_outbox_notify() returns trigger language plpgsql as $$
        declare
          channel text := 'kassa_events_' || tg_table_schema;
        begin
          if octet_length(channel) > 63 then
            channel := 'kassa_events_' || md5(tg_table_schema);
          end if;
          perform pg_notify(channel, tg_table_name);
          return null;
        end
        $$`.execute(db);
      await sql`
        create trigger events_notify after insert on events
        for each statement execute function kassa_outbox_notify()`.execute(db);
      await sql`
        create trigger webhook_deliveries_notify after insert on webhook_deliveries
        for each row when (new.attempt_count = 0) execute function kassa_outbox_notify()`.execute(db);
    },
  };
}
