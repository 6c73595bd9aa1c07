// Refunds: GET /api/refunds/ with the API's filters (status, search, date range, ordering, pages).
import type { FormEvent } from 'react';
import { asPage, type Page } from '../api.ts';
import { dateTime, dayBoundary, money } from '../format.ts';
import { useApi, useTitle } from '../hooks.ts';
import { Link, setQuery } from '../router.tsx';
import type { Refund } from '../types.ts';
import { Empty, ErrorNotice, Loading, PageHeader, Pagination, StatusBadge, TableScroll } from '../ui.tsx';
import { pageNumber } from './payments.tsx';

const REFUND_STATUSES = ['pending', 'processing', 'completed', 'failed', 'rejected'];
const ORDERINGS: [string, string][] = [
  ['-created_at', 'Newest first'],
  ['created_at', 'Oldest first'],
  ['-amount', 'Largest amount'],
  ['amount', 'Smallest amount'],
  ['status', 'Status'],
];
const FILTERS = ['search', 'status', 'from', 'to', 'ordering', 'environment'] as const;

export function RefundsTable({
  refunds,
  label,
  showPayment = true,
}: {
  refunds: Refund[];
  label: string;
  showPayment?: boolean;
}) {
  return (
    <TableScroll label={label}>
      <table>
        <caption className="visually-hidden">{label}</caption>
        <thead>
          <tr>
            <th scope="col">Refund</th>
            {showPayment ? <th scope="col">Payment</th> : null}
            <th scope="col" className="num">
              Amount
            </th>
            <th scope="col">Status</th>
            <th scope="col">Reason</th>
            <th scope="col">Created</th>
          </tr>
        </thead>
        <tbody>
          {refunds.map((refund) => (
            <tr key={refund.id}>
              <td className="mono">{refund.id}</td>
              {showPayment ? (
                <td>
                  <Link to={`payments/${refund.transaction_id}`} className="mono">
                    {refund.transaction_id}
                  </Link>
                </td>
              ) : null}
              <td className="num">
                {money(refund.amount, refund.currency)}
                {refund.amount_usd && refund.currency !== 'USD' ? (
                  <span className="muted small block">{money(refund.amount_usd, 'USD')} from wallet</span>
                ) : null}
              </td>
              <td>
                <StatusBadge status={refund.status} />
              </td>
              <td className="wrap">{refund.reason}</td>
              <td>{dateTime(refund.created_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroll>
  );
}

export function RefundsPage({ query }: { query: URLSearchParams }) {
  useTitle('Refunds');
  const page = pageNumber(query);
  const pageSize = 20;
  const filters = Object.fromEntries(FILTERS.map((name) => [name, query.get(name) ?? '']));
  const refunds = useApi<Page<Refund> | Refund[]>('/organization/refunds/', {
    page,
    page_size: pageSize,
    search: filters.search,
    status: filters.status,
    ordering: filters.ordering,
    environment: filters.environment,
    created_at__gte: dayBoundary(filters.from, false),
    created_at__lte: dayBoundary(filters.to, true),
  });
  const data = asPage(refunds.data);
  const filtered = FILTERS.some((name) => name !== 'ordering' && filters[name]);

  function apply(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const values: Record<string, string> = {};
    for (const name of FILTERS) values[name] = String(form.get(name) ?? '').trim();
    setQuery('refunds', values);
  }

  return (
    <>
      <PageHeader title="Refunds" />
      <p className="muted">To refund a payment, open it from the Payments page.</p>
      <form className="filters" onSubmit={apply} aria-label="Filter refunds" key={query.toString()}>
        <label className="field grow">
          <span>Search</span>
          <input
            name="search"
            type="search"
            defaultValue={filters.search}
            placeholder="Payment ID or reason"
          />
        </label>
        <label className="field">
          <span>Status</span>
          <select name="status" defaultValue={filters.status}>
            <option value="">Any</option>
            {REFUND_STATUSES.map((status) => (
              <option key={status} value={status}>
                {status}
              </option>
            ))}
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
          <span>Order</span>
          <select name="ordering" defaultValue={filters.ordering}>
            {ORDERINGS.map(([value, label]) => (
              <option key={value} value={value === '-created_at' ? '' : value}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <div className="filter-actions">
          <button type="submit" className="button">
            Apply
          </button>
          {filtered ? (
            <button type="button" className="button secondary" onClick={() => setQuery('refunds', {})}>
              Clear
            </button>
          ) : null}
        </div>
      </form>
      {refunds.error ? <ErrorNotice error={refunds.error} what="refunds" onRetry={refunds.reload} /> : null}
      {!data && refunds.loading ? <Loading label="Loading refunds…" /> : null}
      {data && data.results.length === 0 ? (
        <Empty>{filtered ? 'No refunds match these filters.' : 'No refunds yet.'}</Empty>
      ) : null}
      {data && data.results.length > 0 ? (
        <div aria-busy={refunds.loading}>
          <RefundsTable refunds={data.results} label="Refunds" />
          <Pagination
            page={page}
            pageSize={pageSize}
            count={data.count}
            onPage={(next) => setQuery('refunds', { ...filters, page: String(next) })}
          />
        </div>
      ) : null}
    </>
  );
}
