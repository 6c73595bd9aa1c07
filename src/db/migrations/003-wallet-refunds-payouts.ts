// The wallet and its ledger, refunds (with dashboard verification codes), payouts.
// The database itself guards the money rules: a wallet never goes negative, each ledger movement
// happens once, and a payment has at most one pending or processing refund.
import { type Kysely, type Migration, sql } from 'kysely';
import type { DatabaseKind } from '../../config.ts';
import { withId } from './columns.ts';

export function walletRefundsPayouts(kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await withId(db.schema.createTable('wallets'), kind)
        .addColumn('organization_id', 'bigint', (c) => c.notNull().references('organizations.id'))
        .addColumn('environment', 'text', (c) => c.notNull())
        .addColumn('currency', 'text', (c) => c.notNull().defaultTo('USD'))
        .addColumn('balance', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('reserve', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('held', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addUniqueConstraint('wallets_org_env', ['organization_id', 'environment'])
        .addCheckConstraint('wallets_environment', sql`environment in ('production', 'sandbox')`)
        .addCheckConstraint('wallets_balance', sql`balance >= 0`)
        .addCheckConstraint('wallets_reserve', sql`reserve >= 0`)
        .addCheckConstraint('wallets_held', sql`held >= 0`)
        .addCheckConstraint('wallets_held_covered', sql`held <= balance + reserve`)
        .execute();

      await withId(db.schema.createTable('wallet_movements'), kind)
        .addColumn('wallet_id', 'bigint', (c) => c.notNull().references('wallets.id'))
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('reference_id', 'bigint', (c) => c.notNull())
        .addColumn('reference_public_id', 'text', (c) => c.notNull())
        .addColumn('amount', 'bigint', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addUniqueConstraint('wallet_movements_once', ['kind', 'reference_id'])
        .addCheckConstraint('wallet_movements_amount', sql`amount >= 0`)
        .execute();
      await db.schema
        .createIndex('wallet_movements_wallet')
        .on('wallet_movements')
        .columns(['wallet_id', 'id'])
        .execute();

      await withId(db.schema.createTable('wallet_entries'), kind)
        .addColumn('movement_id', 'bigint', (c) => c.notNull().references('wallet_movements.id'))
        .addColumn('wallet_id', 'bigint', (c) => c.notNull().references('wallets.id'))
        .addColumn('account', 'text', (c) => c.notNull())
        .addColumn('amount', 'bigint', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addCheckConstraint(
          'wallet_entries_account',
          sql`account in ('balance', 'reserve', 'held', 'hold_offset', 'settlements', 'refunds', 'payouts')`,
        )
        .execute();
      await db.schema
        .createIndex('wallet_entries_movement')
        .on('wallet_entries')
        .column('movement_id')
        .execute();
      await db.schema
        .createIndex('wallet_entries_wallet')
        .on('wallet_entries')
        .columns(['wallet_id', 'account'])
        .execute();

      await withId(db.schema.createTable('wallet_reserves'), kind)
        .addColumn('wallet_id', 'bigint', (c) => c.notNull().references('wallets.id'))
        .addColumn('payment_id', 'bigint', (c) => c.notNull().unique())
        .addColumn('amount', 'bigint', (c) => c.notNull())
        .addColumn('release_at', 'text', (c) => c.notNull())
        .addColumn('released_at', 'text')
        .addColumn('released_amount', 'bigint')
        .execute();
      await db.schema
        .createIndex('wallet_reserves_due')
        .on('wallet_reserves')
        .columns(['released_at', 'release_at'])
        .execute();

      await withId(db.schema.createTable('refunds'), kind)
        .addColumn('public_id', 'text', (c) => c.notNull().unique())
        .addColumn('organization_id', 'bigint', (c) => c.notNull().references('organizations.id'))
        .addColumn('environment', 'text', (c) => c.notNull())
        .addColumn('payment_id', 'bigint', (c) => c.notNull())
        .addColumn('amount', 'bigint', (c) => c.notNull())
        .addColumn('currency', 'text', (c) => c.notNull())
        .addColumn('amount_usd', 'bigint', (c) => c.notNull())
        .addColumn('amount_in_cents', 'bigint', (c) => c.notNull())
        .addColumn('reason', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('source', 'text', (c) => c.notNull())
        .addColumn('provider_refund_id', 'text')
        .addColumn('error_message', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addCheckConstraint('refunds_amount', sql`amount > 0 and amount_usd >= 0 and amount_in_cents >= 0`)
        .addCheckConstraint(
          'refunds_status',
          sql`status in ('pending', 'processing', 'completed', 'failed', 'rejected')`,
        )
        .execute();
      // One pending or processing refund per payment, whatever the application does.
      await db.schema
        .createIndex('refunds_one_in_flight')
        .on('refunds')
        .column('payment_id')
        .unique()
        .where(sql.ref('status'), 'in', sql`('pending', 'processing')`)
        .execute();
      await db.schema
        .createIndex('refunds_org')
        .on('refunds')
        .columns(['organization_id', 'environment', 'created_at'])
        .execute();
      await db.schema
        .createIndex('refunds_payment')
        .on('refunds')
        .columns(['payment_id', 'status'])
        .execute();
      await db.schema.createIndex('refunds_status').on('refunds').columns(['status', 'updated_at']).execute();

      await withId(db.schema.createTable('refund_verification_codes'), kind)
        .addColumn('organization_id', 'bigint', (c) => c.notNull().references('organizations.id'))
        .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id'))
        .addColumn('code_hash', 'text', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .addColumn('used_at', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('refund_verification_codes_user')
        .on('refund_verification_codes')
        .columns(['user_id', 'id'])
        .execute();

      await withId(db.schema.createTable('payouts'), kind)
        .addColumn('public_id', 'text', (c) => c.notNull().unique())
        .addColumn('organization_id', 'bigint', (c) => c.notNull().references('organizations.id'))
        .addColumn('environment', 'text', (c) => c.notNull())
        .addColumn('amount', 'bigint', (c) => c.notNull())
        .addColumn('currency', 'text', (c) => c.notNull().defaultTo('USD'))
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addCheckConstraint('payouts_amount', sql`amount > 0`)
        .addCheckConstraint('payouts_status', sql`status in ('pending', 'completed', 'rejected')`)
        .execute();
      await db.schema
        .createIndex('payouts_org')
        .on('payouts')
        .columns(['organization_id', 'environment', 'created_at'])
        .execute();
    },
  };
}
