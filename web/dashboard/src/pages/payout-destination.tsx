// The bank account payouts go to: an IBAN (with its BIC) or a US routing and account number. Once
// saved, only its masked form comes back from the server ("DE IBAN •••• 3000"); changing it replaces it
// (payouts already requested keep theirs). Changing it needs a recent login: the server answers 403
// "Confirm your identity to continue." otherwise, and that answer is shown like any other.
import { type FormEvent, useState } from 'react';
import { api } from '../api.ts';
import { dateTime } from '../format.ts';
import { type Resource, useAction, useApi } from '../hooks.ts';
import { useEnvironment } from '../test-mode.tsx';
import type { PayoutDestination } from '../types.ts';
import { ConfirmButton, Detail, FormFooter, RadioGroup, ResourceState, Success } from '../ui.tsx';

const KINDS: [string, string][] = [
  ['iban', 'IBAN (Europe and most countries)'],
  ['us_account', 'US bank account'],
];

function DestinationForm({
  environment,
  onSaved,
  onCancel,
}: {
  environment: string;
  onSaved: (destination: PayoutDestination) => void;
  onCancel?: () => void;
}) {
  const [kind, setKind] = useState('iban');
  const save = useAction((body: Record<string, string>) =>
    api.put<{ destination: PayoutDestination }>(`/payouts/destination/?environment=${environment}`, body),
  );

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const value = (name: string) => String(form.get(name) ?? '').trim();
    const body: Record<string, string> = { type: kind, account_holder: value('account_holder') };
    if (kind === 'iban') {
      body.iban = value('iban');
      if (value('bic')) body.bic = value('bic');
    } else {
      body.routing_number = value('routing_number');
      body.account_number = value('account_number');
    }
    const saved = await save.run(body);
    if (saved) onSaved(saved.destination);
  }

  return (
    <form className="stack" onSubmit={submit} aria-label="Bank account">
      <div onChange={(event) => setKind((event.target as HTMLInputElement).value)}>
        <RadioGroup legend="Account type" name="type" value={kind} choices={KINDS} />
      </div>
      <label className="field">
        <span>Account holder</span>
        <input name="account_holder" required maxLength={200} autoComplete="name" />
      </label>
      {kind === 'iban' ? (
        <div className="row">
          <label className="field grow">
            <span>IBAN</span>
            <input
              name="iban"
              required
              maxLength={64}
              className="mono"
              autoComplete="off"
              spellCheck={false}
              placeholder="DE89 3704 0044 0532 0130 00"
            />
          </label>
          <label className="field">
            <span>BIC (optional)</span>
            <input name="bic" maxLength={16} className="mono" autoComplete="off" spellCheck={false} />
          </label>
        </div>
      ) : (
        <div className="row">
          <label className="field">
            <span>Routing number</span>
            <input
              name="routing_number"
              required
              inputMode="numeric"
              maxLength={11}
              className="mono"
              autoComplete="off"
              placeholder="9 digits"
            />
          </label>
          <label className="field grow">
            <span>Account number</span>
            <input
              name="account_number"
              required
              inputMode="numeric"
              maxLength={20}
              className="mono"
              autoComplete="off"
            />
          </label>
        </div>
      )}
      <p className="muted small">
        The number is checked (its check digits) and stored encrypted; from now on it is only shown with its
        last 4 digits.
      </p>
      <FormFooter state={save} label="Save bank account" pendingLabel="Saving…" onCancel={onCancel} />
    </form>
  );
}

export type CurrentDestination = Resource<{ destination: PayoutDestination | null }>;

/** The environment's current bank account, as the Payouts page loads it. */
export function useDestination(): CurrentDestination {
  const environment = useEnvironment();
  return useApi<{ destination: PayoutDestination | null }>('/payouts/destination/', { environment });
}

export function PayoutDestinationCard({ current }: { current: CurrentDestination }) {
  const environment = useEnvironment();
  const [editing, setEditing] = useState(false);
  const [saved, setSaved] = useState(false);
  const destination = current.data?.destination;

  function done() {
    setEditing(false);
    setSaved(true);
    current.reload();
  }

  return (
    <section className="card" aria-labelledby="destination-heading">
      <h2 id="destination-heading">Bank account</h2>
      <ResourceState resource={current} what="the bank account" />
      {saved ? <Success>The bank account was saved. New payouts go to it.</Success> : null}
      {current.data && !destination && !editing ? (
        <p>Payouts need a bank account to go to. Add one below.</p>
      ) : null}
      {destination && !editing ? (
        <>
          <Detail
            items={[
              [
                'Account',
                <span key="label" className="mono">
                  {destination.label}
                </span>,
              ],
              ['Account holder', destination.account_holder],
              ...(destination.bic ? ([['BIC', destination.bic]] as [string, string][]) : []),
              ['Added', dateTime(destination.created_at)],
            ]}
          />
          <div className="actions form-actions-spaced">
            <button type="button" className="button secondary" onClick={() => setEditing(true)}>
              Change bank account
            </button>
            <ConfirmButton
              label="Remove"
              title="Remove the bank account?"
              message={
                <p>Payouts already requested keep it. You cannot request a new payout until you add one.</p>
              }
              confirmLabel="Remove bank account"
              onConfirm={async () => {
                await api.delete(`/payouts/destination/?environment=${environment}`);
                setSaved(false);
                current.reload();
              }}
            />
          </div>
        </>
      ) : null}
      {current.data && (!destination || editing) ? (
        <DestinationForm
          environment={environment}
          onSaved={done}
          onCancel={destination ? () => setEditing(false) : undefined}
        />
      ) : null}
    </section>
  );
}
