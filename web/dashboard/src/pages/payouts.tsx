// Payouts: the wallet, a payout request (USD, at most balance − held), and the payouts with their status.
import { type FormEvent, useState } from 'react';
import { api, asPage, type Page } from '../api.ts';
import { dateTime, money } from '../format.ts';
import { useAction, useApi, useTitle } from '../hooks.ts';
import type { Payout, Wallet } from '../types.ts';
import { DataTable, Empty, FormError, PageHeader, ResourceState, StatusBadge, Success } from '../ui.tsx';
import { WalletCards } from './overview.tsx';

const AMOUNT = '^\\d+(\\.\\d{1,2})?$';

export function PayoutsPage() {
  useTitle('Payouts');
  const wallet = useApi<Wallet>('/wallet/');
  const payouts = useApi<Page<Payout> | Payout[]>('/payouts/', { page_size: 50 });
  const request = useAction((amount: string) => api.post<Payout>('/payouts/', { amount }));
  const [requested, setRequested] = useState<Payout | null>(null);
  const list = asPage(payouts.data)?.results;
  const payable = wallet.data
    ? Math.max(
        0,
        Math.round(Number(wallet.data.balance) * 100) - Math.round(Number(wallet.data.held) * 100),
      ) / 100
    : undefined;

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
      <PageHeader title="Payouts" />
      <section aria-labelledby="payout-wallet-heading">
        <h2 id="payout-wallet-heading">Wallet (USD)</h2>
        <ResourceState resource={wallet} what="the wallet" />
        {wallet.data ? <WalletCards wallet={wallet.data} /> : null}
      </section>
      <section className="card" aria-labelledby="request-payout-heading">
        <h2 id="request-payout-heading">Request a payout</h2>
        {payable !== undefined ? (
          <p className="muted">You can pay out up to {money(payable, 'USD')} (balance minus held amounts).</p>
        ) : null}
        {requested ? (
          <Success>
            Payout {requested.id} of {money(requested.amount, requested.currency ?? 'USD')} is{' '}
            {requested.status}. The amount is held until it completes.
          </Success>
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
            />
          </label>
          <button type="submit" className="button" disabled={request.pending}>
            {request.pending ? 'Requesting…' : 'Request payout'}
          </button>
        </form>
        <FormError message={request.error} />
      </section>
      <section aria-labelledby="payouts-heading">
        <h2 id="payouts-heading">Payouts</h2>
        <ResourceState resource={payouts} what="payouts" />
        {list && list.length === 0 ? <Empty>No payouts yet.</Empty> : null}
        {list && list.length > 0 ? (
          <DataTable
            label="Payouts"
            columns={['Payout', 'Amount', 'Status', 'Requested', 'Updated']}
            numeric={['Amount']}
          >
            {list.map((payout) => (
              <tr key={payout.id}>
                <td className="mono">{payout.id}</td>
                <td className="num">{money(payout.amount, payout.currency ?? 'USD')}</td>
                <td>
                  <StatusBadge status={payout.status} />
                </td>
                <td>{dateTime(payout.created_at)}</td>
                <td>{dateTime(payout.updated_at)}</td>
              </tr>
            ))}
          </DataTable>
        ) : null}
      </section>
    </>
  );
}
