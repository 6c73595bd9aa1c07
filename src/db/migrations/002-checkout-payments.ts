// Hosted checkout sessions, payments with their card attempts, and the built-in simulator's own state
// (kept in the database so it survives restarts and is shared by every API and worker process).
import { type Kysely, type Migration, sql } from 'kysely';
import type { DatabaseKind } from '../../config.ts';
import { withId } from './columns.ts';

export function checkoutPayments(kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await withId(db.schema.createTable('checkout_sessions'), kind)
        .addColumn('public_id', 'text', (c) => c.notNull().unique())
        .addColumn('token_hash', 'text', (c) => c.notNull().unique())
        .addColumn('organization_id', 'bigint', (c) => c.notNull().references('organizations.id'))
        .addColumn('environment', 'text', (c) => c.notNull())
        .addColumn('payment_link_id', 'text')
        .addColumn('currency', 'text', (c) => c.notNull())
        .addColumn('price_mode', 'text', (c) => c.notNull())
        .addColumn('tax_rate_bp', 'bigint', (c) => c.notNull())
        .addColumn('items', 'text', (c) => c.notNull())
        .addColumn('subtotal_ht', 'bigint', (c) => c.notNull())
        .addColumn('tax_amount', 'bigint', (c) => c.notNull())
        .addColumn('gross', 'bigint', (c) => c.notNull())
        .addColumn('billing_country', 'text', (c) => c.notNull())
        .addColumn('billing_postal_code', 'text')
        .addColumn('billing_first_name', 'text', (c) => c.notNull())
        .addColumn('billing_last_name', 'text', (c) => c.notNull())
        .addColumn('billing_email', 'text', (c) => c.notNull())
        .addColumn('billing_phone', 'text')
        .addColumn('success_url', 'text')
        .addColumn('failed_url', 'text')
        .addColumn('cancel_url', 'text')
        .addColumn('simulate', 'text')
        .addColumn('canceled_at', 'text')
        .addColumn('attempt_locked_until', 'text')
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addCheckConstraint('checkout_sessions_environment', sql`environment in ('production', 'sandbox')`)
        .addCheckConstraint('checkout_sessions_currency', sql`currency in ('USD', 'EUR')`)
        .addCheckConstraint('checkout_sessions_price_mode', sql`price_mode in ('HT', 'TTC')`)
        .addCheckConstraint('checkout_sessions_gross', sql`gross > 0`)
        .execute();
      await db.schema
        .createIndex('checkout_sessions_org')
        .on('checkout_sessions')
        .columns(['organization_id', 'environment', 'created_at'])
        .execute();
      await db.schema
        .createIndex('checkout_sessions_link')
        .on('checkout_sessions')
        .column('payment_link_id')
        .execute();
      await db.schema
        .createIndex('checkout_sessions_expiry')
        .on('checkout_sessions')
        .column('expires_at')
        .execute();

      await withId(db.schema.createTable('payments'), kind)
        .addColumn('public_id', 'text', (c) => c.notNull().unique())
        .addColumn('organization_id', 'bigint', (c) => c.notNull().references('organizations.id'))
        .addColumn('environment', 'text', (c) => c.notNull())
        .addColumn('checkout_session_id', 'bigint', (c) =>
          c.notNull().unique().references('checkout_sessions.id'),
        )
        .addColumn('payment_link_id', 'text')
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('currency', 'text', (c) => c.notNull())
        .addColumn('gross', 'bigint', (c) => c.notNull())
        .addColumn('fee', 'bigint', (c) => c.notNull())
        .addColumn('net', 'bigint', (c) => c.notNull())
        .addColumn('gross_ht', 'bigint', (c) => c.notNull())
        .addColumn('fee_bp', 'bigint', (c) => c.notNull())
        .addColumn('fx_rate', 'bigint', (c) => c.notNull())
        .addColumn('net_usd', 'bigint', (c) => c.notNull())
        .addColumn('payer_email', 'text')
        .addColumn('products', 'text', (c) => c.notNull())
        .addColumn('provider', 'text', (c) => c.notNull())
        .addColumn('provider_payment_id', 'text')
        .addColumn('provider_refund_state', 'text')
        .addColumn('deposit_status', 'text')
        .addColumn('settled_at', 'text')
        .addColumn('refunded_amount', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addUniqueConstraint('payments_provider_payment', ['provider', 'provider_payment_id'])
        .addCheckConstraint('payments_environment', sql`environment in ('production', 'sandbox')`)
        .addCheckConstraint(
          'payments_status',
          sql`status in ('processing', 'pending', 'paid', 'failed', 'canceled', 'refund_pending', 'refunded')`,
        )
        .addCheckConstraint('payments_currency', sql`currency in ('USD', 'EUR')`)
        .addCheckConstraint('payments_amounts', sql`gross > 0 and fee >= 0 and net = gross - fee`)
        .addCheckConstraint(
          'payments_deposit',
          sql`deposit_status is null or deposit_status in ('pending', 'succeeded')`,
        )
        .execute();
      await db.schema
        .createIndex('payments_org')
        .on('payments')
        .columns(['organization_id', 'environment', 'created_at'])
        .execute();
      await db.schema.createIndex('payments_status').on('payments').columns(['status', 'id']).execute();
      await db.schema
        .createIndex('payments_deposit')
        .on('payments')
        .columns(['deposit_status', 'id'])
        .execute();
      await db.schema.createIndex('payments_link').on('payments').column('payment_link_id').execute();

      await withId(db.schema.createTable('deposit_attempts'), kind)
        .addColumn('payment_id', 'bigint', (c) => c.notNull().references('payments.id'))
        .addColumn('provider_attempt_id', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('provider_payment_id', 'text', (c) => c.notNull())
        .addColumn('attempted_at', 'text', (c) => c.notNull())
        .addColumn('error_message', 'text')
        .addColumn('payment_method', 'text', (c) => c.notNull())
        .addColumn('card_brand', 'text')
        .addColumn('card_last4', 'text')
        .addUniqueConstraint('deposit_attempts_once', ['payment_id', 'provider_attempt_id'])
        .execute();

      // The simulator's side of the wire: what the "card processor" knows.
      await withId(db.schema.createTable('sim_payments'), kind)
        .addColumn('provider_payment_id', 'text', (c) => c.notNull().unique())
        .addColumn('reference', 'text', (c) => c.notNull().unique())
        .addColumn('environment', 'text', (c) => c.notNull())
        .addColumn('amount', 'bigint', (c) => c.notNull())
        .addColumn('refund_basis', 'bigint', (c) => c.notNull())
        .addColumn('currency', 'text', (c) => c.notNull())
        .addColumn('simulate', 'text')
        .addColumn('outcome', 'text', (c) => c.notNull())
        .addColumn('deposit_status', 'text')
        .addColumn('deposit_settles_at', 'text')
        .addColumn('pending_syncs', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('refunded_amount', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('attempts', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();

      await withId(db.schema.createTable('sim_refunds'), kind)
        .addColumn('provider_refund_id', 'text', (c) => c.notNull().unique())
        .addColumn('reference', 'text', (c) => c.notNull().unique())
        .addColumn('provider_payment_id', 'text', (c) => c.notNull())
        .addColumn('environment', 'text', (c) => c.notNull())
        .addColumn('amount', 'bigint', (c) => c.notNull())
        .addColumn('currency', 'text', (c) => c.notNull())
        .addColumn('reason', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('error_message', 'text')
        .addColumn('completes_at', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
    },
  };
}
