// Wrong second-factor codes counted in the database (docs/accounts.md "Two-factor"), so the count holds
// across every process that shares it: the tries a login challenge has had (5, then the password again),
// and each account's wrong codes in the current window of the login limit, whatever the address.
import type { Kysely, Migration } from 'kysely';

export function secondFactorTries(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .alterTable('login_challenges')
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .alterTable('users')
        .addColumn('two_factor_failures', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      // When the window two_factor_failures counts in began; null: no failure yet.
      await db.schema.alterTable('users').addColumn('two_factor_failures_since', 'text').execute();
    },
  };
}
