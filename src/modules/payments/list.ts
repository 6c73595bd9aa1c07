// GET /api/payments/: the dashboard's payment list, Django REST Framework style
// ({count, next, previous, results}; page from 1, page_size default 20, max 100).
import { sql } from 'kysely';
import type { AppContext } from '../../context.ts';
import { NotFoundError, ValidationError } from '../../http/errors.ts';
import type { Environment } from '../api-keys/table.ts';
import { presentDashboardPayment } from './present.ts';
import * as store from './store.ts';
import type { PaymentStatus } from './table.ts';

const STATUSES: readonly PaymentStatus[] = [
  'processing',
  'pending',
  'paid',
  'failed',
  'canceled',
  'refund_pending',
  'refunded',
];
const ORDERINGS = { created_at: 'created_at', amount: 'gross', status: 'status' } as const;

export type ListQuery = Record<string, string | undefined>;

function positiveInteger(field: string, value: string | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  if (!/^\d{1,9}$/.test(value) || Number(value) < 1) {
    throw new ValidationError(`${field}: must be a positive integer.`);
  }
  return Number(value);
}

function oneOf<T extends string>(field: string, value: string | undefined, allowed: readonly T[]): T | null {
  if (value === undefined || value === '') return null;
  if (!(allowed as readonly string[]).includes(value)) {
    throw new ValidationError(`${field}: must be one of ${allowed.join(', ')}.`);
  }
  return value as T;
}

function dateTime(field: string, value: string | undefined): string | null {
  if (value === undefined || value === '') return null;
  const time = Date.parse(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(time)) {
    throw new ValidationError(`${field}: must be a valid ISO 8601 date-time.`);
  }
  return new Date(time).toISOString();
}

export function parseListQuery(query: ListQuery) {
  const pageSize = positiveInteger('page_size', query.page_size, 20);
  if (pageSize > 100) throw new ValidationError('page_size: must be at most 100.');
  const ordering = query.ordering ?? '-created_at';
  const column = ORDERINGS[ordering.replace(/^-/, '') as keyof typeof ORDERINGS];
  if (!column) {
    throw new ValidationError(
      `ordering: must be one of ${Object.keys(ORDERINGS)
        .flatMap((key) => [key, `-${key}`])
        .join(', ')}.`,
    );
  }
  const search = query.search?.trim() ?? '';
  if (search.length > 200) throw new ValidationError('search: must be at most 200 characters.');
  return {
    page: positiveInteger('page', query.page, 1),
    pageSize,
    environment:
      oneOf<Environment>('environment', query.environment, ['production', 'sandbox']) ?? 'production',
    status: oneOf('status', query.status, STATUSES),
    currency: oneOf('currency', query.currency, ['USD', 'EUR']),
    createdFrom: dateTime('created_at__gte', query.created_at__gte),
    createdTo: dateTime('created_at__lte', query.created_at__lte),
    search: search || null,
    orderColumn: column,
    descending: ordering.startsWith('-'),
  };
}

function pageUrl(ctx: AppContext, query: ListQuery, page: number | null): string | null {
  if (page === null) return null;
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query))
    if (value !== undefined && key !== 'page') params.set(key, value);
  if (page > 1) params.set('page', String(page));
  const text = params.toString();
  return `${ctx.config.publicUrl}/api/payments/${text ? `?${text}` : ''}`;
}

export async function listPayments(ctx: AppContext, organizationId: number, query: ListQuery) {
  const q = parseListQuery(query);
  let base = ctx.db
    .selectFrom('payments')
    .where('organization_id', '=', organizationId)
    .where('environment', '=', q.environment);
  if (q.status) base = base.where('status', '=', q.status);
  if (q.currency) base = base.where('currency', '=', q.currency);
  if (q.createdFrom) base = base.where('created_at', '>=', q.createdFrom);
  if (q.createdTo) base = base.where('created_at', '<=', q.createdTo);
  if (q.search) {
    const pattern = `%${q.search.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    base = base.where((eb) =>
      eb.or([
        sql<boolean>`lower(public_id) like ${pattern} escape '\\'`,
        sql<boolean>`lower(coalesce(payer_email, '')) like ${pattern} escape '\\'`,
      ]),
    );
  }
  const { count } = await base.select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirstOrThrow();
  const total = Number(count);
  const offset = (q.page - 1) * q.pageSize;
  if (q.page > 1 && offset >= total) throw new NotFoundError('Invalid page.');
  const direction = q.descending ? 'desc' : 'asc';
  const rows = await base
    .selectAll()
    .orderBy(q.orderColumn, direction)
    .orderBy('id', direction)
    .limit(q.pageSize)
    .offset(offset)
    .execute();
  const ids = rows.map((row) => row.id);
  const [attempts, checkouts] = await Promise.all([
    store.attemptsByPayment(ctx.db, ids),
    store.checkoutPublicIds(
      ctx.db,
      rows.map((row) => row.checkout_session_id),
    ),
  ]);
  return {
    count: total,
    next: pageUrl(ctx, query, offset + q.pageSize < total ? q.page + 1 : null),
    previous: pageUrl(ctx, query, q.page > 1 ? q.page - 1 : null),
    results: rows.map((row) =>
      presentDashboardPayment(row, attempts.get(row.id) ?? [], checkouts.get(row.checkout_session_id) ?? ''),
    ),
  };
}
