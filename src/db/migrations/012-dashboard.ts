// The dashboard's second day: the organization's time zone and test-mode default, payout destinations
// (bank accounts, the full number sealed), the destination each payout was sent to, and an index for
// searching payments by the last four digits of a card.
import { type Kysely, type Migration, sql } from 'kysely';
import type { DatabaseKind } from '../../config.ts';
import { withId } from './columns.ts';

export function dashboard(kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .alterTable('organizations')
        .addColumn('time_zone', 'text', (c) => c.notNull().defaultTo('UTC'))
        .execute();
      await db.schema
        .alterTable('organizations')
        .addColumn('test_mode_default', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();

      // Rows are never edited: a change inserts a new row and stamps the old one replaced_at, so a
      // payout keeps pointing at the account it was requested for.
      await withId(db.schema.createTable('payout_destinations'), kind)
        .addColumn('public_id', 'text', (c) => c.notNull().unique())
        .addColumn('organization_id', 'bigint', (c) => c.notNull().references('organizations.id'))
        .addColumn('environment', 'text', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('account_holder', 'text', (c) => c.notNull())
        .addColumn('country', 'text', (c) => c.notNull())
        .addColumn('bank_code', 'text')
        .addColumn('last4', 'text', (c) => c.notNull())
        .addColumn('number_sealed', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('replaced_at', 'text')
        .addCheckConstraint('payout_destinations_environment', sql`environment in ('production', 'sandbox')`)
        .addCheckConstraint('payout_destinations_type', sql`type in ('iban', 'us_account')`)
        .execute();
      await db.schema
        .createIndex('payout_destinations_current')
        .on('payout_destinations')
        .columns(['organization_id', 'environment'])
        .unique()
        .where(sql.ref('replaced_at'), 'is', null)
        .execute();

      await db.schema
        .alterTable('payouts')
        .addColumn('destination_id', 'bigint', (c) => c.references('payout_destinations.id'))
        .execute();

      await db.schema
        .createIndex('deposit_attempts_card_last4')
        .on('deposit_attempts')
        .column('card_last4')
        .execute();
    },
  };
}
