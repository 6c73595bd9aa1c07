// Payment links. The use counter is guarded by the database too: uses_count never exceeds max_uses.
import { type Kysely, type Migration, sql } from 'kysely';
import type { DatabaseKind } from '../../config.ts';
import { withId } from './columns.ts';

export function paymentLinks(kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await withId(db.schema.createTable('payment_links'), kind)
        .addColumn('uuid', 'text', (c) => c.notNull().unique())
        .addColumn('organization_id', 'bigint', (c) => c.notNull().references('organizations.id'))
        .addColumn('environment', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('currency', 'text', (c) => c.notNull())
        .addColumn('pricing_mode', 'text', (c) => c.notNull())
        .addColumn('products', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text')
        .addColumn('max_uses', 'integer')
        .addColumn('uses_count', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('views', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('is_active', 'integer', (c) => c.notNull().defaultTo(1))
        .addColumn('metadata', 'text')
        .addColumn('deleted_at', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addCheckConstraint('payment_links_environment', sql`environment in ('production', 'sandbox')`)
        .addCheckConstraint('payment_links_currency', sql`currency in ('USD', 'EUR')`)
        .addCheckConstraint(
          'payment_links_pricing_mode',
          sql`pricing_mode in ('TAX_EXCLUSIVE', 'TAX_INCLUSIVE')`,
        )
        .addCheckConstraint('payment_links_max_uses', sql`max_uses is null or max_uses >= 1`)
        .addCheckConstraint(
          'payment_links_uses_count',
          sql`uses_count >= 0 and (max_uses is null or uses_count <= max_uses)`,
        )
        .execute();
      await db.schema
        .createIndex('payment_links_org')
        .on('payment_links')
        .columns(['organization_id', 'id'])
        .execute();
    },
  };
}
