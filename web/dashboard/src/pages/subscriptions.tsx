// Subscriptions: plans (GET/POST /api/subscriptions/plans/, PATCH …/{id}/) with their signup link,
// the subscriptions list (GET /api/subscriptions/ with status and search), and one subscription with its
// cycles and the two ways to cancel it (POST /api/subscriptions/{id}/cancel/).
import { type FormEvent, useState } from 'react';
import { api, asPage, type Page } from '../api.ts';
import { FilterBar, listFilters, listQuery, PagedList, SearchField, StatusFilter } from '../filters.tsx';
import { dateTime, money } from '../format.ts';
import { useAction, useApi, useTitle } from '../hooks.ts';
import { Link } from '../router.tsx';
import { useEnvironment } from '../test-mode.tsx';
import type { Plan, Subscription } from '../types.ts';
import {
  ActiveToggle,
  ConfirmButton,
  CopyButton,
  CurrencyField,
  DataTable,
  Detail,
  Dialog,
  Empty,
  FormError,
  FormFooter,
  PageHeader,
  ResourceState,
  SelectField,
  StatusBadge,
  Success,
} from '../ui.tsx';
import { QrCode } from './qr-code.tsx';

const PRICE = '^\\d+(\\.\\d{1,2})?$';
const INTERVALS: [string, string][] = [
  ['month', 'Month'],
  ['year', 'Year'],
  ['week', 'Week'],
  ['day', 'Day'],
];
const STATUSES = ['trialing', 'active', 'past_due', 'canceled'];
const FILTERS = ['search', 'status'] as const;
const PAGE_SIZE = 20;

/** "19.99 USD every month", "100.00 EUR every 3 months". */
export function price(plan: Pick<Plan, 'amount' | 'currency' | 'interval' | 'interval_count'>): string {
  const every = plan.interval_count === 1 ? plan.interval : `${plan.interval_count} ${plan.interval}s`;
  return `${money(plan.amount, plan.currency)} every ${every}`;
}

function SignupLink({ plan }: { plan: Plan }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <CopyButton text={plan.signup_url} label="Copy signup link" />
      <button type="button" className="button secondary small" onClick={() => setOpen(true)}>
        QR code<span className="visually-hidden"> for {plan.name}</span>
      </button>
      <Dialog open={open} title={`Signup link of ${plan.name}`} onClose={() => setOpen(false)}>
        <div className="stack">
          <QrCode text={plan.signup_url} label={`QR code of the signup link of ${plan.name}`} />
          <p className="mono small wrap">{plan.signup_url}</p>
        </div>
      </Dialog>
    </>
  );
}

function PlanRow({ plan, onChanged }: { plan: Plan; onChanged: () => void }) {
  const toggle = useAction(() =>
    api.patch<Plan>(`/subscriptions/plans/${plan.id}/`, { is_active: !plan.is_active }),
  );
  return (
    <tr>
      <td>
        <strong>{plan.name}</strong>
        <span className="muted mono small block">{plan.id}</span>
      </td>
      <td>
        {price(plan)}
        {plan.trial_days > 0 ? <span className="muted small block">{plan.trial_days}-day trial</span> : null}
      </td>
      <td className="num">{plan.stats.active_subscriptions}</td>
      <td className="num">{money(plan.stats.mrr, plan.currency)}</td>
      <td>
        <StatusBadge status={plan.is_active ? 'active' : 'inactive'} />
      </td>
      <td>
        <div className="actions">
          <SignupLink plan={plan} />
          <ActiveToggle active={plan.is_active} toggle={toggle} onChanged={onChanged} name={plan.name} />
          <FormError message={toggle.error} inline />
        </div>
      </td>
    </tr>
  );
}

export function PlansPage() {
  useTitle('Plans');
  const environment = useEnvironment();
  const plans = useApi<Plan[] | Page<Plan>>('/subscriptions/plans/', { environment });
  const create = useAction((body: Record<string, unknown>) => api.post<Plan>('/subscriptions/plans/', body));
  const [created, setCreated] = useState<Plan | null>(null);
  const list = asPage(plans.data)?.results;

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const formElement = event.currentTarget;
    const form = new FormData(formElement);
    const plan = await create.run({
      name: String(form.get('name') ?? '').trim(),
      amount: String(form.get('amount') ?? '').trim(),
      currency: String(form.get('currency') ?? 'USD'),
      interval: String(form.get('interval') ?? 'month'),
      interval_count: Number(form.get('interval_count') || 1),
      trial_days: Number(form.get('trial_days') || 0),
      environment,
    });
    if (plan) {
      formElement.reset();
      setCreated(plan);
      plans.reload();
    }
  }

  return (
    <>
      <PageHeader title="Plans">
        <Link to="subscriptions" className="button secondary">
          Subscriptions
        </Link>
      </PageHeader>
      <section className="card" aria-labelledby="new-plan-heading">
        <h2 id="new-plan-heading">New plan</h2>
        {created ? (
          <Success>
            Plan {created.name} was created. Customers sign up at{' '}
            <span className="mono">{created.signup_url}</span>
          </Success>
        ) : null}
        <form className="stack" onSubmit={submit}>
          <label className="field">
            <span>Name</span>
            <input name="name" required maxLength={200} />
          </label>
          <div className="row">
            <label className="field">
              <span>Price per period</span>
              <input
                name="amount"
                required
                inputMode="decimal"
                pattern={PRICE}
                title="An amount like 25 or 25.00"
              />
            </label>
            <CurrencyField value="USD" />
          </div>
          <div className="row">
            <label className="field">
              <span>Every</span>
              <input name="interval_count" type="number" min={1} max={12} defaultValue={1} required />
            </label>
            <SelectField label="Period" name="interval" value="month" choices={INTERVALS} />
            <label className="field">
              <span>Trial days</span>
              <input name="trial_days" type="number" min={0} max={90} defaultValue={0} required />
            </label>
          </div>
          <p className="muted small">
            The price, currency and period never change; a new price is a new plan.
          </p>
          <FormFooter state={create} label="Create plan" pendingLabel="Creating…" />
        </form>
      </section>
      <section aria-labelledby="plans-heading">
        <h2 id="plans-heading">Plans</h2>
        <ResourceState resource={plans} what="plans" />
        {list && list.length === 0 ? <Empty>No plans yet. Create the first one above.</Empty> : null}
        {list && list.length > 0 ? (
          <DataTable
            label="Plans"
            columns={['Plan', 'Price', 'Subscriptions', 'MRR', 'Status', 'Actions']}
            numeric={['Subscriptions', 'MRR']}
          >
            {list.map((plan) => (
              <PlanRow key={plan.id} plan={plan} onChanged={plans.reload} />
            ))}
          </DataTable>
        ) : null}
      </section>
    </>
  );
}

export function SubscriptionsPage({ query }: { query: URLSearchParams }) {
  useTitle('Subscriptions');
  const list = listFilters('subscriptions', query, FILTERS);
  const { filters, filtered } = list;
  const environment = useEnvironment();
  const subscriptions = useApi<Page<Subscription> | Subscription[]>('/subscriptions/', {
    ...listQuery(list, PAGE_SIZE),
    environment,
  });
  return (
    <>
      <PageHeader title="Subscriptions">
        <Link to="plans" className="button secondary">
          Plans
        </Link>
      </PageHeader>
      <FilterBar list={list} label="Filter subscriptions" key={query.toString()}>
        <SearchField value={filters.search} placeholder="Customer email or name" />
        <StatusFilter value={filters.status} statuses={STATUSES} />
      </FilterBar>
      <PagedList
        list={list}
        resource={subscriptions}
        what="subscriptions"
        pageSize={PAGE_SIZE}
        empty={
          filtered
            ? 'No subscriptions match these filters.'
            : environment === 'production'
              ? 'No subscriptions yet. Subscriptions to sandbox plans are listed in test mode.'
              : 'No subscriptions yet.'
        }
      >
        {(results) => (
          <DataTable
            label="Subscriptions"
            columns={['Subscription', 'Customer', 'Plan', 'Status', 'Current period ends', 'Created']}
          >
            {results.map((subscription) => (
              <tr key={subscription.id}>
                <td>
                  <Link to={`subscriptions/${subscription.id}`} className="mono">
                    {subscription.id}
                  </Link>
                </td>
                <td>
                  {subscription.customer_name ?? subscription.customer_email}
                  {subscription.customer_name ? (
                    <span className="muted small block">{subscription.customer_email}</span>
                  ) : null}
                </td>
                <td>{subscription.plan.name}</td>
                <td>
                  <StatusBadge status={subscription.status} />
                  {subscription.cancel_at_period_end ? (
                    <span className="muted small block">Cancels at period end</span>
                  ) : null}
                </td>
                <td>{dateTime(subscription.current_period_end)}</td>
                <td>{dateTime(subscription.created_at)}</td>
              </tr>
            ))}
          </DataTable>
        )}
      </PagedList>
    </>
  );
}

/** A page where the customer gives a new card (single use, 7 days): made on demand, shown once. */
function UpdateCardLink({ id }: { id: string }) {
  const make = useAction(() =>
    api.post<{ url: string; expires_at: string }>(
      `/subscriptions/${encodeURIComponent(id)}/update-card-link/`,
    ),
  );
  const [link, setLink] = useState<{ url: string; expires_at: string } | null>(null);
  return (
    <div className="stack">
      <p className="muted small">
        Send the customer a page where they give a new card. It replaces the saved card and, if a payment is
        overdue, retries it at once.
      </p>
      {link ? (
        <Success>
          <span className="mono small wrap">{link.url}</span> (works once, until {dateTime(link.expires_at)}){' '}
          <CopyButton text={link.url} label="Copy update-card link" />
        </Success>
      ) : null}
      <FormError message={make.error} />
      <div className="actions">
        <button
          type="button"
          className="button secondary small"
          disabled={make.pending}
          onClick={async () => setLink((await make.run()) ?? null)}
        >
          {make.pending ? 'Creating…' : 'Create update-card link'}
        </button>
      </div>
    </div>
  );
}

/** Sandbox only: moves the subscription's test clock forward and runs every renewal that falls due. */
function TestClock({ data, onMoved }: { data: Subscription; onMoved: () => void }) {
  const advance = useAction((days: number) =>
    api.post<Subscription>(`/subscriptions/${encodeURIComponent(data.id)}/advance-clock/`, { days }),
  );
  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const days = Number(new FormData(event.currentTarget).get('days') || 0);
    if (await advance.run(days)) onMoved();
  }
  return (
    <section className="card" aria-labelledby="clock-heading">
      <h2 id="clock-heading">Test clock</h2>
      <p className="muted small">
        {data.test_clock_at
          ? `This subscription's time is ${dateTime(data.test_clock_at)}.`
          : 'This subscription runs on real time until you advance its clock.'}{' '}
        Advancing runs every renewal and retry that falls due on the way, at once.
      </p>
      <form className="row" onSubmit={submit}>
        <label className="field">
          <span>Days</span>
          <input name="days" type="number" min={1} max={400} defaultValue={30} required />
        </label>
        <FormFooter state={advance} label="Advance clock" pendingLabel="Advancing…" />
      </form>
    </section>
  );
}

export function SubscriptionDetailPage({ id }: { id: string }) {
  useTitle('Subscription');
  const subscription = useApi<Subscription>(`/subscriptions/${encodeURIComponent(id)}/`);
  const data = subscription.data;
  const cancel = (atPeriodEnd: boolean) => async () => {
    await api.post(`/subscriptions/${encodeURIComponent(id)}/cancel/`, { at_period_end: atPeriodEnd });
    subscription.reload();
  };
  return (
    <>
      <PageHeader title={`Subscription ${id}`}>
        <Link to="subscriptions" className="button secondary">
          All subscriptions
        </Link>
      </PageHeader>
      <ResourceState resource={subscription} what="the subscription" />
      {data ? (
        <>
          <section className="card" aria-labelledby="subscription-heading">
            <h2 id="subscription-heading">Details</h2>
            <Detail
              items={[
                ['Status', <StatusBadge key="status" status={data.status} />],
                ['Plan', data.plan.name],
                ['Customer', `${data.customer_name ?? ''} ${data.customer_email}`.trim()],
                [
                  'Card',
                  `${data.card.brand} •••• ${data.card.last4}, expires ${data.card.exp_month}/${data.card.exp_year}`,
                ],
                [
                  'Current period',
                  `${dateTime(data.current_period_start)} – ${dateTime(data.current_period_end)}`,
                ],
                ['Trial ends', data.trial_end ? dateTime(data.trial_end) : '—'],
                [
                  'Cancellation',
                  data.canceled_at
                    ? `Canceled ${dateTime(data.canceled_at)} (${data.cancel_reason === 'payment_failed' ? 'payment failed' : 'by the merchant'})`
                    : data.cancel_at_period_end
                      ? 'Cancels at the end of the current period'
                      : '—',
                ],
                ['Environment', data.environment === 'sandbox' ? 'Test mode (sandbox)' : 'Production'],
              ]}
            />
            {data.status !== 'canceled' ? (
              <div className="actions">
                {!data.cancel_at_period_end ? (
                  <ConfirmButton
                    label="Cancel at period end"
                    className="button secondary small"
                    title="Cancel at the end of the period?"
                    message={
                      <p>
                        The customer keeps the subscription until {dateTime(data.current_period_end)} and is
                        not charged again.
                      </p>
                    }
                    confirmLabel="Cancel at period end"
                    onConfirm={cancel(true)}
                  />
                ) : null}
                <ConfirmButton
                  label="Cancel now"
                  title="Cancel the subscription now?"
                  message={<p>It ends at once; unpaid periods are never charged.</p>}
                  confirmLabel="Cancel now"
                  onConfirm={cancel(false)}
                />
              </div>
            ) : null}
            {data.status !== 'canceled' ? <UpdateCardLink id={data.id} /> : null}
          </section>
          {data.environment === 'sandbox' && data.status !== 'canceled' ? (
            <TestClock data={data} onMoved={subscription.reload} />
          ) : null}
          <section aria-labelledby="cycles-heading">
            <h2 id="cycles-heading">Periods</h2>
            {data.cycles && data.cycles.length > 0 ? (
              <DataTable
                label="Periods"
                columns={['Period', 'From', 'To', 'Amount', 'Status', 'Tries', 'Payment']}
                numeric={['Amount', 'Tries']}
              >
                {data.cycles.map((cycle) => (
                  <tr key={cycle.period_index}>
                    <td>{cycle.period_index + 1}</td>
                    <td>{dateTime(cycle.period_start)}</td>
                    <td>{dateTime(cycle.period_end)}</td>
                    <td className="num">{money(cycle.amount, cycle.currency)}</td>
                    <td>
                      <StatusBadge status={cycle.status} />
                    </td>
                    <td className="num">{cycle.attempts}</td>
                    <td>
                      {cycle.transaction_id ? (
                        <Link to={`payments/${cycle.transaction_id}`} className="mono">
                          {cycle.transaction_id}
                        </Link>
                      ) : (
                        '—'
                      )}
                    </td>
                  </tr>
                ))}
              </DataTable>
            ) : (
              <Empty>No period billed yet.</Empty>
            )}
          </section>
        </>
      ) : null}
    </>
  );
}
