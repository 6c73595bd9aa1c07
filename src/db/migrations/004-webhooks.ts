// Webhooks: one endpoint per organization, deliveries with a lease and a due time, their attempts,
// and the public test receiver's last requests.
import { type Kysely, type Migration, sql } from 'kysely';
import type { DatabaseKind } from '../../config.ts';
import { withId } from './columns.ts';

export function webhooks(kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await withId(db.schema.createTable('webhook_endpoints'), kind)
        .addColumn('organization_id', 'bigint', (c) => c.notNull().unique().references('organizations.id'))
        .addColumn('endpoint_url', 'text', (c) => c.notNull())
        .addColumn('secret_encrypted', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addColumn('secret_rotated_at', 'text', (c) => c.notNull())
        .execute();

      await withId(db.schema.createTable('webhook_deliveries'), kind)
        .addColumn('delivery_id', 'text', (c) => c.notNull().unique())
        .addColumn('organization_id', 'bigint', (c) => c.notNull().references('organizations.id'))
        .addColumn('event_id', 'bigint', (c) => c.notNull().references('events.id'))
        .addColumn('event_type', 'text', (c) => c.notNull())
        .addColumn('environment', 'text', (c) => c.notNull())
        .addColumn('subject', 'text')
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('attempt_count', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('next_attempt_at', 'text', (c) => c.notNull())
        .addColumn('locked_by', 'text')
        .addColumn('locked_until', 'text')
        .addColumn('last_response_status', 'integer')
        .addColumn('last_error', 'text')
        .addColumn('redelivery_of', 'bigint')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addColumn('delivered_at', 'text')
        .addCheckConstraint('webhook_deliveries_status', sql`status in ('pending', 'delivered', 'failed')`)
        .execute();
      // The worker's claim: pending rows by due time, and nothing else in the index.
      await db.schema
        .createIndex('webhook_deliveries_due')
        .on('webhook_deliveries')
        .columns(['next_attempt_at', 'id'])
        .where(sql.ref('status'), '=', 'pending')
        .execute();
      // One automatic delivery per event, however many dispatchers run.
      await db.schema
        .createIndex('webhook_deliveries_event')
        .on('webhook_deliveries')
        .column('event_id')
        .unique()
        .where(sql.ref('redelivery_of'), 'is', null)
        .execute();
      await db.schema
        .createIndex('webhook_deliveries_org')
        .on('webhook_deliveries')
        .columns(['organization_id', 'id'])
        .execute();
      await db.schema
        .createIndex('webhook_deliveries_subject')
        .on('webhook_deliveries')
        .columns(['organization_id', 'subject', 'id'])
        .execute();

      await withId(db.schema.createTable('webhook_attempts'), kind)
        .addColumn('delivery_id', 'bigint', (c) => c.notNull().references('webhook_deliveries.id'))
        .addColumn('attempt', 'integer', (c) => c.notNull())
        .addColumn('attempted_at', 'text', (c) => c.notNull())
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('response_status', 'integer')
        .addColumn('duration_ms', 'integer', (c) => c.notNull())
        .addColumn('error', 'text')
        .addColumn('response_body', 'text')
        .execute();
      await db.schema
        .createIndex('webhook_attempts_delivery')
        .on('webhook_attempts')
        .columns(['delivery_id', 'attempt'])
        .execute();

      await withId(db.schema.createTable('webhook_received'), kind)
        .addColumn('organization_id', 'bigint', (c) => c.notNull().references('organizations.id'))
        .addColumn('received_at', 'text', (c) => c.notNull())
        .addColumn('content_type', 'text')
        .addColumn('headers', 'text', (c) => c.notNull())
        .addColumn('body', 'text', (c) => c.notNull())
        .addColumn('body_encoding', 'text', (c) => c.notNull())
        .addColumn('signature_valid', 'integer')
        .execute();
      await db.schema
        .createIndex('webhook_received_org')
        .on('webhook_received')
        .columns(['organization_id', 'id'])
        .execute();
    },
  };
}
