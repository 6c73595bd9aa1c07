// The outbox claim without a filter (docs/performance.md "Webhooks"): a leased event leaves the index
// of claimable events, so the claim reads that index in order and stops at its batch, whatever the
// planner knows of the table. With the lease only filtered (015), a table never analyzed (a fresh
// install, or autovacuum off) was planned as a bitmap scan of every undispatched event and a sort:
// each claim read the whole backlog. Leased events have their own small index, by lease end, for the
// claim of a lease that lapsed.
import { type Kysely, type Migration, sql } from 'kysely';

export function eventClaimIndexes(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.dropIndex('events_undispatched').execute();
      await db.schema
        .createIndex('events_claimable')
        .on('events')
        .column('id')
        .where(sql.ref('dispatched_at'), 'is', null)
        .where(sql.ref('locked_until'), 'is', null)
        .execute();
      await db.schema
        .createIndex('events_leased')
        .on('events')
        .column('locked_until')
        .where(sql.ref('dispatched_at'), 'is', null)
        .where(sql.ref('locked_until'), 'is not', null)
        .execute();
    },
  };
}
