// A renewal try the provider keeps refusing (a refused key, a rate limit) is bounded (docs/subscriptions.md
// "A provider error is not a decline"): the cycle remembers when the refusals of its current try began,
// and once they have lasted 72 hours the try is flagged for the operator instead of put off again.
import type { Kysely, Migration } from 'kysely';

export function renewalProviderErrors(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      // The time (on the subscription's clock) of the first refusal of the try now waiting; null: none.
      await db.schema.alterTable('subscription_cycles').addColumn('provider_errors_since', 'text').execute();
    },
  };
}
