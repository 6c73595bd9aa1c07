// Checkout session queries. Sessions are found by the SHA-256 of their token (the hosted step) or by
// public id within an organization and environment (API keys).
import { isPostgres } from '../../db/connection.ts';
import type { Executor } from '../../db/database.ts';
import { isPublicId, sha256Hex } from '../../lib/ids.ts';
import type { Environment } from '../api-keys/table.ts';
import type { CheckoutSessionRow, CheckoutSessionsTable } from './table.ts';

const TOKEN = /^[A-Za-z0-9_-]{43}$/;

export function findByToken(db: Executor, token: string): Promise<CheckoutSessionRow | undefined> {
  if (!TOKEN.test(token)) return Promise.resolve(undefined);
  return db
    .selectFrom('checkout_sessions')
    .selectAll()
    .where('token_hash', '=', sha256Hex(token))
    .executeTakeFirst();
}

export function findByPublicId(
  db: Executor,
  organizationId: number,
  environment: Environment,
  publicId: string,
): Promise<CheckoutSessionRow | undefined> {
  if (!isPublicId('checkout', publicId)) return Promise.resolve(undefined);
  return db
    .selectFrom('checkout_sessions')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('environment', '=', environment)
    .where('public_id', '=', publicId)
    .executeTakeFirst();
}

/** The session row, locked for the rest of the transaction on PostgreSQL. */
export function lockSession(trx: Executor, id: number): Promise<CheckoutSessionRow> {
  const query = trx.selectFrom('checkout_sessions').selectAll().where('id', '=', id);
  return (isPostgres(trx) ? query.forUpdate() : query).executeTakeFirstOrThrow();
}

export function insertSession(
  db: Executor,
  values: Omit<CheckoutSessionsTable, 'id'>,
): Promise<CheckoutSessionRow> {
  return db.insertInto('checkout_sessions').values(values).returningAll().executeTakeFirstOrThrow();
}

export async function updateSession(
  db: Executor,
  id: number,
  changes: Partial<Pick<CheckoutSessionRow, 'canceled_at' | 'attempt_locked_until' | 'updated_at'>>,
): Promise<void> {
  await db.updateTable('checkout_sessions').set(changes).where('id', '=', id).execute();
}

export function organizationTerms(db: Executor, organizationId: number) {
  return db
    .selectFrom('organizations')
    .select([
      'name',
      'website',
      'status',
      'price_mode',
      'fee_bp',
      'tax_rate_bp',
      'min_payment',
      'max_payment',
    ])
    .where('id', '=', organizationId)
    .executeTakeFirstOrThrow();
}
