// The confirm-identity dialog: when a sensitive action (a key, the webhook, a payout, the team, two-factor)
// answers 403 reauth_required, api.ts asks this dialog; the user confirms with their password (or a
// two-factor code) through POST /api/auth/confirm/, and the action is sent again.
import { type FormEvent, useEffect, useState } from 'react';
import { api, onReauthRequired } from '../api.ts';
import { useAction } from '../hooks.ts';
import { Dialog, FormFooter } from '../ui.tsx';

export function ReauthDialog({ twoFactor }: { twoFactor: boolean }) {
  const [pending, setPending] = useState<((ok: boolean) => void) | null>(null);
  const [method, setMethod] = useState<'password' | 'code'>('password');
  const confirm = useAction((body: Record<string, string>) => api.post('/auth/confirm/', body));

  useEffect(
    () =>
      onReauthRequired(
        () =>
          new Promise<boolean>((resolve) => {
            confirm.clearError();
            setPending(() => resolve);
          }),
      ),
    [confirm.clearError],
  );

  function close(ok: boolean) {
    pending?.(ok);
    setPending(null);
  }

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const value = String(new FormData(event.currentTarget).get('secret') ?? '');
    if (await confirm.run(method === 'password' ? { password: value } : { code: value })) close(true);
  }

  return (
    <Dialog open={pending !== null} title="Confirm your identity" onClose={() => close(false)}>
      <form onSubmit={submit} className="dialog-body">
        <p>This action changes how your account or money is protected. Confirm it is you to continue.</p>
        <label className="field">
          <span>{method === 'password' ? 'Password' : 'Two-factor code'}</span>
          <input
            key={method}
            name="secret"
            type={method === 'password' ? 'password' : 'text'}
            inputMode={method === 'password' ? undefined : 'numeric'}
            autoComplete={method === 'password' ? 'current-password' : 'one-time-code'}
            required
          />
        </label>
        {twoFactor ? (
          <button
            type="button"
            className="link-button"
            onClick={() => setMethod(method === 'password' ? 'code' : 'password')}
          >
            {method === 'password' ? 'Use a two-factor code instead' : 'Use your password instead'}
          </button>
        ) : null}
        <FormFooter
          state={confirm}
          label="Confirm"
          pendingLabel="Confirming…"
          onCancel={() => close(false)}
        />
      </form>
    </Dialog>
  );
}
