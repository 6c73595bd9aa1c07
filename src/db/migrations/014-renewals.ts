// Renewals (decisions.md "Subscriptions"): a sandbox subscription's test clock, and the subscription a
// payment's checkout charges for, so the payment and its webhook carry `subscription_id`.
import { type Kysely, type Migration, sql } from 'kysely';

export function renewals(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      // A sandbox test clock: the frozen time of this subscription, moved only by advance-clock. null: real time.
      await db.schema.alterTable('subscriptions').addColumn('test_clock_at', 'text').execute();
      // The subscription (SU…) a checkout's payment is for: a renewal's closed checkout, or a signup's.
      await db.schema.alterTable('checkout_sessions').addColumn('subscription_public_id', 'text').execute();
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
