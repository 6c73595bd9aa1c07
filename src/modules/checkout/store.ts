// Checkout session queries. Sessions are found by the SHA-256 of their token (the hosted step) or by
// public id within an organization and environment (API keys).
import { sql } from 'kysely';
import { isPostgres } from '../../db/connection.ts';
import type { Executor } from '../../db/database.ts';
import { prepareInsert, prepareQuery } from '../../db/prepared.ts';
import { deferWrite } from '../../db/write-behind.ts';
import { isPublicId, sha256Hex } from '../../lib/ids.ts';
import type { Environment } from '../api-keys/table.ts';
import { PAYMENT_COLUMNS, type PaymentRow } from '../payments/table.ts';
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

// The hosted step's first read: the session by its token and its payment, if any (a checkout has at
// most one), in one statement; the payment's columns come as `payment__<column>`.
const byTokenWithPayment = prepareQuery(1, (db, tokenHash: string) =>
  db
    .selectFrom('checkout_sessions')
    .leftJoin('payments', 'payments.checkout_session_id', 'checkout_sessions.id')
    .select(SESSION_ROW_COLUMNS.map((column) => `checkout_sessions.${column}` as const))
    .select(PAYMENT_COLUMNS.map((column) => sql.ref(`payments.${column}`).as(`payment__${column}`)))
    .where('checkout_sessions.token_hash', '=', tokenHash),
);

/** A session by its token with its payment (undefined: none yet), read in one statement. */
export async function findByTokenWithPayment(
  db: Executor,
  token: string,
): Promise<{ session: CheckoutSessionRow; payment: PaymentRow | undefined } | undefined> {
  if (!TOKEN.test(token)) return undefined;
  const row = (await byTokenWithPayment.first(db, sha256Hex(token))) as Record<string, unknown> | undefined;
  if (!row) return undefined;
  const session: Record<string, unknown> = {};
  const payment: Record<string, unknown> = {};
  for (const [column, value] of Object.entries(row)) {
    if (column.startsWith('payment__')) payment[column.slice('payment__'.length)] = value;
    else session[column] = value;
  }
  return {
    session: session as unknown as CheckoutSessionRow,
    payment: payment.id === null ? undefined : (payment as unknown as PaymentRow),
  };
}

/** The session row, locked for the rest of the transaction on PostgreSQL. */
export function lockSession(trx: Executor, id: number): Promise<CheckoutSessionRow> {
  const query = trx.selectFrom('checkout_sessions').selectAll().where('id', '=', id);
  return (isPostgres(trx) ? query.forUpdate() : query).executeTakeFirstOrThrow();
}

/**
 * Takes a checkout's card-attempt slot: sets attempt_locked_until to `until` unless an attempt is in
 * flight at `now`, and returns the session as it now stands (locked for the rest of the transaction on
 * PostgreSQL, as lockSession) with its organization's fee in basis points, which a card attempt that
 * opens the checkout's payment fixes, and whether the statement saw the checkout's payment. Undefined
 * when an attempt is in flight, or no checkout has that id or token. The checkout is named by its id or,
 * for the hosted step's first statement, by its token (the SHA-256 of it, as findByTokenWithPayment).
 * Both times are ISO strings of the same form as the column's, so the text comparison is the time
 * comparison. On PostgreSQL the fee and the payment are as of the statement's start: when the update
 * waited for the session's lock (another transaction on the same checkout), a fee change committed
 * during that wait applies from the organization's next payment, as for any payment opened at the moment
 * of the change; and a payment opened meanwhile is not seen (a payment, once opened, is never removed: a
 * payment seen exists, one not seen may exist, which the caller's insert finds, openPaymentUnlessOpen).
 */
export async function claimAttemptSlot(
  trx: Executor,
  checkout: { id: number } | { token: string },
  now: string,
  until: string,
): Promise<{ session: CheckoutSessionRow; feeBp: number; paymentSeen: boolean } | undefined> {
  if ('token' in checkout && !TOKEN.test(checkout.token)) return undefined;
  const row = await trx
    .updateTable('checkout_sessions')
    .set({ attempt_locked_until: until })
    .where((eb) =>
      'id' in checkout
        ? eb('checkout_sessions.id', '=', checkout.id)
        : eb('checkout_sessions.token_hash', '=', sha256Hex(checkout.token)),
    )
    .where((eb) => eb.or([eb('attempt_locked_until', 'is', null), eb('attempt_locked_until', '<=', now)]))
    .returningAll()
    .returning((eb) => [
      eb
        .selectFrom('organizations')
        .select('organizations.fee_bp')
        .whereRef('organizations.id', '=', 'checkout_sessions.organization_id')
        .as('organization_fee_bp'),
      eb
        .selectFrom('payments')
        .select('payments.id')
        .whereRef('payments.checkout_session_id', '=', 'checkout_sessions.id')
        .as('seen_payment_id'),
    ])
    .executeTakeFirst();
  if (row === undefined) return undefined;
  const { organization_fee_bp: feeBp, seen_payment_id: seenPaymentId, ...session } = row;
  if (feeBp === null) throw new Error(`Organization ${session.organization_id} does not exist.`);
  return { session, feeBp, paymentSeen: seenPaymentId !== null };
}

/** Every column of a session but its id, in the order of the prepared insert. */
export const SESSION_COLUMNS = [
  'public_id',
  'token_hash',
  'organization_id',
  'environment',
  'payment_link_id',
  'currency',
  'price_mode',
  'tax_rate_bp',
  'items',
  'subtotal_ht',
  'tax_amount',
  'gross',
  'billing_country',
  'billing_postal_code',
  'billing_first_name',
  'billing_last_name',
  'billing_email',
  'billing_phone',
  'success_url',
  'failed_url',
  'cancel_url',
  'simulate',
  'canceled_at',
  'attempt_locked_until',
  'expires_at',
  'created_at',
  'updated_at',
  'metadata',
  'client_reference_id',
  'subscription_public_id',
  'subscription_plan_id',
  'provider_customer_id',
  'signup_setup_id',
  'completed_at',
  'purpose',
] as const satisfies readonly (keyof Omit<CheckoutSessionsTable, 'id'>)[];
/** Every column of a session, for a statement that reads whole rows by name (PAYMENT_COLUMNS says why). */
const SESSION_ROW_COLUMNS = ['id', ...SESSION_COLUMNS] as const;
/** The type check that SESSION_COLUMNS misses none of the table's columns. */
type UnlistedSessionColumn = Exclude<keyof CheckoutSessionsTable, (typeof SESSION_ROW_COLUMNS)[number]>;
const sessionColumnsComplete: [UnlistedSessionColumn] extends [never] ? true : UnlistedSessionColumn = true;
void sessionColumnsComplete;
const sessionInsert = prepareInsert('checkout_sessions', SESSION_COLUMNS, ['id']);

/** Records a session (every column but the id); returns the new row's id. */
export async function insertSession(
  db: Executor,
  values: Omit<CheckoutSessionsTable, 'id'>,
): Promise<number> {
  return Number((await sessionInsert.insert(db, values)).id);
}

export async function updateSession(
  db: Executor,
  id: number,
  changes: Partial<
    Pick<
      CheckoutSessionRow,
      | 'canceled_at'
      | 'attempt_locked_until'
      | 'updated_at'
      | 'provider_customer_id'
      | 'signup_setup_id'
      | 'completed_at'
    >
  >,
): Promise<void> {
  // Nothing read back: in a transaction on PostgreSQL it goes with the next statement (write-behind.ts).
  await deferWrite(db, db.updateTable('checkout_sessions').set(changes).where('id', '=', id));
}

/**
 * The same insert for a request whose API key came from this process's cache (api-keys/cache.ts), with
 * the organization's terms the cache holds: the row is written only if, in this same statement, the key
 * is still active and the organization still active with those very terms. No row: the caller looks the
 * key up and starts again (a revocation, rotation or change of terms in any process is seen at once).
 */
const sessionInsertIfKeyHolds = prepareQuery(SESSION_COLUMNS.length + 5, (db, ...args: unknown[]) => {
  const values = args.slice(0, SESSION_COLUMNS.length);
  const [keyId, priceMode, taxRateBp, minPayment, maxPayment] = args.slice(SESSION_COLUMNS.length);
  return db
    .insertInto('checkout_sessions')
    .columns(SESSION_COLUMNS)
    .expression(
      db
        .selectNoFrom((eb) => SESSION_COLUMNS.map((column, index) => eb.val(values[index]).as(column)))
        .where((eb) =>
          eb.exists(
            eb
              .selectFrom('api_keys')
              .innerJoin('organizations', 'organizations.id', 'api_keys.organization_id')
              .select(sql.lit(1).as('holds'))
              .where('api_keys.id', '=', keyId as number)
              .where('api_keys.status', '=', 'active')
              .where('organizations.status', '=', 'active')
              .where('organizations.price_mode', '=', priceMode as 'HT' | 'TTC')
              .where('organizations.tax_rate_bp', '=', taxRateBp as number)
              .where('organizations.min_payment', '=', minPayment as number)
              .where('organizations.max_payment', '=', maxPayment as number),
          ),
        ),
    )
    .returning('id');
});

/** Records a session if the cached key and terms still hold (see above); its id, or null when not. */
export async function insertSessionIfKeyHolds(
  db: Executor,
  values: Omit<CheckoutSessionsTable, 'id'>,
  keyId: number,
  terms: OrganizationTerms,
): Promise<number | null> {
  const row = await sessionInsertIfKeyHolds.first(
    db,
    ...SESSION_COLUMNS.map((column) => values[column]),
    keyId,
    terms.price_mode,
    terms.tax_rate_bp,
    terms.min_payment,
    terms.max_payment,
  );
  return row ? Number(row.id) : null;
}

const terms = prepareQuery(1, (db, organizationId: number) =>
  db
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
    .where('id', '=', organizationId),
);

/** What a checkout charges by: the organization's pricing and limits. */
export type OrganizationTerms = NonNullable<Awaited<ReturnType<typeof terms.first>>>;

/** What a checkout charges by: the organization's pricing and limits (prepared: every checkout reads it). */
export async function organizationTerms(db: Executor, organizationId: number): Promise<OrganizationTerms> {
  const row = await terms.first(db, organizationId);
  if (!row) throw new Error(`Organization ${organizationId} does not exist.`);
  return row;
}
