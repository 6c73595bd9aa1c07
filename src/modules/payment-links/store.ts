// Payment-link queries. Dashboard lookups are scoped by organization; public lookups go by the UUID,
// which is the link's bearer capability.
import type { Insertable, Updateable } from 'kysely';
import type { Executor } from '../../db/database.ts';
import { toBigInt } from '../../lib/money.ts';
import type { PaymentStatus } from '../payments/table.ts';
import type { PaymentLinksTable } from './table.ts';

/** The payment statuses that count as a sale in the link's stats. */
export const PAID_STATUSES: readonly PaymentStatus[] = ['paid', 'refund_pending', 'refunded'];

export function insertLink(db: Executor, values: Insertable<PaymentLinksTable>) {
  return db.insertInto('payment_links').values(values).returningAll().executeTakeFirstOrThrow();
}

/** The organization's links, newest first; deleted links are left out. */
export function listLinks(db: Executor, organizationId: number) {
  return db
    .selectFrom('payment_links')
    .selectAll()
    .where('organization_id', '=', organizationId)
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

/**
 * Sets max_uses only if it is not below the uses already counted; checked in the UPDATE itself so a
 * concurrent start cannot slip between the check and the write. Returns the row, or undefined.
 */
export function updateLinkWithMaxUses(
  db: Executor,
  id: number,
  maxUses: number,
  changes: Updateable<PaymentLinksTable>,
) {
  return db
    .updateTable('payment_links')
    .set({ ...changes, max_uses: maxUses })
    .where('id', '=', id)
    .where('uses_count', '<=', maxUses)
    .returningAll()
    .executeTakeFirst();
}

export async function countView(db: Executor, id: number): Promise<void> {
  await db
    .updateTable('payment_links')
    .set((eb) => ({ views: eb('views', '+', 1) }))
    .where('id', '=', id)
    .execute();
}

/**
 * Consumes one use if, and only if, the link is still available at `now`: one conditional UPDATE, so
 * concurrent starts serialise on the row and max_uses is never exceeded. Returns whether it counted.
 */
export async function consumeUse(db: Executor, id: number, now: string): Promise<boolean> {
  const result = await db
    .updateTable('payment_links')
    .set((eb) => ({ uses_count: eb('uses_count', '+', 1) }))
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .where('is_active', '=', 1)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
    .where((eb) => eb.or([eb('max_uses', 'is', null), eb('uses_count', '<', eb.ref('max_uses'))]))
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
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
