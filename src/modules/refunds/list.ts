// GET /refunds/: filters, search, ordering and pages over one organization's refunds of one environment.
import type { FastifyRequest } from 'fastify';
import { sql } from 'kysely';
import type { Executor } from '../../db/database.ts';
import {
  choiceParam,
  containsPattern,
  isoParam,
  orderingParam,
  pageRequest,
  paginated,
  type Query,
  queryOf,
  searchParam,
} from '../../http/pagination.ts';
import { formatAmount, toBigInt } from '../../lib/money.ts';
import * as store from './store.ts';
import type { RefundStatus } from './table.ts';

const STATUSES: readonly RefundStatus[] = ['pending', 'processing', 'completed', 'failed', 'rejected'];
const ORDERING = ['created_at', 'amount', 'status'] as const;

/** The Refund object of the interface. */
export function presentRefund(refund: store.RefundWithPayment) {
  return {
    id: refund.public_id,
    transaction_id: refund.payment_public_id,
    amount: formatAmount(toBigInt(refund.amount)),
    currency: refund.currency,
    amount_in_cents: Number(refund.amount_in_cents),
    amount_usd: formatAmount(toBigInt(refund.amount_usd)),
    reason: refund.reason,
    status: refund.status,
    created_at: refund.created_at,
    updated_at: refund.updated_at,
  };
}

/** The list's filters, from the query string; a bad parameter is a 400 naming it. */
export function parseRefundFilters(query: Query) {
  return {
    status: choiceParam(query, 'status', STATUSES),
    createdFrom: isoParam(query, 'created_at__gte'),
    createdTo: isoParam(query, 'created_at__lte'),
    search: searchParam(query),
  };
}

/** The scope's refunds that match the filters (also what the CSV export streams). */
export function filteredRefunds(
  db: Executor,
  scope: store.Scope,
  filters: Partial<ReturnType<typeof parseRefundFilters>>,
) {
  const { status, createdFrom, createdTo, search } = filters;
  let filtered = store.selectRefunds(db).where('refunds.organization_id', '=', scope.organizationId);
  if (scope.environment) filtered = filtered.where('refunds.environment', '=', scope.environment);
  if (status) filtered = filtered.where('refunds.status', '=', status);
  if (createdFrom) filtered = filtered.where('refunds.created_at', '>=', createdFrom);
  if (createdTo) filtered = filtered.where('refunds.created_at', '<=', createdTo);
  if (search) {
    const pattern = containsPattern(search);
    filtered = filtered.where((eb) =>
      eb.or([
        eb(sql`lower(payments.public_id)`, 'like', sql`${pattern} escape '\\'`),
        eb(sql`lower(refunds.public_id)`, 'like', sql`${pattern} escape '\\'`),
        eb(sql`lower(refunds.reason)`, 'like', sql`${pattern} escape '\\'`),
      ]),
    );
  }
  return filtered;
}

export async function listRefunds(db: Executor, scope: store.Scope, request: FastifyRequest) {
  const query = queryOf(request);
  const filters = parseRefundFilters(query);
  const ordering = orderingParam(query, ORDERING, '-created_at');
  const page = pageRequest(query);
  const filtered = filteredRefunds(db, scope, filters);
  const counted = await filtered
    .clearSelect()
    .select((eb) => eb.fn.countAll<number | string>().as('count'))
    .executeTakeFirstOrThrow();
  const rows = await filtered
    .orderBy(`refunds.${ordering.field}`, ordering.direction)
    .orderBy('refunds.id', ordering.direction)
    .limit(page.pageSize)
    .offset(page.offset)
    .execute();
  return paginated(request, page, Number(counted.count), rows.map(presentRefund));
}
