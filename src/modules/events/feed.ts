// The feed's read and its cursor (GET /organization/events/, docs/decisions.md "The feed's cursor").
//
// On PostgreSQL an event's id comes from a sequence when the row is written, not when it commits: with
// T1 holding id 100 open while T2 commits 101, a reader that moved its cursor to 101 would never see
// 100. So the feed is ordered by the writing transaction's id first (`event_feed.tx`, migration 027),
// then the event's, and returns only events whose tx is below the reading statement's snapshot horizon
// (pg_snapshot_xmin): every transaction under it has ended, so all of its events that will ever be
// visible are, and every transaction that can still write or commit an event has a tx at or above it.
// No event can then commit behind a cursor, however long its transaction stays open. The cursor must
// carry the tx: filtering by the horizon alone with an id cursor is not enough (an older transaction Y
// can commit id 101 while a newer X still holds 100, and Y < xmin <= X), so on PostgreSQL it is
// `<tx>-<id>`. A plain `<id>` (every cursor on SQLite, and one from before 027) means tx 0, where the
// events written before 027 sort (their rows were copied with tx 0; they had all committed by then).
// The order is read from event_feed's index (organization, tx, event), each event's columns then from
// its row in `events` by primary key: the order is kept out of `events`, whose rows the webhook worker
// updates (migration 027 says why). After a restore into another cluster, tx values from the old one are
// rebased at start, and a cursor carrying one is read as its id (src/db/event-feed-rebase.ts).
// SQLite has one writer, so ids commit in order there: its feed reads by id.
import { sql } from 'kysely';
import type { AppContext } from '../../context.ts';
import { isPostgres } from '../../db/connection.ts';
import type { EventType } from './emit.ts';

/** A position in the feed: after the events up to (tx, id). tx is a decimal xid8, '0' on SQLite. */
export interface FeedCursor {
  tx: string;
  id: number;
}

/** The `after` parameter, already checked against its pattern (schemas.ts): `<id>` or `<tx>-<id>`. */
export function parseCursor(after: string | undefined): FeedCursor {
  const [tx, id] = after?.includes('-') ? after.split('-') : ['0', after ?? '0'];
  return { tx, id: Number(id) };
}

export interface FeedFilter {
  after: FeedCursor;
  subject?: string;
  environment?: 'production' | 'sandbox';
  limit: number;
}

export async function readEvents(ctx: AppContext, organizationId: number, filter: FeedFilter) {
  const columns = [
    'events.id',
    'events.organization_id',
    'type',
    'environment',
    'subject',
    'payload',
    'created_at',
  ] as const;
  const ordered = isPostgres(ctx.db)
    ? ctx.db
        .selectFrom('event_feed')
        .innerJoin('events', 'events.id', 'event_feed.event_id')
        .select(columns)
        // xid8 as text: node-pg would hand it over as a string anyway, and it passes 2^53.
        .select(sql<string>`event_feed.tx::text`.as('tx'))
        // The feed row's organization is its event's (the trigger copies it). The event's own is checked
        // below, not asked of `events` here: the planner would then read all the organization's events by
        // events_subject and sort them. So it did with the two organizations equal in the join's
        // condition, in a forced generic plan: it counted the event's organization as a second filter,
        // independent of the first, and expected too few rows to stop early in index order.
        .where('event_feed.organization_id', '=', organizationId)
        // Compared in SQL, as xid8: never as a JavaScript number. A cursor's tx at or above the
        // snapshot's xmax was not given by this cluster: it was read before a restore from another one,
        // whose rows start rebased to tx 0 (src/db/event-feed-rebase.ts), so it reads as its id alone.
        .where(
          sql<boolean>`(event_feed.tx, event_feed.event_id) > (case
            when ${filter.after.tx}::xid8 < pg_snapshot_xmax(pg_current_snapshot()) then ${filter.after.tx}::xid8
            else '0'::xid8 end, ${filter.after.id})`,
        )
        .where('event_feed.tx', '<', sql<string>`pg_snapshot_xmin(pg_current_snapshot())`)
        .orderBy('event_feed.tx')
        .orderBy('event_feed.event_id')
    : ctx.db
        .selectFrom('events')
        .select(columns)
        .select(sql<string>`'0'`.as('tx'))
        .where('organization_id', '=', organizationId)
        .where('id', '>', filter.after.id)
        .orderBy('id');
  let query = ordered.limit(filter.limit);
  if (filter.subject) query = query.where('subject', '=', filter.subject);
  if (filter.environment) query = query.where('environment', '=', filter.environment);
  const rows = await query.execute();
  const last = rows.at(-1);
  return {
    // A feed row whose event is another organization's is passed over (the cursor moves past it): such a
    // row came from another schema's event, written here by 027's trigger from a session whose
    // search_path named this schema first (migration 028 says how; it writes none since).
    events: rows
      .filter((row) => row.organization_id === organizationId)
      .map((row) => ({
        id: row.id,
        // Only emitEvent writes events, always with one of these types.
        type: row.type as EventType,
        environment: row.environment,
        subject: row.subject,
        created_at: row.created_at,
        payload: JSON.parse(row.payload) as Record<string, unknown>,
      })),
    /** The cursor after the last row read, or null when none was. */
    cursor: last ? (isPostgres(ctx.db) ? `${last.tx}-${last.id}` : String(last.id)) : null,
  };
}

/** One read of the feed: the events to answer, and the cursor after the last row read. */
export type FeedPage = Awaited<ReturnType<typeof readEvents>>;
