// Renewals and signups (decisions.md "Subscriptions"): a sandbox subscription's test clock; the
// subscription a payment's checkout charges for, so the payment and its webhook carry `subscription_id`;
// and what a signup checkout needs.
import { type Kysely, type Migration, sql } from 'kysely';

export function renewals(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      // A sandbox test clock: the frozen time of this subscription, moved only by advance-clock. null: real time.
      await db.schema.alterTable('subscriptions').addColumn('test_clock_at', 'text').execute();
      // The subscription (SU…) a checkout's payment is for: a renewal's closed checkout, or a signup's.
      await db.schema.alterTable('checkout_sessions').addColumn('subscription_public_id', 'text').execute();
      // A signup checkout (/subscribe/{plan}): the plan, the provider's customer the card is saved on, the
      // setup of a trial's card (no charge), and when the subscription was made from it.
      await db.schema
        .alterTable('checkout_sessions')
        .addColumn('subscription_plan_id', 'bigint', (c) => c.references('subscription_plans.id'))
        .execute();
      await db.schema.alterTable('checkout_sessions').addColumn('provider_customer_id', 'text').execute();
      await db.schema.alterTable('checkout_sessions').addColumn('signup_setup_id', 'text').execute();
      await db.schema.alterTable('checkout_sessions').addColumn('completed_at', 'text').execute();
      // card_update: the subscription's update-card page (a setup, no charge), not a signup.
      await db.schema.alterTable('checkout_sessions').addColumn('purpose', 'text').execute();
      // The renewal worker reads only real-time subscriptions; a test clock runs its own.
      await db.schema
        .createIndex('subscriptions_real_time_due')
        .on('subscriptions')
        .column('next_renewal_at')
        .where(sql.ref('test_clock_at'), 'is', null)
        .execute();
    },
  };
}
