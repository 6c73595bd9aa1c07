// Overview: the dashboard snapshot (wallet buckets, counts, recent wallet activity) and a chart of
// paid volume per day over the last 30 days.
import { useEffect, useState } from 'react';
import { api, asPage, type Page } from '../api.ts';
import { type DayTotal, VolumeChart } from '../chart.tsx';
import { addDays, dateTime, dayBoundary, dayOf, money, titleCase } from '../format.ts';
import { useApi, useTitle } from '../hooks.ts';
import { Link } from '../router.tsx';
import { useEnvironment } from '../test-mode.tsx';
import type { DashboardSnapshot, Environment, Payment, Plan, WalletMovement } from '../types.ts';
import { DataTable, Empty, ErrorNotice, Loading, PageHeader, ResourceState, Stat } from '../ui.tsx';

const CHART_DAYS = 30;
const MAX_PAGES = 10;
const PAID = new Set(['paid', 'refund_pending', 'refunded']);

interface Volume {
  byCurrency: Map<string, DayTotal[]>;
  truncated: boolean;
}

/** Paid volume per day (in the organization's zone) and currency, from the last CHART_DAYS days' payments. */
function usePaidVolume(environment: Environment): { volume: Volume | undefined; error: unknown } {
  const [volume, setVolume] = useState<Volume>();
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    const controller = new AbortController();
    const firstDay = addDays(dayOf(new Date()), -(CHART_DAYS - 1));
    setVolume(undefined);
    setError(undefined);
    (async () => {
      const payments: Payment[] = [];
      let truncated = false;
      for (let page = 1; page <= MAX_PAGES; page += 1) {
        const data = await api.get<Page<Payment>>(
          '/payments/',
          { page, page_size: 100, created_at__gte: dayBoundary(firstDay, false), environment },
          controller.signal,
        );
        payments.push(...data.results);
        if (!data.next) break;
        if (page === MAX_PAGES) truncated = true;
      }
      const byCurrency = new Map<string, DayTotal[]>();
      for (const payment of payments) {
        if (!PAID.has(payment.status)) continue;
        let days = byCurrency.get(payment.currency);
        if (!days) {
          days = Array.from({ length: CHART_DAYS }, (_, index) => ({
            day: addDays(firstDay, index),
            amount: 0,
            count: 0,
          }));
          byCurrency.set(payment.currency, days);
        }
        const day = days.find((entry) => entry.day === dayOf(payment.created_at));
        if (day) {
          day.amount += Number(payment.amount);
          day.count += 1;
        }
      }
      setVolume({ byCurrency, truncated });
    })().catch((caught: unknown) => {
      if (!controller.signal.aborted) setError(caught);
    });
    return () => controller.abort();
  }, [environment]);
  return { volume, error };
}

function PaidVolume() {
  const { volume, error } = usePaidVolume(useEnvironment());
  const [chosen, setChosen] = useState<string>();
  if (error) return <ErrorNotice error={error} what="the paid volume" />;
  if (!volume) return <Loading label="Loading paid volume…" />;
  const currencies = [...volume.byCurrency.keys()].sort();
  if (currencies.length === 0) {
    return <Empty>No paid payments in the last {CHART_DAYS} days. Paid volume will appear here.</Empty>;
  }
  const currency = chosen && currencies.includes(chosen) ? chosen : currencies[0];
  const days = volume.byCurrency.get(currency) ?? [];
  return (
    <>
      {currencies.length > 1 ? (
        <fieldset className="segmented">
          <legend className="visually-hidden">Currency</legend>
          {currencies.map((code) => (
            <label key={code}>
              <input
                type="radio"
                name="chart-currency"
                value={code}
                checked={code === currency}
                onChange={() => setChosen(code)}
              />
              <span>{code}</span>
            </label>
          ))}
        </fieldset>
      ) : null}
      <VolumeChart
        days={days}
        currency={currency}
        label={`Paid volume in ${currency}, last ${CHART_DAYS} days`}
      />
      {volume.truncated ? <p className="muted">Based on the latest {MAX_PAGES * 100} payments.</p> : null}
    </>
  );
}

function referenceLink(reference: string) {
  if (reference.startsWith('TX')) return <Link to={`payments/${reference}`}>{reference}</Link>;
  if (reference.startsWith('RF'))
    return <Link to={`refunds?search=${encodeURIComponent(reference)}`}>{reference}</Link>;
  if (reference.startsWith('PO')) return <Link to="payouts">{reference}</Link>;
  return reference;
}

export function ActivityTable({ entries, label }: { entries: WalletMovement[]; label: string }) {
  if (entries.length === 0)
    return <Empty>No wallet activity yet. Settled payments, refunds and payouts appear here.</Empty>;
  return (
    <DataTable
      label={label}
      columns={['Movement', 'Reference', 'Amount', 'Balance', 'Reserve', 'Held', 'Date']}
      numeric={['Amount', 'Balance', 'Reserve', 'Held']}
    >
      {entries.map((entry) => (
        <tr key={entry.id}>
          <td>{titleCase(entry.type)}</td>
          <td>{referenceLink(entry.reference)}</td>
          <td className="num">{money(entry.amount, 'USD')}</td>
          <td className="num">{signed(entry.balance_change)}</td>
          <td className="num">{signed(entry.reserve_change)}</td>
          <td className="num">{signed(entry.held_change)}</td>
          <td>{dateTime(entry.created_at)}</td>
        </tr>
      ))}
    </DataTable>
  );
}

function signed(change: string): string {
  const value = Number(change);
  if (!value) return '—';
  return `${value > 0 ? '+' : '−'}${money(Math.abs(value), 'USD')}`;
}

export function WalletCards({
  wallet,
}: {
  wallet: { balance: string; reserve: string; held: string; available: string; currency?: string };
}) {
  const currency = wallet.currency ?? 'USD';
  return (
    <ul className="cards" aria-label="Wallet">
      <Stat label="Available" value={money(wallet.available, currency)} note="balance + reserve − held" />
      <Stat label="Balance" value={money(wallet.balance, currency)} />
      <Stat label="Rolling reserve" value={money(wallet.reserve, currency)} />
      <Stat label="Held" value={money(wallet.held, currency)} note="refunds and payouts in progress" />
    </ul>
  );
}

function paidVolumeOf(stats: DashboardSnapshot['stats']): Record<string, string> {
  const volume = (stats as Record<string, unknown> | undefined)?.paid_volume;
  if (!volume || typeof volume !== 'object') return {};
  return Object.fromEntries(
    Object.entries(volume as Record<string, unknown>).filter(
      (entry): entry is [string, string] => typeof entry[1] === 'string',
    ),
  );
}

/** The snapshot's counts, in the dashboard's words ("Users" read as customers). */
const STAT_LABELS: Record<string, string> = {
  user_count: 'Team members',
  transaction_count: 'Payments',
  paid_transaction_count: 'Paid payments',
};

/** Monthly recurring revenue and subscriptions, summed over the plans (none shown without access). */
function SubscriptionFigures({ environment }: { environment: string }) {
  const plans = useApi<Plan[] | Page<Plan>>('/subscriptions/plans/', { environment });
  const list = asPage(plans.data)?.results ?? [];
  if (list.length === 0) return null;
  const mrr = new Map<string, bigint>();
  let active = 0;
  for (const plan of list) {
    // Minor units, summed exactly (the amounts are decimal strings with two places).
    const [units, cents = '0'] = plan.stats.mrr.split('.');
    const minor = BigInt(units) * 100n + BigInt(cents.padEnd(2, '0').slice(0, 2));
    mrr.set(plan.currency, (mrr.get(plan.currency) ?? 0n) + minor);
    active += plan.stats.active_subscriptions;
  }
  return (
    <section aria-labelledby="subscriptions-heading">
      <h2 id="subscriptions-heading">Subscriptions</h2>
      <ul className="cards" aria-label="Subscriptions">
        {[...mrr].map(([currency, cents]) => (
          <Stat
            key={currency}
            label={`MRR (${currency})`}
            value={money(`${cents / 100n}.${String(cents % 100n).padStart(2, '0')}`, currency)}
          />
        ))}
        <Stat label="Active subscriptions" value={String(active)} />
      </ul>
    </section>
  );
}

export function OverviewPage() {
  useTitle('Overview');
  const environment = useEnvironment();
  const snapshot = useApi<DashboardSnapshot>('/organization/dashboard/', { environment });
  const data = snapshot.data;
  const stats = Object.entries(data?.stats ?? {}).filter(([, value]) => typeof value !== 'object');
  const paidVolume = Object.entries(paidVolumeOf(data?.stats)).filter(([, amount]) => Number(amount) > 0);

  return (
    <>
      <PageHeader title="Overview">
        <button type="button" className="button secondary small" onClick={snapshot.reload}>
          Refresh
        </button>
      </PageHeader>
      <ResourceState resource={snapshot} what="the dashboard" loading="Loading…" />
      {data ? (
        <>
          {/* null: this role may not read the wallet, so the section is left out. */}
          {data.wallet === null ? null : (
            <section aria-labelledby="wallet-heading">
              <h2 id="wallet-heading">Wallet (USD)</h2>
              {data.wallet ? <WalletCards wallet={data.wallet} /> : <Empty>No wallet yet.</Empty>}
            </section>
          )}
          {stats.length > 0 ? (
            <section aria-labelledby="stats-heading">
              <h2 id="stats-heading">At a glance</h2>
              <ul className="cards" aria-label="Statistics">
                {paidVolume.map(([currency, amount]) => (
                  <Stat
                    key={`volume-${currency}`}
                    label={`Paid volume (${currency})`}
                    value={money(amount, currency)}
                  />
                ))}
                {stats.map(([name, value]) => (
                  <Stat
                    key={name}
                    label={STAT_LABELS[name] ?? titleCase(name.replace(/_count$/, 's'))}
                    value={String(value)}
                  />
                ))}
              </ul>
            </section>
          ) : null}
        </>
      ) : null}
      <SubscriptionFigures environment={environment} />
      <section aria-labelledby="volume-heading">
        <h2 id="volume-heading">Paid volume</h2>
        <PaidVolume />
      </section>
      {data && data.recent_activity !== null ? (
        <section aria-labelledby="activity-heading">
          <h2 id="activity-heading">Recent activity</h2>
          <ActivityTable entries={data.recent_activity ?? []} label="Recent wallet activity" />
        </section>
      ) : null}
    </>
  );
}
