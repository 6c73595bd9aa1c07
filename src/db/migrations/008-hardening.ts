// Hardening (#14). Organizations list the origins public link starts may redirect to; a link may carry
// its own return URLs. Link uses are now counted from the link's checkouts and payments (a checkout that
// ends without a payment gives its use back), so the old started-checkouts counter is retired: zeroed,
// it can never trip its CHECK again.
import { type Kysely, type Migration, sql } from 'kysely';

export function hardening(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .alterTable('organizations')
        .addColumn('redirect_origins', 'text', (c) => c.notNull().defaultTo('[]'))
        .execute();
      for (const column of ['success_url', 'cancel_url', 'failed_url']) {
        await db.schema.alterTable('payment_links').addColumn(column, 'text').execute();
      }
      await sql`update payment_links set uses_count = 0`.execute(db);
    },
  };
}
