// Subscriptions' foundation (decisions.md "Subscriptions"): plans, subscriptions and their cycles, one
// cycle per (subscription, period) enforced by a unique index (Lago's guard against double billing), a
// lease on each cycle for the worker that charges it, and the subscription a renewal payment belongs to.
import { type Kysely, type Migration, sql } from 'kysely';
import type { DatabaseKind } from '../../config.ts';
import { withId } from './columns.ts';

export function subscriptions(kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      // The price, currency and interval never change (a new price is a new plan).
      await withId(db.schema.createTable('subscription_plans'), kind)
        .addColumn('public_id', 'text', (c) => c.notNull().unique())
        .addColumn('organization_id', 'bigint', (c) => c.notNull().references('organizations.id'))
        .addColumn('environment', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('amount', 'bigint', (c) => c.notNull())
        .addColumn('currency', 'text', (c) => c.notNull())
        .addColumn('interval', 'text', (c) => c.notNull())
        .addColumn('interval_count', 'integer', (c) => c.notNull())
        .addColumn('trial_days', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('is_active', 'integer', (c) => c.notNull().defaultTo(1))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addCheckConstraint('subscription_plans_environment', sql`environment in ('production', 'sandbox')`)
        .addCheckConstraint('subscription_plans_currency', sql`currency in ('USD', 'EUR')`)
        .addCheckConstraint('subscription_plans_amount', sql`amount > 0`)
        .addCheckConstraint(
          'subscription_plans_interval',
          sql`${sql.ref('interval')} in ('day', 'week', 'month', 'year')`,
        )
        .addCheckConstraint('subscription_plans_interval_count', sql`interval_count between 1 and 12`)
        .addCheckConstraint('subscription_plans_trial_days', sql`trial_days between 0 and 90`)
        .addCheckConstraint('subscription_plans_is_active', sql`is_active in (0, 1)`)
        .execute();
      await db.schema
        .createIndex('subscription_plans_org')
        .on('subscription_plans')
        .columns(['organization_id', 'environment', 'id'])
        .execute();

      // anchor_at is the end of the trial (the signup without one): period k starts at anchor + k × interval.
      await withId(db.schema.createTable('subscriptions'), kind)
        .addColumn('public_id', 'text', (c) => c.notNull().unique())
        .addColumn('organization_id', 'bigint', (c) => c.notNull().references('organizations.id'))
        .addColumn('environment', 'text', (c) => c.notNull())
        .addColumn('plan_id', 'bigint', (c) => c.notNull().references('subscription_plans.id'))
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('customer_email', 'text', (c) => c.notNull())
        .addColumn('customer_name', 'text')
        .addColumn('provider', 'text', (c) => c.notNull())
        .addColumn('provider_customer_id', 'text', (c) => c.notNull())
        .addColumn('payment_method_id', 'text', (c) => c.notNull())
        .addColumn('card_brand', 'text', (c) => c.notNull())
        .addColumn('card_last4', 'text', (c) => c.notNull())
        .addColumn('card_exp_month', 'integer', (c) => c.notNull())
        .addColumn('card_exp_year', 'integer', (c) => c.notNull())
        .addColumn('anchor_at', 'text', (c) => c.notNull())
        .addColumn('trial_end', 'text')
        .addColumn('next_renewal_at', 'text')
        .addColumn('cancel_at_period_end', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('canceled_at', 'text')
        .addColumn('cancel_reason', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addCheckConstraint('subscriptions_environment', sql`environment in ('production', 'sandbox')`)
        .addCheckConstraint(
          'subscriptions_status',
          sql`status in ('trialing', 'active', 'past_due', 'canceled')`,
        )
        .addCheckConstraint(
          'subscriptions_cancel_reason',
          sql`cancel_reason is null or cancel_reason in ('merchant', 'payment_failed')`,
        )
        .addCheckConstraint(
          'subscriptions_canceled',
          sql`status <> 'canceled' or (canceled_at is not null and cancel_reason is not null)`,
        )
        .addCheckConstraint('subscriptions_cancel_at_period_end', sql`cancel_at_period_end in (0, 1)`)
        .execute();
      await db.schema
        .createIndex('subscriptions_org')
        .on('subscriptions')
        .columns(['organization_id', 'environment', 'id'])
        .execute();
      await db.schema.createIndex('subscriptions_plan').on('subscriptions').column('plan_id').execute();
      // The renewal worker's query: subscriptions whose next period has started.
      await db.schema
        .createIndex('subscriptions_renewal_due')
        .on('subscriptions')
        .column('next_renewal_at')
        .where(sql.ref('next_renewal_at'), 'is not', null)
        .execute();

      // One row per (subscription, period): a second insert for the same period fails, whoever makes it.
      await withId(db.schema.createTable('subscription_cycles'), kind)
        .addColumn('subscription_id', 'bigint', (c) => c.notNull().references('subscriptions.id'))
        .addColumn('organization_id', 'bigint', (c) => c.notNull().references('organizations.id'))
        .addColumn('environment', 'text', (c) => c.notNull())
        .addColumn('period_index', 'integer', (c) => c.notNull())
        .addColumn('period_start', 'text', (c) => c.notNull())
        .addColumn('period_end', 'text', (c) => c.notNull())
        .addColumn('amount', 'bigint', (c) => c.notNull())
        .addColumn('currency', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('first_attempt_at', 'text')
        .addColumn('next_attempt_at', 'text')
        .addColumn('needs_new_card', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('leased_by', 'text')
        .addColumn('lease_until', 'text')
        .addColumn('payment_id', 'bigint', (c) => c.references('payments.id'))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addUniqueConstraint('subscription_cycles_period', ['subscription_id', 'period_index'])
        .addCheckConstraint('subscription_cycles_environment', sql`environment in ('production', 'sandbox')`)
        .addCheckConstraint('subscription_cycles_period_index', sql`period_index >= 0`)
        .addCheckConstraint('subscription_cycles_amount', sql`amount > 0`)
        .addCheckConstraint('subscription_cycles_currency', sql`currency in ('USD', 'EUR')`)
        .addCheckConstraint(
          'subscription_cycles_status',
          sql`status in ('processing', 'paid', 'retrying', 'uncollectible', 'void')`,
        )
        .addCheckConstraint('subscription_cycles_attempts', sql`attempts between 0 and 5`)
        .addCheckConstraint('subscription_cycles_needs_new_card', sql`needs_new_card in (0, 1)`)
        .addCheckConstraint('subscription_cycles_lease', sql`(leased_by is null) = (lease_until is null)`)
        .execute();
      // The due-cycle query: cycles whose next try (or give-up time) has come.
      await db.schema
        .createIndex('subscription_cycles_due')
        .on('subscription_cycles')
        .column('next_attempt_at')
        .where(sql.ref('next_attempt_at'), 'is not', null)
        .execute();

      // The subscription a renewal payment charges for (null for every other payment).
      await db.schema
        .alterTable('payments')
        .addColumn('subscription_id', 'bigint', (c) => c.references('subscriptions.id'))
        .execute();
      await db.schema
        .createIndex('payments_subscription')
        .on('payments')
        .column('subscription_id')
        .where(sql.ref('subscription_id'), 'is not', null)
        .execute();
    },
  };
}
