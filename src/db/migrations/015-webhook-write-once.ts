// Webhooks written once (docs/performance.md "Webhooks"): an event's first delivery is inserted after
// its send, in its final state, so the worker's claim is held by a lease on the event itself. The
// outbox index now holds only the events still to dispatch.
import { type Kysely, type Migration, sql } from 'kysely';

export function webhookWriteOnce(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('events').addColumn('locked_by', 'text').execute();
      await db.schema.alterTable('events').addColumn('locked_until', 'text').execute();
      await db.schema.dropIndex('events_undispatched').execute();
      await db.schema
        .createIndex('events_undispatched')
        .on('events')
        .column('id')
        .where(sql.ref('dispatched_at'), 'is', null)
        .execute();
    },
  };
}
