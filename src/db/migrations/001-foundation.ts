// Organizations, users, sessions, API keys, catalog products, the event outbox.
import { type Kysely, type Migration, sql } from 'kysely';
import type { DatabaseKind } from '../../config.ts';
import { withId } from './columns.ts';

export function foundation(kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await withId(db.schema.createTable('organizations'), kind)
        .addColumn('slug', 'text', (c) => c.notNull().unique())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('website', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('contact_email', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('telegram', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('price_mode', 'text', (c) => c.notNull().defaultTo('TTC'))
        .addColumn('fee_bp', 'bigint', (c) => c.notNull().defaultTo(290))
        .addColumn('tax_rate_bp', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('rolling_reserve_bp', 'bigint', (c) => c.notNull().defaultTo(1000))
        .addColumn('rolling_reserve_days', 'integer', (c) => c.notNull().defaultTo(90))
        .addColumn('min_payment', 'bigint', (c) => c.notNull().defaultTo(50))
        .addColumn('max_payment', 'bigint', (c) => c.notNull().defaultTo(10_000_000))
        .addColumn('max_active_api_keys', 'integer', (c) => c.notNull().defaultTo(1))
        .addColumn('status', 'text', (c) => c.notNull().defaultTo('active'))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addCheckConstraint('organizations_price_mode', sql`price_mode in ('HT', 'TTC')`)
        .execute();

      await withId(db.schema.createTable('users'), kind)
        .addColumn('organization_id', 'bigint', (c) => c.notNull().references('organizations.id'))
        .addColumn('email', 'text', (c) => c.notNull().unique())
        .addColumn('name', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('password_hash', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();

      await withId(db.schema.createTable('sessions'), kind)
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id'))
        .addColumn('organization_id', 'bigint', (c) => c.notNull().references('organizations.id'))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('last_seen_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .addColumn('revoked_at', 'text')
        .execute();

      await withId(db.schema.createTable('api_keys'), kind)
        .addColumn('organization_id', 'bigint', (c) => c.notNull().references('organizations.id'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('prefix', 'text', (c) => c.notNull())
        .addColumn('key_hash', 'text', (c) => c.notNull().unique())
        .addColumn('scopes', 'text', (c) => c.notNull())
        .addColumn('environment', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('last_used_at', 'text')
        .addColumn('revoked_at', 'text')
        .addCheckConstraint('api_keys_environment', sql`environment in ('production', 'sandbox')`)
        .addCheckConstraint('api_keys_status', sql`status in ('active', 'revoked')`)
        .execute();
      await db.schema
        .createIndex('api_keys_org')
        .on('api_keys')
        .columns(['organization_id', 'environment', 'status'])
        .execute();

      await withId(db.schema.createTable('products'), kind)
        .addColumn('public_id', 'text', (c) => c.notNull().unique())
        .addColumn('organization_id', 'bigint', (c) => c.notNull().references('organizations.id'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('unit_price', 'bigint', (c) => c.notNull())
        .addColumn('currency', 'text', (c) => c.notNull())
        .addColumn('is_active', 'integer', (c) => c.notNull().defaultTo(1))
        .addColumn('deleted_at', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addCheckConstraint('products_unit_price', sql`unit_price > 0`)
        .addCheckConstraint('products_currency', sql`currency in ('USD', 'EUR')`)
        .execute();
      await db.schema
        .createIndex('products_org')
        .on('products')
        .columns(['organization_id', 'created_at'])
        .execute();

      // The outbox: every event is written in the transaction of the change that causes it.
      await withId(db.schema.createTable('events'), kind)
        .addColumn('organization_id', 'bigint', (c) => c.notNull().references('organizations.id'))
        .addColumn('environment', 'text', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('subject', 'text')
        .addColumn('payload', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('dispatched_at', 'text')
        .execute();
      await db.schema
        .createIndex('events_undispatched')
        .on('events')
        .columns(['dispatched_at', 'id'])
        .execute();
      await db.schema
        .createIndex('events_subject')
        .on('events')
        .columns(['organization_id', 'subject'])
        .execute();
    },
  };
}
