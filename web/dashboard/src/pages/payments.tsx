// Payments: GET /api/payments/ with search, filters and pages; the filters live in the URL.
import type { FormEvent } from 'react';
import type { Page } from '../api.ts';
import { dateTime, dayBoundary, money } from '../format.ts';
import { useApi, useTitle } from '../hooks.ts';
import { Link, setQuery } from '../router.tsx';
import type { Payment } from '../types.ts';
import { Empty, ErrorNotice, Loading, PageHeader, Pagination, StatusBadge, TableScroll } from '../ui.tsx';

export const PAYMENT_STATUSES = [
  'paid',
  'processing',
  'pending',
  'failed',
  'canceled',
  'refund_pending',
  'refunded',
];
const FILTERS = ['search', 'status', 'currency', 'environment', 'from', 'to', 'page_size'] as const;

export function pageNumber(query: URLSearchParams, name = 'page'): number {
  const value = Number(query.get(name));
  return Number.isInteger(value) && value > 0 ? value : 1;
}

export function PaymentsPage({ query }: { query: URLSearchParams }) {
  useTitle('Payments');
  const page = pageNumber(query);
  const pageSize = Number(query.get('page_size')) || 20;
  const filters = Object.fromEntries(FILTERS.map((name) => [name, query.get(name) ?? '']));
  const payments = useApi<Page<Payment>>('/payments/', {
    page,
    page_size: pageSize,
    search: filters.search,
    status: filters.status,
    currency: filters.currency,
    environment: filters.environment,
    created_at__gte: dayBoundary(filters.from, false),
    created_at__lte: dayBoundary(filters.to, true),
  });

  function apply(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const values: Record<string, string> = {};
    for (const name of FILTERS) values[name] = String(form.get(name) ?? '').trim();
    setQuery('payments', values);
  }

  const filtered = FILTERS.some((name) => name !== 'page_size' && filters[name]);
  const data = payments.data;

  return (
    <>
      <PageHeader title="Payments" />
      <form className="filters" onSubmit={apply} aria-label="Filter payments" key={query.toString()}>
        <label className="field grow">
          <span>Search</span>
          <input
            name="search"
            type="search"
            defaultValue={filters.search}
            placeholder="Payment ID, email, product"
          />
        </label>
        <label className="field">
          <span>Status</span>
          <select name="status" defaultValue={filters.status}>
            <option value="">Any</option>
            {PAYMENT_STATUSES.map((status) => (
              <option key={status} value={status}>
                {status.replace('_', ' ')}
              </option>
            ))}
          </select>
        </label>
        <label className="field">
          <span>Currency</span>
          <select name="currency" defaultValue={filters.currency}>
            <option value="">Any</option>
            <option value="USD">USD</option>
            <option value="EUR">EUR</option>
          </select>
        </label>
        <label className="field">
          <span>Environment</span>
          <select name="environment" defaultValue={filters.environment}>
            <option value="">Production</option>
            <option value="sandbox">Sandbox</option>
          </select>
        </label>
        <label className="field">
          <span>From</span>
          <input name="from" type="date" defaultValue={filters.from} />
        </label>
        <label className="field">
          <span>To</span>
          <input name="to" type="date" defaultValue={filters.to} />
        </label>
        <label className="field">
          <span>Per page</span>
          <select name="page_size" defaultValue={String(pageSize)}>
            <option value="20">20</option>
            <option value="50">50</option>
            <option value="100">100</option>
          </select>
        </label>
        <div className="filter-actions">
          <button type="submit" className="button">
            Apply
          </button>
          {filtered ? (
            <button type="button" className="button secondary" onClick={() => setQuery('payments', {})}>
              Clear
            </button>
          ) : null}
        </div>
      </form>
      {payments.error ? (
        <ErrorNotice error={payments.error} what="payments" onRetry={payments.reload} />
      ) : null}
      {!data && payments.loading ? <Loading label="Loading payments…" /> : null}
      {data && data.results.length === 0 ? (
        <Empty>
          {filtered
            ? 'No payments match these filters.'
            : 'No payments yet. Share a payment link or create a checkout with your API key to take the first one.'}
        </Empty>
      ) : null}
      {data && data.results.length > 0 ? (
        <div aria-busy={payments.loading}>
          <TableScroll label="Payments">
            <table>
              <caption className="visually-hidden">Payments</caption>
              <thead>
                <tr>
                  <th scope="col">Payment</th>
                  <th scope="col" className="num">
                    Amount
                  </th>
                  <th scope="col">Status</th>
                  <th scope="col">Customer</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {data.results.map((payment) => (
                  <tr key={payment.id}>
                    <td>
                      <Link to={`payments/${payment.id}`} className="mono">
                        {payment.id}
                      </Link>
                    </td>
                    <td className="num">{money(payment.amount, payment.currency)}</td>
                    <td>
                      <StatusBadge status={payment.status} />
                    </td>
                    <td>{payment.payer_email ?? '—'}</td>
                    <td>{dateTime(payment.created_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableScroll>
          <Pagination
            page={page}
            pageSize={pageSize}
            count={data.count}
            onPage={(next) => setQuery('payments', { ...filters, page: String(next) })}
          />
        </div>
      ) : null}
    </>
  );
}
