// Failed password checks counted in the database (docs/accounts.md "Login limiter"), so every API process
// sharing it counts against the same limits and a restart forgets nothing: one row per counted key (an
// account from an address, an account from anywhere, an address for any account), holding the failures
// of the window that began at window_started_at. The key is an HMAC of the scope, the email and the
// address, so the table holds no email or address in clear (an unknown email typed at login may be a
// password). Rows whose window has ended are pruned by the retention loop.
import type { Kysely, Migration } from 'kysely';

export function loginFailures(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('login_failures')
        .addColumn('key_hash', 'text', (c) => c.primaryKey())
        // 'account_address', 'account' or 'address': what the key counts (for the operator's eyes).
        .addColumn('scope', 'text', (c) => c.notNull())
        .addColumn('failures', 'integer', (c) => c.notNull())
        .addColumn('window_started_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('login_failures_window')
        .on('login_failures')
        .column('window_started_at')
        .execute();
    },
  };
}
