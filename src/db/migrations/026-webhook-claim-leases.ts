// An outbox claim's lease as one row per claim, not a column of each event (src/modules/webhooks/
// worker-store.ts, docs/webhooks.md "Leases"). Until now a claim wrote each event twice: its lease
// (locked_by, locked_until) at the claim, and dispatched_at with the lease cleared when the first
// delivery's row was written after the send. Both were full new versions of the event's row, payload and
// all, with an entry in each of its indexes (the lease's columns are in the outbox indexes' conditions, so
// neither write could be a HOT update): about 460 bytes of WAL per delivery of the 2,550 the worker
// wrote. Now the claim marks its events dispatched at once and writes one `webhook_leases` row naming
// them; the flush that writes their deliveries deletes that row. A lease that lapses with events still
// lacking a first delivery (the worker died, or let them go unsent) is found by its `locked_until`, and
// those events are made undispatched again, so that the next claim takes them (recoverLapsedLeases).
// The events' own lease columns stay: a worker of an earlier version, still running during an upgrade,
// leases that way, and the claim still takes such a lease when it lapses.
import type { Kysely, Migration } from 'kysely';
import type { DatabaseKind } from '../../config.ts';
import { withId } from './columns.ts';

export function webhookClaimLeases(kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await withId(db.schema.createTable('webhook_leases'), kind)
        .addColumn('worker_id', 'text', (col) => col.notNull())
        .addColumn('locked_until', 'text', (col) => col.notNull())
        // The leased events' ids, as a JSON array: only those with an endpoint to send to.
        .addColumn('event_ids', 'text', (col) => col.notNull())
        .execute();
      await db.schema
        .createIndex('webhook_leases_until')
        .on('webhook_leases')
        .column('locked_until')
        .execute();
    },
  };
}
