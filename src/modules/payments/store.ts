// Payment queries. Lookups by id are scoped by organization (and by environment for API keys);
// the few unscoped ones serve the provider sync, which starts from the provider's ids.
import { sql } from 'kysely';
import { isPostgres } from '../../db/connection.ts';
import type { Executor } from '../../db/database.ts';
import { prepareQuery } from '../../db/prepared.ts';
import { isPublicId, parseNumericId } from '../../lib/ids.ts';
import type { Environment } from '../api-keys/table.ts';
import { cancelNotInReconciliation } from './cancel.ts';
import {
  DEPOSIT_ATTEMPT_COLUMNS,
  type DepositAttemptRow,
  PAYMENT_COLUMNS,
  type PaymentRow,
} from './table.ts';

/** A payment row with its checkout's references (what GET /transactions/{id}/ shows of the checkout). */
export type PaymentWithReference = PaymentRow & {
  checkout_public_id: string | null;
  checkout_metadata: string | null;
  checkout_client_reference_id: string | null;
  checkout_subscription_public_id: string | null;
};

// The lookups behind the dashboard's payment page, prepared (one per shape).
// The checkout's references come in the same statement (a join on its primary key), not a second one.
const paymentsOf = (db: Executor, organizationId: number) =>
  db
    .selectFrom('payments')
    .leftJoin('checkout_sessions', 'checkout_sessions.id', 'payments.checkout_session_id')
    .select(PAYMENT_COLUMNS.map((column) => `payments.${column}` as const))
    .select([
      'checkout_sessions.public_id as checkout_public_id',
      'checkout_sessions.metadata as checkout_metadata',
      'checkout_sessions.client_reference_id as checkout_client_reference_id',
      'checkout_sessions.subscription_public_id as checkout_subscription_public_id',
    ])
    .where('payments.organization_id', '=', organizationId);
const byPublicId = prepareQuery(2, (db, organizationId: number, publicId: string) =>
  paymentsOf(db, organizationId).where('payments.public_id', '=', publicId),
);
const byNumericId = prepareQuery(2, (db, organizationId: number, id: number) =>
  paymentsOf(db, organizationId).where('payments.id', '=', id),
);

/** The columns GET /transactions/{id}/ presents of a payment (presentPayment reads no others). */
export const PRESENTED_COLUMNS = [
  'public_id',
  'gross',
  'net',
  'status',
  'currency',
  'payer_email',
  'products',
  'fee_bp',
  'net_usd',
  'simulated',
  'created_at',
  'updated_at',
] as const;
export type PresentedPayment = Pick<PaymentRow, (typeof PRESENTED_COLUMNS)[number]>;
export type PresentedAttempt = Pick<
  DepositAttemptRow,
  'status' | 'provider_payment_id' | 'attempted_at' | 'error_message' | 'payment_method'
>;

/** An attempt's presented columns, as `attempt_*`, for a statement that left-joins a payment's attempts. */
const JOINED_ATTEMPT_COLUMNS = [
  'deposit_attempts.id as attempt_id',
  'deposit_attempts.status as attempt_status',
  'deposit_attempts.provider_payment_id as attempt_provider_payment_id',
  'deposit_attempts.attempted_at as attempt_attempted_at',
  'deposit_attempts.error_message as attempt_error_message',
  'deposit_attempts.payment_method as attempt_payment_method',
] as const;

// GET /transactions/{id}/ with an API key in one statement: the presented columns of the payment, its
// checkout's references and its attempts (one row per attempt, newest first; one row with null attempt
// columns when there is none). Two statements less than the payment row, then its attempts.
const presentedOf = (db: Executor, organizationId: number, environment: Environment) =>
  db
    .selectFrom('payments')
    .leftJoin('checkout_sessions', 'checkout_sessions.id', 'payments.checkout_session_id')
    .leftJoin('deposit_attempts', 'deposit_attempts.payment_id', 'payments.id')
    .select(PRESENTED_COLUMNS.map((column) => `payments.${column}` as const))
    .select([
      'checkout_sessions.public_id as checkout_public_id',
      'checkout_sessions.metadata as checkout_metadata',
      'checkout_sessions.client_reference_id as checkout_client_reference_id',
      'checkout_sessions.subscription_public_id as checkout_subscription_public_id',
      ...JOINED_ATTEMPT_COLUMNS,
    ])
    .where('payments.organization_id', '=', organizationId)
    .where('payments.environment', '=', environment)
    .orderBy('deposit_attempts.attempted_at', 'desc')
    .orderBy('deposit_attempts.id', 'desc');
// The API key's status comes with the rows (a primary-key subquery): a key served from the process's
// cache (api-keys/cache.ts) is checked in the same statement, so a revocation anywhere counts at once.
const withKeyStatus = (query: ReturnType<typeof presentedOf>, keyId: number) =>
  query.select((eb) => eb.selectFrom('api_keys').select('status').where('id', '=', keyId).as('key_status'));
const presentedByPublicId = prepareQuery(
  4,
  (db, keyId: number, organizationId: number, environment: Environment, publicId: string) =>
    withKeyStatus(presentedOf(db, organizationId, environment), keyId).where(
      'payments.public_id',
      '=',
      publicId,
    ),
);
const presentedByNumericId = prepareQuery(
  4,
  (db, keyId: number, organizationId: number, environment: Environment, id: number) =>
    withKeyStatus(presentedOf(db, organizationId, environment), keyId).where('payments.id', '=', id),
);

/** The attempts of rows that left-joined them (`attempt_*` columns), in the rows' order. */
function joinedAttempts(
  rows: {
    attempt_id: number | null;
    attempt_status: string | null;
    attempt_provider_payment_id: string | null;
    attempt_attempted_at: string | null;
    attempt_error_message: string | null;
    attempt_payment_method: string | null;
  }[],
): PresentedAttempt[] {
  const attempts: PresentedAttempt[] = [];
  for (const row of rows) {
    // A left join: the attempt's NOT NULL columns are null only on the row of a payment without attempts.
    if (row.attempt_id === null) continue;
    attempts.push({
      status: row.attempt_status as string,
      provider_payment_id: row.attempt_provider_payment_id as string,
      attempted_at: row.attempt_attempted_at as string,
      error_message: row.attempt_error_message,
      payment_method: row.attempt_payment_method as string,
    });
  }
  return attempts;
}

// A payment's event payload reads its checkout's references and its attempts in one statement (one row
// per attempt, newest first; one row with null attempt columns when there is none).
const eventReadOf = prepareQuery(2, (db, checkoutSessionId: number, paymentId: number) =>
  db
    .selectFrom('checkout_sessions')
    .leftJoin('deposit_attempts', (join) => join.on('deposit_attempts.payment_id', '=', paymentId))
    .select([
      'checkout_sessions.public_id',
      'checkout_sessions.metadata',
      'checkout_sessions.client_reference_id',
      'checkout_sessions.subscription_public_id',
      ...JOINED_ATTEMPT_COLUMNS,
    ])
    .where('checkout_sessions.id', '=', checkoutSessionId)
    .orderBy('deposit_attempts.attempted_at', 'desc')
    .orderBy('deposit_attempts.id', 'desc'),
);

/** A payment's checkout references and attempts (newest first), for its event payload: one statement. */
export async function eventReadOfPayment(
  db: Executor,
  payment: Pick<PaymentRow, 'id' | 'checkout_session_id' | 'public_id'>,
): Promise<{ checkout: CheckoutReference; attempts: PresentedAttempt[] }> {
  const rows = await eventReadOf.all(db, payment.checkout_session_id, payment.id);
  const first = rows[0];
  if (!first) throw new Error(`the checkout of payment ${payment.public_id} is missing`);
  const { public_id, metadata, client_reference_id, subscription_public_id } = first;
  return {
    checkout: { public_id, metadata, client_reference_id, subscription_public_id },
    attempts: joinedAttempts(rows),
  };
}

export interface PresentedRead {
  payment: PresentedPayment;
  attempts: PresentedAttempt[];
  checkout: CheckoutReference;
  /** The status of the API key `keyId`, as of this statement. */
  keyStatus: string | null;
}

/**
 * What GET /transactions/{id}/ shows, read in one statement with the status of the key `keyId`;
 * undefined when no payment of that reference is in the scope.
 */
export async function findPresentedPayment(
  db: Executor,
  keyId: number,
  organizationId: number,
  environment: Environment,
  reference: string,
): Promise<PresentedRead | undefined> {
  const numeric = parseNumericId(reference);
  if (numeric === null && !isPublicId('payment', reference)) return undefined;
  const rows =
    numeric === null
      ? await presentedByPublicId.all(db, keyId, organizationId, environment, reference)
      : await presentedByNumericId.all(db, keyId, organizationId, environment, numeric);
  const first = rows[0];
  if (!first) return undefined;
  const attempts = joinedAttempts(rows);
  if (first.checkout_public_id === null)
    throw new Error(`the checkout of payment ${first.public_id} is missing`);
  return {
    payment: first,
    attempts,
    checkout: {
      public_id: first.checkout_public_id,
      metadata: first.checkout_metadata,
      client_reference_id: first.checkout_client_reference_id,
      subscription_public_id: first.checkout_subscription_public_id,
    },
    keyStatus: first.key_status,
  };
}

/**
 * A payment of the organization (either environment: the dashboard's view) by public TX id or numeric
 * id; undefined for anything else.
 */
export async function findPayment(
  db: Executor,
  organizationId: number,
  reference: string,
): Promise<PaymentWithReference | undefined> {
  const numeric = parseNumericId(reference);
  if (numeric === null && !isPublicId('payment', reference)) return undefined;
  return numeric === null
    ? byPublicId.first(db, organizationId, reference)
    : byNumericId.first(db, organizationId, numeric);
}

/** The payment row, locked for the rest of the transaction on PostgreSQL (SQLite has one writer). */
export async function lockPayment(trx: Executor, paymentId: number): Promise<PaymentRow | undefined> {
  const query = trx.selectFrom('payments').selectAll().where('id', '=', paymentId);
  return (isPostgres(trx) ? query.forUpdate() : query).executeTakeFirst();
}

/** A card attempt's columns, as `attempt__*`, for a statement that left-joins a payment's attempts. */
const ATTEMPT_ALIASES = DEPOSIT_ATTEMPT_COLUMNS.map((column) => `attempt__${column}` as const);

/**
 * lockPayment and attemptsOf in one statement, for a caller that expects no other transaction to hold
 * the payment (a card attempt recording its own answer). On PostgreSQL the row is locked without
 * waiting: a statement that waited for another transaction's commit would see the latest version of
 * the payment but its attempts as they stood before (a locking statement's other rows come from its
 * snapshot), so a held lock is an error instead (isLockNotAvailable), the caller's transaction is rolled
 * back, and it is run again with lockPayment and attemptsOf, one after the other. SQLite has one writer.
 */
export async function lockPaymentWithAttempts(
  trx: Executor,
  paymentId: number,
): Promise<{ payment: PaymentRow; attempts: DepositAttemptRow[] } | undefined> {
  const query = trx
    .selectFrom('payments')
    .leftJoin('deposit_attempts', 'deposit_attempts.payment_id', 'payments.id')
    .select(PAYMENT_COLUMNS.map((column) => `payments.${column}` as const))
    .select(
      DEPOSIT_ATTEMPT_COLUMNS.map((column, index) =>
        sql.ref(`deposit_attempts.${column}`).as(ATTEMPT_ALIASES[index]),
      ),
    )
    .where('payments.id', '=', paymentId)
    .orderBy('deposit_attempts.attempted_at', 'desc')
    .orderBy('deposit_attempts.id', 'desc');
  const rows = (await (isPostgres(trx) ? query.forUpdate('payments').noWait() : query).execute()) as Record<
    string,
    unknown
  >[];
  const [first] = rows;
  if (first === undefined) return undefined;
  const payment = Object.fromEntries(PAYMENT_COLUMNS.map((column) => [column, first[column]])) as PaymentRow;
  const attempts = rows
    .filter((row) => row.attempt__id !== null)
    .map(
      (row) =>
        Object.fromEntries(
          DEPOSIT_ATTEMPT_COLUMNS.map((column, index) => [column, row[ATTEMPT_ALIASES[index]]]),
        ) as DepositAttemptRow,
    );
  return { payment, attempts };
}

export function paymentOfCheckout(db: Executor, checkoutSessionId: number) {
  return db
    .selectFrom('payments')
    .selectAll()
    .where('checkout_session_id', '=', checkoutSessionId)
    .executeTakeFirst();
}

const attemptsOfPayment = prepareQuery(1, (db, paymentId: number) =>
  db
    .selectFrom('deposit_attempts')
    .select(DEPOSIT_ATTEMPT_COLUMNS)
    .where('payment_id', '=', paymentId)
    .orderBy('attempted_at', 'desc')
    .orderBy('id', 'desc'),
);

/** Card attempts, newest first. */
export function attemptsOf(db: Executor, paymentId: number): Promise<DepositAttemptRow[]> {
  return attemptsOfPayment.all(db, paymentId);
}

export async function attemptsByPayment(db: Executor, paymentIds: number[]) {
  const byPayment = new Map<number, DepositAttemptRow[]>();
  if (paymentIds.length === 0) return byPayment;
  const rows = await db
    .selectFrom('deposit_attempts')
    .selectAll()
    .where('payment_id', 'in', paymentIds)
    .orderBy('attempted_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  for (const row of rows) {
    const list = byPayment.get(row.payment_id) ?? [];
    list.push(row);
    byPayment.set(row.payment_id, list);
  }
  return byPayment;
}

/** What a payment shows of its checkout: order_id, and the merchant's metadata and reference. */
export interface CheckoutReference {
  public_id: string;
  metadata: string | null;
  client_reference_id: string | null;
  /** The subscription (SU…) the payment charges for; null for every other payment. */
  subscription_public_id: string | null;
}

const checkoutReferenceOf = prepareQuery(1, (db, sessionId: number) =>
  db
    .selectFrom('checkout_sessions')
    .select(['public_id', 'metadata', 'client_reference_id', 'subscription_public_id'])
    .where('id', '=', sessionId),
);

/** The checkout references a findPayment() row carries. */
export function referenceOf(payment: PaymentWithReference): CheckoutReference {
  if (payment.checkout_public_id === null)
    throw new Error(`checkout session ${payment.checkout_session_id} is missing`);
  return {
    public_id: payment.checkout_public_id,
    metadata: payment.checkout_metadata,
    client_reference_id: payment.checkout_client_reference_id,
    subscription_public_id: payment.checkout_subscription_public_id,
  };
}

export async function checkoutReference(db: Executor, sessionId: number): Promise<CheckoutReference> {
  const row = await checkoutReferenceOf.first(db, sessionId);
  if (!row) throw new Error(`checkout session ${sessionId} is missing`);
  return row;
}

export async function checkoutReferences(db: Executor, sessionIds: number[]) {
  if (sessionIds.length === 0) return new Map<number, CheckoutReference>();
  const rows = await db
    .selectFrom('checkout_sessions')
    .select(['id', 'public_id', 'metadata', 'client_reference_id', 'subscription_public_id'])
    .where('id', 'in', sessionIds)
    .execute();
  return new Map(rows.map(({ id, ...reference }) => [id, reference]));
}

/**
 * Payments with a provider payment whose state may still move (undecided ones, and paid ones whose
 * deposit is unsettled), in id order after `afterId`, so a caller can cycle through all of them in batches.
 */
export function paymentsToSync(db: Executor, afterId: number, limit: number) {
  return db
    .selectFrom('payments')
    .select(['id', 'public_id', 'provider', 'provider_payment_id'])
    .where('id', '>', afterId)
    .where('provider_payment_id', 'is not', null)
    .where((eb) =>
      eb.or([
        eb('status', 'in', ['processing', 'pending']),
        eb.and([
          eb('deposit_status', '=', 'pending'),
          eb('status', 'in', ['paid', 'refund_pending', 'refunded']),
        ]),
      ]),
    )
    .orderBy('id')
    .limit(limit)
    .execute();
}

/**
 * Payments still taking card attempts whose checkout has expired (and no attempt is in flight), in id
 * order after `afterId`: the expirer cycles through them as the sync loop does (paymentsToSync).
 */
export function expiredProcessingPayments(db: Executor, now: string, afterId: number, limit: number) {
  return (
    db
      .selectFrom('payments')
      .innerJoin('checkout_sessions', 'checkout_sessions.id', 'payments.checkout_session_id')
      .select('payments.id')
      .where('payments.id', '>', afterId)
      .where('payments.status', '=', 'processing')
      // A renewal's checkout is closed from the start; its payment is the renewal worker's to decide.
      .where('payments.subscription_id', 'is', null)
      .where('checkout_sessions.expires_at', '<=', now)
      // A stop the provider did not answer is the reconciler's to retry, then to flag (cancel.ts).
      .where(cancelNotInReconciliation)
      .where((eb) =>
        eb.or([
          eb('checkout_sessions.attempt_locked_until', 'is', null),
          eb('checkout_sessions.attempt_locked_until', '<', now),
        ]),
      )
      .orderBy('payments.id')
      .limit(limit)
      .execute()
  );
}

export function paymentByProviderId(db: Executor, provider: string, providerPaymentId: string) {
  return db
    .selectFrom('payments')
    .select(['id', 'public_id', 'provider', 'provider_payment_id'])
    .where('provider', '=', provider)
    .where('provider_payment_id', '=', providerPaymentId)
    .executeTakeFirst();
}

/** Whether the provider may still change this payment (undecided, or paid with the deposit unsettled). */
export function mayStillMove(payment: PaymentRow): boolean {
  if (payment.status === 'processing' || payment.status === 'pending') return true;
  return (
    payment.deposit_status === 'pending' &&
    (payment.status === 'paid' || payment.status === 'refund_pending' || payment.status === 'refunded')
  );
}

export async function paymentStatusOf(db: Executor, paymentId: number) {
  const row = await db.selectFrom('payments').select('status').where('id', '=', paymentId).executeTakeFirst();
  return row?.status ?? null;
}
