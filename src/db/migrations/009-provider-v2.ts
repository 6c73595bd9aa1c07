// Provider contract v2: the write-ahead operation rows every provider call is recorded in first (and the
// reconciler reads back), the provider events already handled (Stripe's webhooks, deduplicated by id),
// the `simulated` flag on payments, and the simulator's customers, saved cards, setups and 3-D Secure
// challenges.
import { type Kysely, type Migration, sql } from 'kysely';
import type { DatabaseKind } from '../../config.ts';
import { withId } from './columns.ts';

export function providerV2(kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await withId(db.schema.createTable('provider_operations'), kind)
        .addColumn('organization_id', 'bigint', (c) => c.references('organizations.id'))
        .addColumn('environment', 'text', (c) => c.notNull())
        .addColumn('provider', 'text', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('idempotency_key', 'text', (c) => c.notNull().unique())
        .addColumn('subject_type', 'text', (c) => c.notNull())
        .addColumn('subject_id', 'bigint', (c) => c.notNull())
        .addColumn('reference', 'text', (c) => c.notNull())
        .addColumn('context', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('outcome', 'text')
        .addColumn('outcome_code', 'text')
        .addColumn('outcome_message', 'text')
        .addColumn('provider_object_id', 'text')
        .addColumn('reads', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('next_read_at', 'text')
        .addColumn('last_read_at', 'text')
        .addColumn('last_read_error', 'text')
        .addColumn('flagged_at', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addCheckConstraint(
          'provider_operations_state',
          sql`state in ('in_flight', 'unknown', 'done', 'flagged')`,
        )
        .addCheckConstraint(
          'provider_operations_outcome',
          sql`outcome is null or outcome in ('succeeded', 'pending', 'requires_action', 'failed')`,
        )
        .execute();
      await db.schema
        .createIndex('provider_operations_due')
        .on('provider_operations')
        .columns(['state', 'next_read_at'])
        .execute();
      await db.schema
        .createIndex('provider_operations_subject')
        .on('provider_operations')
        .columns(['subject_type', 'subject_id'])
        .execute();

      await withId(db.schema.createTable('provider_events'), kind)
        .addColumn('provider', 'text', (c) => c.notNull())
        .addColumn('event_id', 'text', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('received_at', 'text', (c) => c.notNull())
        .addColumn('processed_at', 'text')
        .addUniqueConstraint('provider_events_once', ['provider', 'event_id'])
        .execute();
      await db.schema
        .createIndex('provider_events_received')
        .on('provider_events')
        .column('received_at')
        .execute();

      await db.schema
        .alterTable('payments')
        .addColumn('simulated', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema.alterTable('payments').addColumn('next_action', 'text').execute();
      await db.schema.alterTable('payments').addColumn('provider_conflict', 'text').execute();

      // The simulator's side of the wire, continued: what it remembers about a payment's saved card.
      await db.schema.alterTable('sim_payments').addColumn('customer_id', 'text').execute();
      await db.schema.alterTable('sim_payments').addColumn('payment_method_id', 'text').execute();
      await db.schema.alterTable('sim_payments').addColumn('save_card_for', 'text').execute();
      await db.schema.alterTable('sim_payments').addColumn('next_action', 'text').execute();

      await withId(db.schema.createTable('sim_customers'), kind)
        .addColumn('customer_id', 'text', (c) => c.notNull().unique())
        .addColumn('idempotency_key', 'text', (c) => c.notNull().unique())
        .addColumn('reference', 'text', (c) => c.notNull())
        .addColumn('environment', 'text', (c) => c.notNull())
        .addColumn('email', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();

      // A saved card keeps how the test card behaves, its brand, last 4 and expiry: never its number.
      await withId(db.schema.createTable('sim_payment_methods'), kind)
        .addColumn('payment_method_id', 'text', (c) => c.notNull().unique())
        .addColumn('customer_id', 'text', (c) => c.notNull())
        .addColumn('behaviour', 'text', (c) => c.notNull())
        .addColumn('brand', 'text', (c) => c.notNull())
        .addColumn('last4', 'text', (c) => c.notNull())
        .addColumn('exp_month', 'integer', (c) => c.notNull())
        .addColumn('exp_year', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('sim_payment_methods_customer')
        .on('sim_payment_methods')
        .column('customer_id')
        .execute();

      await withId(db.schema.createTable('sim_setups'), kind)
        .addColumn('setup_id', 'text', (c) => c.notNull().unique())
        .addColumn('idempotency_key', 'text', (c) => c.notNull().unique())
        .addColumn('reference', 'text', (c) => c.notNull())
        .addColumn('environment', 'text', (c) => c.notNull())
        .addColumn('customer_id', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('payment_method_id', 'text')
        .addColumn('error_code', 'text')
        .addColumn('error_message', 'text')
        .addColumn('next_action', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('sim_setups_reference').on('sim_setups').column('reference').execute();

      // A 3-D Secure challenge waiting for the customer: its id is the capability the hosted page holds.
      await withId(db.schema.createTable('sim_challenges'), kind)
        .addColumn('challenge_id', 'text', (c) => c.notNull().unique())
        .addColumn('target', 'text', (c) => c.notNull())
        .addColumn('target_id', 'text', (c) => c.notNull())
        .addColumn('attempt_id', 'text')
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
    },
  };
}
