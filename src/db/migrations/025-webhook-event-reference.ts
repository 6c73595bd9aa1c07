// The webhook log's last foreign key on PostgreSQL, a delivery's event, replaced by explicit locks: the
// key's check (a trigger per row inserted, a `FOR KEY SHARE` lookup of the event) cost about 3 µs of
// PostgreSQL per delivery in the worker's one-statement flush (src/modules/webhooks/outcomes.ts), some
// 16 % of the flush. Migration 024 kept it because retention deletes events no delivery refers to, and
// the key stopped it deleting one a redelivery had just referred to. That guarantee now comes from locks
// taken on the event's row by the two sides:
// - a redelivery (src/modules/webhooks/deliveries.ts) locks its event `FOR KEY SHARE` before it inserts
//   the new delivery, in the same transaction, and answers 404 if the event is gone;
// - retention (src/modules/retention/prune.ts) locks its batch of events `FOR UPDATE SKIP LOCKED` (an
//   event a redelivery holds is skipped), then deletes them only if no delivery refers to them, checked
//   again by the delete's own statement: its snapshot, taken after the locks, sees every redelivery that
//   committed before them, and a redelivery that comes after waits for retention's transaction and then
//   finds its event gone.
// The other writers of deliveries need no lock:
// - the worker's flush inserts the first delivery of an event it holds the lease of, which is not yet
//   dispatched, and retention never deletes an undispatched event (the same statement dispatches it).
//   If the lease lapsed and another worker wrote the event's first delivery, that delivery keeps the
//   event, and this one's insert meets it in the unique index and writes nothing;
// - a test delivery and a resent transaction (`test/` and `test-transaction/`, in
//   src/modules/webhooks/service.ts) insert their event in the same transaction.
// SQLite keeps the key: one writer at a time, and the check there is an index probe in the process.
import { type Kysely, type Migration, sql } from 'kysely';
import type { DatabaseKind } from '../../config.ts';

export function webhookEventReference(kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      if (kind !== 'postgres') return;
      await sql`alter table webhook_deliveries drop constraint if exists webhook_deliveries_event_id_fkey`.execute(
        db,
      );
    },
  };
}
