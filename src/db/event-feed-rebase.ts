// After a restore into another PostgreSQL cluster, the event feed's rows are rebased at start
// (migrateToLatest calls this at every start and at `kassa migrate`, in its transaction).
//
// event_feed.tx (migration 027) holds raw transaction ids, meaningful only in the cluster that wrote
// them. pg_dump/pg_restore into a fresh cluster, whose transaction counter is lower, brings rows whose tx
// is at or above every id the new cluster has given: the feed returns only rows below the snapshot
// horizon, so those would stay hidden until the new counter passed them (practically never). A row
// whose tx is not below the current snapshot's xmax cannot have been written by this cluster (every id
// it has handed out is below xmax), so it is set to tx 0, where the events from before 027 sort: the
// restored events come first, in id order, and a plain `<id>` cursor reads on among them. In a
// consistent cluster nothing matches. Each statement compares against its own snapshot: a row a
// concurrent process writes after that snapshot is invisible to it, never mistaken for a restored one.
//
// The check must be cheap at every start on a large table, and event_feed has no index on tx alone (one
// would cost each event's insert; event_feed_order leads with the organization). So it asks, per
// organization, whether its part of event_feed_order holds a tx at or above xmax: one index descent
// each, by (organization_id, tx), instead of a scan of the whole table. Organizations are never deleted,
// so every row the feed can return belongs to one of them. Only when a row is found does the update
// scan the table, once, after a restore.
import { sql } from 'kysely';
import type { Executor } from './database.ts';

/** Rebases event_feed rows written by another cluster to tx 0; returns how many were (PostgreSQL). */
export async function rebaseRestoredEventFeed(db: Executor): Promise<number> {
  const found = await sql<{ restored: boolean }>`
    select exists (
      select 1 from organizations
      where exists (
        select 1 from event_feed
        where event_feed.organization_id = organizations.id
          and event_feed.tx >= pg_snapshot_xmax(pg_current_snapshot())
      )
    ) as restored`.execute(db);
  if (!found.rows[0]?.restored) return 0;
  const rebased = await sql`
    update event_feed set tx = '0' where tx >= pg_snapshot_xmax(pg_current_snapshot())`.execute(db);
  return Number(rebased.numAffectedRows ?? 0);
}
