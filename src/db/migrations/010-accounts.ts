// Merchant accounts: member roles, invitations, two-factor (TOTP secret, recovery codes, login challenges),
// password resets, where and when each session last proved who it is, and the audit log.
import { type Kysely, type Migration, sql } from 'kysely';
import type { DatabaseKind } from '../../config.ts';
import { withId } from './columns.ts';

export function accounts(kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      // Every existing user created an organization (`kassa merchant create`), so each is its owner.
      await db.schema
        .alterTable('users')
        .addColumn('role', 'text', (c) => c.notNull().defaultTo('owner'))
        .execute();
      await db.schema.alterTable('users').addColumn('removed_at', 'text').execute();
      // The TOTP secret, encrypted with the service key; set by setup, active once totp_enabled_at is set.
      await db.schema.alterTable('users').addColumn('totp_secret', 'text').execute();
      await db.schema.alterTable('users').addColumn('totp_enabled_at', 'text').execute();
      // The last 30-second step a code was accepted for: a code is never accepted twice (replay).
      await db.schema.alterTable('users').addColumn('totp_last_step', 'bigint').execute();
      await db.schema.alterTable('users').addColumn('last_login_at', 'text').execute();

      await db.schema
        .alterTable('organizations')
        .addColumn('require_two_factor', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();

      // When the session last proved its user (login or POST /auth/confirm/): recent authentication.
      await db.schema.alterTable('sessions').addColumn('authenticated_at', 'text').execute();
      await db.schema.alterTable('sessions').addColumn('ip', 'text').execute();
      await db.schema.alterTable('sessions').addColumn('user_agent', 'text').execute();
      await db.schema.createIndex('sessions_user').on('sessions').column('user_id').execute();

      await withId(db.schema.createTable('invitations'), kind)
        .addColumn('organization_id', 'bigint', (c) => c.notNull().references('organizations.id'))
        .addColumn('email', 'text', (c) => c.notNull())
        .addColumn('role', 'text', (c) => c.notNull())
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('invited_by', 'bigint', (c) => c.references('users.id'))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .addColumn('accepted_at', 'text')
        .addColumn('revoked_at', 'text')
        .execute();
      await db.schema
        .createIndex('invitations_org')
        .on('invitations')
        .columns(['organization_id', 'email'])
        .execute();

      await withId(db.schema.createTable('recovery_codes'), kind)
        .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id'))
        .addColumn('code_hash', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('used_at', 'text')
        .execute();
      await db.schema.createIndex('recovery_codes_user').on('recovery_codes').column('user_id').execute();

      // The second step of a two-factor login: a single-use token naming the user whose password was right.
      await withId(db.schema.createTable('login_challenges'), kind)
        .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id'))
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .addColumn('used_at', 'text')
        .execute();
      await db.schema
        .createIndex('login_challenges_expires')
        .on('login_challenges')
        .column('expires_at')
        .execute();

      await withId(db.schema.createTable('password_resets'), kind)
        .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id'))
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .addColumn('used_at', 'text')
        .execute();
      await db.schema
        .createIndex('password_resets_expires')
        .on('password_resets')
        .column('expires_at')
        .execute();

      // Addresses each API key has been used from: an address not in here is audited once, when first seen.
      await db.schema
        .createTable('api_key_addresses')
        .addColumn('api_key_id', 'bigint', (c) => c.notNull().references('api_keys.id'))
        .addColumn('ip', 'text', (c) => c.notNull())
        .addColumn('first_seen_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('api_key_addresses_pk', ['api_key_id', 'ip'])
        .execute();

      await withId(db.schema.createTable('audit_log'), kind)
        .addColumn('organization_id', 'bigint', (c) => c.notNull().references('organizations.id'))
        .addColumn('at', 'text', (c) => c.notNull())
        .addColumn('actor_type', 'text', (c) => c.notNull())
        .addColumn('actor_id', 'bigint')
        .addColumn('actor_email', 'text')
        .addColumn('action', 'text', (c) => c.notNull())
        .addColumn('target_type', 'text')
        .addColumn('target_id', 'text')
        .addColumn('ip', 'text')
        .addColumn('user_agent', 'text')
        .addColumn('details', 'text', (c) => c.notNull().defaultTo('{}'))
        .addCheckConstraint(
          'audit_log_actor_type',
          sql`actor_type in ('user', 'api_key', 'operator', 'system')`,
        )
        .execute();
      await db.schema
        .createIndex('audit_log_org')
        .on('audit_log')
        .columns(['organization_id', 'at'])
        .execute();
      await db.schema.createIndex('audit_log_at').on('audit_log').column('at').execute();
    },
  };
}
