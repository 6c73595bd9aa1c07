// Indexes for the retention loop: it finds old rows by time without scanning whole tables.
import type { Kysely, Migration } from 'kysely';

export function retention(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createIndex('webhook_deliveries_created')
        .on('webhook_deliveries')
        .column('created_at')
        .execute();
      await db.schema.createIndex('events_created').on('events').column('created_at').execute();
      // Every delivery of an event, redeliveries included (webhook_deliveries_event holds only the first).
      await db.schema
        .createIndex('webhook_deliveries_event_any')
        .on('webhook_deliveries')
        .column('event_id')
        .execute();
      await db.schema.createIndex('sessions_expires').on('sessions').column('expires_at').execute();
      await db.schema
        .createIndex('refund_verification_codes_expires')
        .on('refund_verification_codes')
        .column('expires_at')
        .execute();
    },
  };
}
