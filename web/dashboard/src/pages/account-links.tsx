// Pages reached from a mailed link or from the login page, without a session: accepting an invitation,
// asking for a password reset, and choosing a new password. The link's token rides in the URL fragment
// (#token=…), which browsers never send to a server.
import { type FormEvent, type ReactNode, useEffect, useState } from 'react';
import { request } from '../api.ts';
import { useAction, useTitle } from '../hooks.ts';
import { Link } from '../router.tsx';
import type { Session } from '../types.ts';
import { FormFooter, Success } from '../ui.tsx';

function tokenFromFragment(): string {
  return new URLSearchParams(window.location.hash.slice(1)).get('token') ?? '';
}

function Card({ title, children }: { title: string; children: ReactNode }) {
  useTitle(title);
  return (
    <main className="login" id="main">
      <div className="card login-card">
        <p className="brand">Kassa</p>
        <h1 id="page-title" tabIndex={-1}>
          {title}
        </h1>
        {children}
      </div>
    </main>
  );
}

export function AcceptInvitePage({ onLogin }: { onLogin: (session: Session) => void }) {
  const [token] = useState(tokenFromFragment);
  const accept = useAction((name: string, password: string) =>
    request<Session & { token: string }>('POST', '/auth/accept-invite/', {
      body: { token, name, password },
      expectUnauthorized: true,
    }),
  );
  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const data = new FormData(event.currentTarget);
    const result = await accept.run(String(data.get('name') ?? ''), String(data.get('password') ?? ''));
    if (result) {
      const { token: _token, ...session } = result;
      onLogin(session);
    }
  }
  return (
    <Card title="Join your team on Kassa">
      {token ? (
        <form onSubmit={submit}>
          <label className="field">
            <span>Your name</span>
            <input name="name" autoComplete="name" />
          </label>
          <label className="field">
            <span>Choose a password (at least 10 characters)</span>
            <input name="password" type="password" autoComplete="new-password" minLength={10} required />
          </label>
          <FormFooter state={accept} label="Accept the invitation" pendingLabel="Joining…" />
        </form>
      ) : (
        <p className="notice notice-error">
          This link is incomplete. Open the link from your invitation mail again.
        </p>
      )}
    </Card>
  );
}

export function ForgotPasswordPage() {
  const [sent, setSent] = useState(false);
  const ask = useAction((email: string) =>
    request('POST', '/auth/password-reset/', { body: { email }, expectUnauthorized: true }),
  );
  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (await ask.run(String(new FormData(event.currentTarget).get('email') ?? ''))) setSent(true);
  }
  return (
    <Card title="Reset your password">
      {sent ? (
        <Success>
          If this email belongs to an account, a reset link is on its way. It works once, for one hour.
        </Success>
      ) : (
        <form onSubmit={submit}>
          <label className="field">
            <span>Email</span>
            <input name="email" type="email" autoComplete="username" required />
          </label>
          <FormFooter state={ask} label="Mail me a reset link" pendingLabel="Sending…" />
        </form>
      )}
      <p>
        <Link to="login">Back to the login page</Link>
      </p>
    </Card>
  );
}

export function ResetPasswordPage() {
  const [token] = useState(tokenFromFragment);
  const [done, setDone] = useState(false);
  // The fragment is read once; drop it from the address bar so the token is not left in the history.
  useEffect(() => {
    if (window.location.hash) window.history.replaceState(null, '', window.location.pathname);
  }, []);
  const reset = useAction((new_password: string) =>
    request('POST', '/auth/password-reset/confirm/', {
      body: { token, new_password },
      expectUnauthorized: true,
    }),
  );
  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const ok = await reset.run(String(new FormData(event.currentTarget).get('password') ?? ''));
    if (ok !== undefined) setDone(true);
  }
  return (
    <Card title="Choose a new password">
      {done ? (
        <Success>
          Your password is changed and every session was logged out. <Link to="login">Log in</Link>.
        </Success>
      ) : (
        <form onSubmit={submit}>
          <label className="field">
            <span>New password (at least 10 characters)</span>
            <input name="password" type="password" autoComplete="new-password" minLength={10} required />
          </label>
          <FormFooter state={reset} label="Set the password" pendingLabel="Saving…" />
        </form>
      )}
    </Card>
  );
}
