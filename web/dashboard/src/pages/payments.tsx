// Payments: GET /api/payments/ with search, filters and pages; the filters live in the URL.
import type { Page } from '../api.ts';
import { ExportLink } from '../export-link.tsx';
import {
  DateRangeFilter,
  FilterBar,
  listFilters,
  listQuery,
  PagedList,
  PageSizeFilter,
  SearchField,
  StatusFilter,
} from '../filters.tsx';
import { dateTime, money } from '../format.ts';
import { useApi, useTitle } from '../hooks.ts';
import { ProviderReviewMark } from '../provider-notices.tsx';
import { Link } from '../router.tsx';
import { useEnvironment } from '../test-mode.tsx';
import type { Payment } from '../types.ts';
import { CurrencyField, DataTable, PageHeader, StatusBadge } from '../ui.tsx';

const PAYMENT_STATUSES = [
  'paid',
  'processing',
  'pending',
  'failed',
  'canceled',
  'refund_pending',
  'refunded',
];
const FILTERS = ['search', 'status', 'currency', 'from', 'to', 'page_size'] as const;

export function PaymentsTable({
  payments,
  label,
  showCustomer = true,
}: {
  payments: Payment[];
  label: string;
  showCustomer?: boolean;
}) {
  return (
    <DataTable
      label={label}
      columns={['Payment', 'Amount', 'Status', showCustomer && 'Customer', 'Created']}
      numeric={['Amount']}
    >
      {payments.map((payment) => (
        <tr key={payment.id}>
          <td>
            <Link to={`payments/${payment.id}`} className="mono">
              {payment.id}
            </Link>
          </td>
          <td className="num">{money(payment.amount, payment.currency)}</td>
          <td>
            <StatusBadge status={payment.status} /> <ProviderReviewMark review={payment.provider_review} />
          </td>
          {showCustomer ? <td>{payment.payer_email ?? '—'}</td> : null}
          <td>{dateTime(payment.created_at)}</td>
        </tr>
      ))}
    </DataTable>
  );
}

export function PaymentsPage({ query }: { query: URLSearchParams }) {
  useTitle('Payments');
  const list = listFilters('payments', query, FILTERS, 'page_size');
  const { filters, filtered } = list;
  const pageSize = Number(filters.page_size) || 20;
  const environment = useEnvironment();
  const apiQuery = listQuery(list, pageSize);
  const payments = useApi<Page<Payment>>('/payments/', { ...apiQuery, environment });

  return (
    <>
      <PageHeader title="Payments">
        <ExportLink
          what="payments"
          query={apiQuery}
          label={filtered ? 'the payments shown' : 'all payments'}
        />
      </PageHeader>
      <FilterBar list={list} label="Filter payments" key={query.toString()}>
        <SearchField value={filters.search} placeholder="Payment or checkout ID, email, card last 4" />
        <StatusFilter
          value={filters.status}
          statuses={PAYMENT_STATUSES}
          label={(status) => status.replace('_', ' ')}
        />
        <CurrencyField value={filters.currency} any />
        <DateRangeFilter from={filters.from} to={filters.to} />
        <PageSizeFilter value={pageSize} />
      </FilterBar>
      <PagedList
        list={list}
        resource={payments}
        what="payments"
        pageSize={pageSize}
        empty={
          filtered
            ? 'No payments match these filters.'
            : 'No payments yet. Share a payment link or create a checkout with your API key to take the first one.'
        }
      >
        {(results) => <PaymentsTable payments={results} label="Payments" />}
      </PagedList>
    </>
  );
}
