// Refunds: GET /api/refunds/ with the API's filters (status, search, date range, ordering, pages).
import type { Page } from '../api.ts';
import { ExportLink } from '../export-link.tsx';
import {
  DateRangeFilter,
  FilterBar,
  listFilters,
  listQuery,
  PagedList,
  SearchField,
  StatusFilter,
} from '../filters.tsx';
import { dateTime, money } from '../format.ts';
import { useApi, useTitle } from '../hooks.ts';
import { Link } from '../router.tsx';
import { useEnvironment } from '../test-mode.tsx';
import type { Refund } from '../types.ts';
import { type Choice, DataTable, PageHeader, SelectField, StatusBadge } from '../ui.tsx';

const REFUND_STATUSES = ['pending', 'processing', 'completed', 'failed', 'rejected'];
/** The API's default order (newest first) is sent as no ordering at all. */
const ORDERINGS: Choice[] = [
  ['', 'Newest first'],
  ['created_at', 'Oldest first'],
  ['-amount', 'Largest amount'],
  ['amount', 'Smallest amount'],
  ['status', 'Status'],
];
const FILTERS = ['search', 'status', 'from', 'to', 'ordering'] as const;
const PAGE_SIZE = 20;

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
    <DataTable
      label={label}
      columns={['Refund', showPayment && 'Payment', 'Amount', 'Status', 'Reason', 'Created']}
      numeric={['Amount']}
    >
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
    </DataTable>
  );
}

export function RefundsPage({ query }: { query: URLSearchParams }) {
  useTitle('Refunds');
  const list = listFilters('refunds', query, FILTERS, 'ordering');
  const { filters, filtered } = list;
  const environment = useEnvironment();
  const apiQuery = listQuery(list, PAGE_SIZE);
  const refunds = useApi<Page<Refund> | Refund[]>('/organization/refunds/', { ...apiQuery, environment });

  return (
    <>
      <PageHeader title="Refunds">
        <ExportLink what="refunds" query={apiQuery} label={filtered ? 'the refunds shown' : 'all refunds'} />
      </PageHeader>
      <p className="muted">To refund a payment, open it from the Payments page.</p>
      <FilterBar list={list} label="Filter refunds" key={query.toString()}>
        <SearchField value={filters.search} placeholder="Refund or payment ID, reason" />
        <StatusFilter value={filters.status} statuses={REFUND_STATUSES} />
        <DateRangeFilter from={filters.from} to={filters.to} />
        <SelectField label="Order" name="ordering" value={filters.ordering} choices={ORDERINGS} />
      </FilterBar>
      <PagedList
        list={list}
        resource={refunds}
        what="refunds"
        pageSize={PAGE_SIZE}
        empty={filtered ? 'No refunds match these filters.' : 'No refunds yet.'}
      >
        {(results) => <RefundsTable refunds={results} label="Refunds" />}
      </PagedList>
    </>
  );
}
