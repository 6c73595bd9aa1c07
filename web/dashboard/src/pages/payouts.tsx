// Payouts: the bank account they go to, a payout request (USD, at most balance − held), and the payouts
// of the environment shown with their status and account.
import { type FormEvent, useState } from 'react';
import { api, asPage, type Page } from '../api.ts';
import { ExportLink } from '../export-link.tsx';
import { dateTime, money } from '../format.ts';
import { useAction, useApi, useTitle } from '../hooks.ts';
import { useEnvironment } from '../test-mode.tsx';
import type { Payout, Wallet } from '../types.ts';
import { DataTable, Empty, FormError, PageHeader, ResourceState, StatusBadge, Success } from '../ui.tsx';
import { WalletCards } from './overview.tsx';
import { PayoutDestinationCard, useDestination } from './payout-destination.tsx';
import { payableOf, WalletExplanation } from './wallet.tsx';

const AMOUNT = '^\\d+(\\.\\d{1,2})?$';

function PayoutsTable({ payouts }: { payouts: Payout[] }) {
  return (
    <DataTable
      label="All payouts"
      columns={['Payout', 'Amount', 'Status', 'Bank account', 'Requested', 'Updated']}
      numeric={['Amount']}
    >
      {payouts.map((payout) => (
        <tr key={payout.id}>
          <td className="mono">{payout.id}</td>
          <td className="num">{money(payout.amount, payout.currency ?? 'USD')}</td>
          <td>
            <StatusBadge status={payout.status} />
          </td>
          <td>
            {payout.destination ? (
              <>
                <span className="mono">{payout.destination.label}</span>
                <span className="muted small block">{payout.destination.account_holder}</span>
              </>
            ) : (
              <span className="muted">None on file</span>
            )}
          </td>
          <td>{dateTime(payout.created_at)}</td>
          <td>{dateTime(payout.updated_at)}</td>
        </tr>
      ))}
    </DataTable>
  );
}

export function PayoutsPage() {
  useTitle('Payouts');
  const environment = useEnvironment();
  const wallet = useApi<Wallet>('/wallet/', { environment });
  const payouts = useApi<Page<Payout> | Payout[]>('/payouts/', { page_size: 50, environment });
  const destination = useDestination();
  const request = useAction((amount: string) => api.post<Payout>('/payouts/', { amount, environment }));
  const [requested, setRequested] = useState<Payout | null>(null);
  const list = asPage(payouts.data)?.results;
  const hasAccount = Boolean(destination.data?.destination);

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const formElement = event.currentTarget;
    const amount = String(new FormData(formElement).get('amount') ?? '').trim();
    const payout = await request.run(amount);
    if (payout) {
      formElement.reset();
      setRequested(payout);
      payouts.reload();
      wallet.reload();
    }
  }

  return (
    <>
      <PageHeader title="Payouts">
        <ExportLink what="payouts" label="payouts" />
      </PageHeader>
      <section aria-labelledby="payout-wallet-heading">
        <h2 id="payout-wallet-heading">Wallet (USD)</h2>
        <ResourceState resource={wallet} what="the wallet" />
        {wallet.data ? (
          <>
            <WalletCards wallet={wallet.data} />
            <WalletExplanation wallet={wallet.data} />
          </>
        ) : null}
      </section>
      <PayoutDestinationCard current={destination} />
      <section className="card" aria-labelledby="request-payout-heading">
        <h2 id="request-payout-heading">Request a payout</h2>
        {wallet.data ? (
          <p className="muted">
            You can pay out up to {money(payableOf(wallet.data), 'USD')}
            {destination.data?.destination ? ` to ${destination.data.destination.label}` : ''}.
          </p>
        ) : null}
        {requested ? (
          <Success>
            Payout {requested.id} of {money(requested.amount, requested.currency ?? 'USD')} is{' '}
            {requested.status}
            {requested.destination ? ` to ${requested.destination.label}` : ''}. The amount is held until it
            completes.
          </Success>
        ) : null}
        {destination.data && !hasAccount ? (
          <p className="notice notice-info">Add a bank account above before requesting a payout.</p>
        ) : null}
        <form className="row align-end" onSubmit={submit}>
          <label className="field">
            <span>Amount (USD)</span>
            <input
              name="amount"
              required
              inputMode="decimal"
              pattern={AMOUNT}
              title="An amount like 100 or 100.00"
              disabled={!hasAccount}
            />
          </label>
          <button type="submit" className="button" disabled={request.pending || !hasAccount}>
            {request.pending ? 'Requesting…' : 'Request payout'}
          </button>
        </form>
        <FormError message={request.error} />
      </section>
      <section aria-labelledby="payouts-heading">
        <h2 id="payouts-heading">Payouts</h2>
        <ResourceState resource={payouts} what="payouts" />
        {list && list.length === 0 ? <Empty>No payouts yet.</Empty> : null}
        {list && list.length > 0 ? <PayoutsTable payouts={list} /> : null}
      </section>
    </>
  );
}
