// Idempotency keys for API-key POSTs (shared by every process through the database).
import type { Kysely, Migration } from 'kysely';
import type { DatabaseKind } from '../../config.ts';
import { withId } from './columns.ts';

export function developer(kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await withId(db.schema.createTable('idempotency_keys'), kind)
        .addColumn('organization_id', 'bigint', (c) => c.notNull().references('organizations.id'))
        .addColumn('environment', 'text', (c) => c.notNull())
        .addColumn('key', 'text', (c) => c.notNull())
        .addColumn('request_hash', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('response_status', 'integer')
        .addColumn('response_body', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('locked_until', 'text', (c) => c.notNull())
        .addUniqueConstraint('idempotency_keys_scope', ['organization_id', 'environment', 'key'])
        .execute();
      await db.schema
        .createIndex('idempotency_keys_created')
        .on('idempotency_keys')
        .column('created_at')
        .execute();
    },
  };
}
