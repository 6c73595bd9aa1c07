// Wallet: the buckets of the environment shown, what can be paid out and why it differs from what is
// available, the latest movements of the ledger, and the whole ledger as CSV.

import { ExportLink } from '../export-link.tsx';
import { money } from '../format.ts';
import { useApi, useTitle } from '../hooks.ts';
import { Link } from '../router.tsx';
import { useEnvironment, useOrganization } from '../test-mode.tsx';
import type { Wallet, WalletBuckets } from '../types.ts';
import { PageHeader, ResourceState } from '../ui.tsx';
import { ActivityTable, WalletCards } from './overview.tsx';

const cents = (amount: string) => Math.round(Number(amount) * 100);

/** What a payout may take now: balance − held (the reserve stays until it is released). */
export function payableOf(wallet: Pick<WalletBuckets, 'balance' | 'held'>): string {
  return (Math.max(0, cents(wallet.balance) - cents(wallet.held)) / 100).toFixed(2);
}

/** One sentence: why "Available" and "You can pay out" are two different figures. */
export function WalletExplanation({ wallet }: { wallet: WalletBuckets }) {
  const { organization } = useOrganization();
  const days = organization ? `${organization.rolling_reserve_days} days` : 'a while';
  return (
    <p className="wallet-explanation">
      Available ({money(wallet.available)}) is your balance plus the rolling reserve minus held amounts; you
      can pay out <strong>{money(payableOf(wallet))}</strong> now, because the reserve (
      {money(wallet.reserve)}) is kept for {days} to cover refunds before it joins your balance.
    </p>
  );
}

export function WalletPage() {
  useTitle('Wallet');
  const environment = useEnvironment();
  const wallet = useApi<Wallet>('/wallet/', { environment });
  return (
    <>
      <PageHeader title="Wallet">
        <ExportLink what="wallet" label="the wallet ledger" />
      </PageHeader>
      <ResourceState resource={wallet} what="the wallet" />
      {wallet.data ? (
        <>
          <section aria-labelledby="wallet-buckets-heading">
            <h2 id="wallet-buckets-heading">Balance (USD)</h2>
            <WalletCards wallet={wallet.data} />
            <WalletExplanation wallet={wallet.data} />
            <p>
              <Link to="payouts">Request a payout</Link>
            </p>
          </section>
          <section aria-labelledby="ledger-heading">
            <h2 id="ledger-heading">Latest movements</h2>
            <ActivityTable entries={wallet.data.entries} label="Wallet movements" />
            <p className="muted small">The CSV export has every movement of the ledger.</p>
          </section>
        </>
      ) : null}
    </>
  );
}
