// The event feed's commit order on PostgreSQL (src/modules/events/feed.ts, docs/decisions.md "The
// feed's cursor"). An event's id comes from a sequence when the row is written, not when it commits, so
// an id cursor could pass an event whose transaction was still open. The feed is ordered by the id of the
// transaction that wrote each event (xid8), then the event's id, and returns only events whose
// transaction is below the reading statement's snapshot horizon (xmin): every transaction that could
// still commit an event has a larger id than that.
//
// That order lives in a table of its own, `event_feed` (organization, transaction, event), not on
// `events`: the webhook worker's claim marks each event dispatched, and `dispatched_at` is in partial
// indexes' predicates of `events`, so that update is never HOT and writes an entry in every index of
// `events`. An index for the feed there cost the claim 155 bytes of WAL more per delivery (847 → 1002,
// `npm run bench:worker`); a row here is written once, with the event, and never updated.
//
// A statement-level trigger writes the rows, one call per statement inserting events whatever its row
// count, in the inserting transaction, with that transaction's id by the column's default: every writer
// of events (emitEvent and deferEvent, an operator's SQL, a process of an earlier version) is covered.
// The events before this migration get tx 0 and sort first: the trigger is created before they are
// copied, and creating it waits for every transaction inserting events to end, so they had all committed.
// The primary key is the event (one row each; retention deletes by it, src/modules/retention/prune.ts);
// event_feed_order serves the feed's query. No foreign key (migration 025 dropped the last one to
// events for its per-row cost): retention deletes an event's row with the event, in its transaction.
// SQLite has one writer, so ids commit in order there: its feed reads `events` by id and needs nothing.
import { type Kysely, type Migration, sql } from 'kysely';
import type { DatabaseKind } from '../../config.ts';

export function eventFeed(kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      if (kind !== 'postgres') return;
      await sql`
        create table event_feed (
          event_id bigint primary key,
          organization_id bigint not null,
          tx xid8 not null default pg_current_xact_id()
        )`.execute(db);
      await sql`create index event_feed_order on event_feed (organization_id, tx, event_id)`.execute(db);
      await sql`
        create function kassa_event_feed_record() returns trigger language plpgsql as $$
        begin
          insert into event_feed (event_id, organization_id) select id, organization_id from inserted;
          return null;
        end
        $$`.execute(db);
      await sql`
        create trigger events_feed after insert on events
        referencing new table as inserted
        for each statement execute function kassa_event_feed_record()`.execute(db);
      await sql`
        insert into event_feed (event_id, organization_id, tx)
        select id, organization_id, '0'::xid8 from events`.execute(db);
    },
  };
}
