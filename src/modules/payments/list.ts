// GET /api/payments/: the dashboard's payment list, Django REST Framework style
// ({count, next, previous, results}; page from 1, page_size default 20, max 100).
import type { FastifyRequest } from 'fastify';
import { type ExpressionBuilder, sql } from 'kysely';
import type { AppContext } from '../../context.ts';
import type { Database, Executor } from '../../db/database.ts';
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
import type { Environment } from '../api-keys/table.ts';
import { presentDashboardPayment } from './present.ts';
import { reviewsOf } from './review.ts';
import * as store from './store.ts';
import { PAYMENT_STATUSES } from './table.ts';

const ORDERINGS = ['created_at', 'amount', 'status'] as const;
const COLUMNS = { created_at: 'created_at', amount: 'gross', status: 'status' } as const;

/** The list's filters and page, from the query string; a bad parameter is a 400 naming it. */
export function parseListQuery(query: Query) {
  const ordering = orderingParam(query, ORDERINGS, '-created_at');
  return {
    environment: choiceParam<Environment>(query, 'environment', ['production', 'sandbox']) ?? 'production',
    status: choiceParam(query, 'status', PAYMENT_STATUSES),
    currency: choiceParam(query, 'currency', ['USD', 'EUR']),
    createdFrom: isoParam(query, 'created_at__gte'),
    createdTo: isoParam(query, 'created_at__lte'),
    search: searchParam(query),
    orderColumn: COLUMNS[ordering.field],
    direction: ordering.direction,
    page: pageRequest(query),
  };
}

/**
 * What a payment search matches: the payment id (TX…), the checkout id (CO…) or the merchant's
 * client_reference_id in part, the customer's email in part, and the last four digits of a card tried on it.
 */
export function matchesSearch(text: string) {
  const pattern = containsPattern(text);
  return (eb: ExpressionBuilder<Database, 'payments'>) => {
    const clauses = [
      sql<boolean>`lower(payments.public_id) like ${pattern} escape '\\'`,
      sql<boolean>`lower(coalesce(payments.payer_email, '')) like ${pattern} escape '\\'`,
      eb.exists(
        eb
          .selectFrom('checkout_sessions')
          .select('checkout_sessions.id')
          .whereRef('checkout_sessions.id', '=', 'payments.checkout_session_id')
          .where((inner) =>
            inner.or([
              sql<boolean>`lower(checkout_sessions.public_id) like ${pattern} escape '\\'`,
              sql<boolean>`lower(coalesce(checkout_sessions.client_reference_id, '')) like ${pattern} escape '\\'`,
            ]),
          ),
      ),
    ];
    if (/^\d{4}$/.test(text)) {
      clauses.push(
        eb.exists(
          eb
            .selectFrom('deposit_attempts')
            .select('deposit_attempts.id')
            .whereRef('deposit_attempts.payment_id', '=', 'payments.id')
            .where('deposit_attempts.card_last4', '=', text),
        ),
      );
    }
    return eb.or(clauses);
  };
}

/** The organization's payments that match the list's filters (also what the CSV export streams). */
export function filteredPayments(db: Executor, organizationId: number, q: ReturnType<typeof parseListQuery>) {
  let base = db
    .selectFrom('payments')
    .where('organization_id', '=', organizationId)
    .where('environment', '=', q.environment);
  if (q.status) base = base.where('status', '=', q.status);
  if (q.currency) base = base.where('currency', '=', q.currency);
  if (q.createdFrom) base = base.where('created_at', '>=', q.createdFrom);
  if (q.createdTo) base = base.where('created_at', '<=', q.createdTo);
  if (q.search) base = base.where(matchesSearch(q.search));
  return base;
}

export async function listPayments(ctx: AppContext, organizationId: number, request: FastifyRequest) {
  const q = parseListQuery(queryOf(request));
  const base = filteredPayments(ctx.db, organizationId, q);
  const { count } = await base.select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirstOrThrow();
  const rows = await base
    .selectAll()
    .orderBy(q.orderColumn, q.direction)
    .orderBy('id', q.direction)
    .limit(q.page.pageSize)
    .offset(q.page.offset)
    .execute();
  // Throws DRF's 404 past the last page, before the attempts and checkouts are read.
  const page = paginated(request, q.page, Number(count), rows);
  const ids = rows.map((row) => row.id);
  const [attempts, checkouts, reviews] = await Promise.all([
    store.attemptsByPayment(ctx.db, ids),
    store.checkoutReferences(
      ctx.db,
      rows.map((row) => row.checkout_session_id),
    ),
    reviewsOf(ctx.db, rows),
  ]);
  return {
    ...page,
    results: rows.map((row) =>
      presentDashboardPayment(
        row,
        attempts.get(row.id) ?? [],
        checkouts.get(row.checkout_session_id),
        reviews.get(row.id) ?? null,
      ),
    ),
  };
}
