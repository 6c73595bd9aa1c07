// Checkout metadata and client_reference_id (returned on the payment and in its webhooks), and the
// index behind GET /transactions/?client_reference_id=. Both live on the checkout session, where the
// merchant sets them; the payment reaches them through checkout_session_id.
import type { Kysely, Migration } from 'kysely';

export function integrate(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      // JSON text of a flat {key: string} object; null when none was given.
      await db.schema.alterTable('checkout_sessions').addColumn('metadata', 'text').execute();
      await db.schema.alterTable('checkout_sessions').addColumn('client_reference_id', 'text').execute();
      await db.schema
        .createIndex('checkout_sessions_client_reference')
        .on('checkout_sessions')
        .columns(['organization_id', 'client_reference_id'])
        .execute();
    },
  };
}
