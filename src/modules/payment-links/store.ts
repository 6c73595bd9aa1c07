// Payment-link queries. Dashboard lookups are scoped by organization; public lookups go by the UUID,
// which is the link's bearer capability.
import { type Insertable, sql, type Updateable } from 'kysely';
import { isPostgres } from '../../db/connection.ts';
import type { Executor } from '../../db/database.ts';
import { toBigInt } from '../../lib/money.ts';
import type { Environment } from '../api-keys/table.ts';
import type { PaymentStatus } from '../payments/table.ts';
import type { PaymentLinksTable } from './table.ts';

/** The payment statuses that count as a sale in the link's stats. */
export const PAID_STATUSES: readonly PaymentStatus[] = ['paid', 'refund_pending', 'refunded'];

export function insertLink(db: Executor, values: Insertable<PaymentLinksTable>) {
  return db.insertInto('payment_links').values(values).returningAll().executeTakeFirstOrThrow();
}

/** The organization's links of one environment, newest first; deleted links are left out. */
export function listLinks(db: Executor, organizationId: number, environment: Environment) {
  return db
    .selectFrom('payment_links')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('environment', '=', environment)
    .where('deleted_at', 'is', null)
    .orderBy('id', 'desc')
    .execute();
}

/** One link of the organization, deleted ones included (their history stays readable). */
export function findLink(db: Executor, organizationId: number, uuid: string) {
  return db
    .selectFrom('payment_links')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('uuid', '=', uuid)
    .executeTakeFirst();
}

export function findLinkByUuid(db: Executor, uuid: string) {
  return db.selectFrom('payment_links').selectAll().where('uuid', '=', uuid).executeTakeFirst();
}

export function updateLink(db: Executor, id: number, changes: Updateable<PaymentLinksTable>) {
  return db
    .updateTable('payment_links')
    .set(changes)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The link row, locked for the rest of the transaction on PostgreSQL (SQLite runs one transaction at a time). */
export function lockLink(trx: Executor, id: number) {
  const query = trx.selectFrom('payment_links').selectAll().where('id', '=', id);
  return (isPostgres(trx) ? query.forUpdate() : query).executeTakeFirstOrThrow();
}

/**
 * Locks a link by its public id, as lockLink does (PostgreSQL; SQLite serialises transactions): a
 * checkout's first payment takes it, so a start counting the link's uses waits for that payment's
 * commit and counts it.
 */
export async function lockLinkByUuid(trx: Executor, organizationId: number, uuid: string): Promise<void> {
  const query = trx
    .selectFrom('payment_links')
    .select('id')
    .where('uuid', '=', uuid)
    .where('organization_id', '=', organizationId);
  await (isPostgres(trx) ? query.forUpdate() : query).executeTakeFirst();
}

export async function countView(db: Executor, id: number): Promise<void> {
  await db
    .updateTable('payment_links')
    .set((eb) => ({ views: eb('views', '+', 1) }))
    .where('id', '=', id)
    .execute();
}

/** Payment statuses that hold a link's use: paid (for good) or still being decided. */
const USE_HOLDING_STATUSES: readonly PaymentStatus[] = [...PAID_STATUSES, 'processing', 'pending'];

export interface LinkUses {
  /** Paid payments of the link plus open reservations: what max_uses limits. */
  uses: number;
  /** Checkouts ever started from the link (stats.checkouts_started). */
  started: number;
}

/**
 * The uses of each link at `now`, counted from its checkouts: one whose payment is paid or still being
 * decided holds a use; one without a payment holds it while it is neither canceled nor expired. A
 * checkout canceled, expired or failed without a payment has given its use back.
 */
export async function usesByLink(
  db: Executor,
  organizationId: number,
  uuids: string[],
  now: string,
): Promise<Map<string, LinkUses>> {
  const figures = new Map<string, LinkUses>();
  if (uuids.length === 0) return figures;
  const holding = sql.join(USE_HOLDING_STATUSES.map((status) => sql.lit(status)));
  const rows = await db
    .selectFrom('checkout_sessions as cs')
    .leftJoin('payments as p', 'p.checkout_session_id', 'cs.id')
    .select((eb) => [
      'cs.payment_link_id',
      eb.fn.countAll<number | string>().as('started'),
      sql<
        number | string
      >`sum(case when p.status in (${holding}) then 1 when p.id is null and cs.canceled_at is null and cs.expires_at > ${now} then 1 else 0 end)`.as(
        'uses',
      ),
    ])
    .where('cs.organization_id', '=', organizationId)
    .where('cs.payment_link_id', 'in', uuids)
    .groupBy('cs.payment_link_id')
    .execute();
  for (const row of rows) {
    if (row.payment_link_id === null) continue;
    figures.set(row.payment_link_id, { uses: Number(row.uses), started: Number(row.started) });
  }
  return figures;
}

export interface SalesFigures {
  paid: number;
  /** Minor units of the link currency. */
  revenue: bigint;
}

/** Paid payments and their gross per link, computed from the payments table. */
export async function salesByLink(
  db: Executor,
  organizationId: number,
  uuids: string[],
): Promise<Map<string, SalesFigures>> {
  const figures = new Map<string, SalesFigures>();
  if (uuids.length === 0) return figures;
  const rows = await db
    .selectFrom('payments')
    .select((eb) => [
      'payment_link_id',
      eb.fn.countAll<number | string>().as('paid'),
      eb.fn.sum<number | string | bigint>('gross').as('revenue'),
    ])
    .where('organization_id', '=', organizationId)
    .where('payment_link_id', 'in', uuids)
    .where('status', 'in', PAID_STATUSES)
    .groupBy('payment_link_id')
    .execute();
  for (const row of rows) {
    if (row.payment_link_id === null) continue;
    figures.set(row.payment_link_id, { paid: Number(row.paid), revenue: toBigInt(row.revenue) });
  }
  return figures;
}

export function paymentsOfLink(db: Executor, organizationId: number, uuid: string) {
  return db
    .selectFrom('payments')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('payment_link_id', '=', uuid)
    .orderBy('id', 'desc')
    .execute();
}
