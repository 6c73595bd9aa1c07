// Security settings of the logged-in member: password, two-factor (setup with a QR code, recovery codes,
// turning it off) and the live sessions with revoke.
import { type FormEvent, useState } from 'react';
import { api } from '../api.ts';
import { dateTime } from '../format.ts';
import { useAction, useApi, useTitle } from '../hooks.ts';
import type { Session } from '../types.ts';
import {
  ConfirmButton,
  CopyButton,
  DataTable,
  FormFooter,
  PageHeader,
  ResourceState,
  Success,
} from '../ui.tsx';
import { QrCode } from './qr-code.tsx';

interface SessionRow {
  id: number;
  created_at: string;
  last_seen_at: string;
  ip: string | null;
  user_agent: string | null;
  current: boolean;
}

function PasswordSection() {
  const [done, setDone] = useState(false);
  const change = useAction((current_password: string, new_password: string) =>
    api.post('/auth/password/', { current_password, new_password }),
  );
  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = event.currentTarget;
    const data = new FormData(form);
    setDone(false);
    const ok = await change.run(String(data.get('current') ?? ''), String(data.get('new') ?? ''));
    if (ok !== undefined) {
      form.reset();
      setDone(true);
    }
  }
  return (
    <section className="card" aria-labelledby="password-title">
      <h2 id="password-title">Password</h2>
      <form onSubmit={submit}>
        <label className="field">
          <span>Current password</span>
          <input name="current" type="password" autoComplete="current-password" required />
        </label>
        <label className="field">
          <span>New password (at least 10 characters)</span>
          <input name="new" type="password" autoComplete="new-password" minLength={10} required />
        </label>
        {done ? <Success>Password changed. Your other sessions have been logged out.</Success> : null}
        <FormFooter state={change} label="Change password" pendingLabel="Changing…" />
      </form>
    </section>
  );
}

function RecoveryCodes({ codes, onDone }: { codes: string[]; onDone: () => void }) {
  return (
    <section className="notice notice-secret" aria-label="Recovery codes">
      <p>
        <strong>Your recovery codes.</strong> Each works once, in place of a code, if you lose your
        authenticator. They are shown only now: store them somewhere safe.
      </p>
      <ul className="recovery-codes mono" data-testid="recovery-codes">
        {codes.map((code) => (
          <li key={code}>{code}</li>
        ))}
      </ul>
      <CopyButton text={codes.join('\n')} label="Copy the codes" />{' '}
      <button type="button" className="button secondary small" onClick={onDone}>
        I have saved them
      </button>
    </section>
  );
}

function TwoFactorSection({ session, onChanged }: { session: Session; onChanged: () => void }) {
  const [setup, setSetup] = useState<{ secret: string; otpauth_url: string } | null>(null);
  const [codes, setCodes] = useState<string[] | null>(null);
  const start = useAction(() => api.post<{ secret: string; otpauth_url: string }>('/auth/2fa/setup/'));
  const enable = useAction((code: string) =>
    api.post<{ recovery_codes: string[] }>('/auth/2fa/enable/', { code }),
  );
  const disable = useAction((code: string) => api.post('/auth/2fa/disable/', { code }));
  const regenerate = useAction(() => api.post<{ recovery_codes: string[] }>('/auth/2fa/recovery-codes/'));

  async function submitEnable(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const result = await enable.run(String(new FormData(event.currentTarget).get('code') ?? '').trim());
    if (result) {
      setSetup(null);
      setCodes(result.recovery_codes);
    }
  }
  async function submitDisable(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const ok = await disable.run(String(new FormData(event.currentTarget).get('code') ?? '').trim());
    if (ok !== undefined) onChanged();
  }

  return (
    <section className="card" aria-labelledby="two-factor-title">
      <h2 id="two-factor-title">Two-factor authentication</h2>
      {codes ? (
        <RecoveryCodes
          codes={codes}
          onDone={() => {
            setCodes(null);
            onChanged();
          }}
        />
      ) : session.two_factor_enabled ? (
        <>
          <p>
            Two-factor is <strong>on</strong>: logging in asks for a code from your authenticator app.
          </p>
          <button
            type="button"
            className="button secondary"
            disabled={regenerate.pending}
            onClick={async () => {
              const result = await regenerate.run();
              if (result) setCodes(result.recovery_codes);
            }}
          >
            New recovery codes
          </button>
          <form onSubmit={submitDisable} className="inline-form">
            <label className="field">
              <span>Code to turn two-factor off</span>
              <input name="code" inputMode="numeric" autoComplete="one-time-code" required />
            </label>
            <FormFooter state={disable} label="Turn off two-factor" pendingLabel="Turning off…" danger />
          </form>
        </>
      ) : setup ? (
        <form onSubmit={submitEnable}>
          <p>Scan this QR code with an authenticator app, or type the key, then enter the code it shows.</p>
          <QrCode text={setup.otpauth_url} label="QR code for your authenticator app" />
          <p>
            Key:{' '}
            <code className="mono" data-testid="totp-secret">
              {setup.secret}
            </code>{' '}
            <CopyButton text={setup.secret} />
          </p>
          <label className="field">
            <span>Code from the app</span>
            <input name="code" inputMode="numeric" autoComplete="one-time-code" pattern="[0-9]{6}" required />
          </label>
          <FormFooter
            state={enable}
            label="Turn on two-factor"
            pendingLabel="Checking…"
            onCancel={() => setSetup(null)}
          />
        </form>
      ) : (
        <>
          {session.two_factor_setup_required ? (
            <p className="notice notice-info" role="status">
              Your organization requires two-factor authentication. Set it up to use the dashboard.
            </p>
          ) : (
            <p>Protect your account with a code from an authenticator app when you log in.</p>
          )}
          <FormFooter
            state={start}
            label="Set up two-factor"
            pendingLabel="Preparing…"
            onClick={async () => {
              const result = await start.run();
              if (result) setSetup(result);
            }}
          />
        </>
      )}
    </section>
  );
}

function SessionsSection() {
  const sessions = useApi<SessionRow[]>('/auth/sessions/');
  return (
    <section className="card" aria-labelledby="sessions-title">
      <h2 id="sessions-title">Sessions</h2>
      <ResourceState resource={sessions} what="your sessions" />
      {sessions.data ? (
        <DataTable label="Your sessions" columns={['Device', 'Address', 'Logged in', 'Last active', '']}>
          {sessions.data.map((row) => (
            <tr key={row.id}>
              <td>
                {row.user_agent ?? 'Unknown device'}
                {row.current ? <strong> (this session)</strong> : null}
              </td>
              <td className="mono">{row.ip ?? '—'}</td>
              <td>{dateTime(row.created_at)}</td>
              <td>{dateTime(row.last_seen_at)}</td>
              <td>
                {row.current ? null : (
                  <ConfirmButton
                    label="End session"
                    title="End this session?"
                    message="That device will have to log in again."
                    confirmLabel="End it"
                    onConfirm={async () => {
                      await api.delete(`/auth/sessions/${row.id}/`);
                      sessions.reload();
                    }}
                  />
                )}
              </td>
            </tr>
          ))}
        </DataTable>
      ) : null}
    </section>
  );
}

export function SecurityPage({
  session,
  onSessionChanged,
}: {
  session: Session;
  onSessionChanged: () => void;
}) {
  useTitle('Security');
  return (
    <>
      <PageHeader title="Security" />
      <div className="stack">
        <TwoFactorSection session={session} onChanged={onSessionChanged} />
        {session.two_factor_setup_required ? null : (
          <>
            <PasswordSection />
            <SessionsSection />
          </>
        )}
      </div>
    </>
  );
}
