// Login: POST /api/auth/login/ sets the kassa_session cookie; the response names the user and organization.
import { type FormEvent, useEffect, useRef, useState } from 'react';
import { request } from '../api.ts';
import { useAction, useTitle } from '../hooks.ts';
import { Link } from '../router.tsx';
import type { Session } from '../types.ts';
import { FormError } from '../ui.tsx';
import { TwoFactorStep } from './login-two-factor.tsx';

export function LoginPage({ ended, onLogin }: { ended: boolean; onLogin: (session: Session) => void }) {
  useTitle('Log in');
  const emailRef = useRef<HTMLInputElement>(null);
  useEffect(() => emailRef.current?.focus(), []);
  const [challenge, setChallenge] = useState<string | null>(null);
  const login = useAction((email: string, password: string) =>
    request<(Session & { token: string }) | { two_factor_required: true; challenge: string }>(
      'POST',
      '/auth/login/',
      {
        body: { email, password },
        expectUnauthorized: true,
      },
    ),
  );

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const result = await login.run(String(form.get('email') ?? ''), String(form.get('password') ?? ''));
    if (result && 'two_factor_required' in result) setChallenge(result.challenge);
    else if (result) {
      const { token: _token, ...session } = result;
      onLogin(session);
    }
  }

  if (challenge) {
    return (
      <main className="login" id="main">
        <div className="card login-card">
          <p className="brand">Kassa</p>
          <h1 id="page-title" tabIndex={-1}>
            Two-factor authentication
          </h1>
          <TwoFactorStep challenge={challenge} onLogin={onLogin} />
        </div>
      </main>
    );
  }

  return (
    <main className="login" id="main">
      <form className="card login-card" onSubmit={submit} aria-labelledby="page-title">
        <p className="brand">Kassa</p>
        <h1 id="page-title" tabIndex={-1}>
          Log in to your dashboard
        </h1>
        {ended ? (
          <p className="notice notice-info" role="status">
            Your session has ended. Log in again to continue.
          </p>
        ) : null}
        <label className="field">
          <span>Email</span>
          <input ref={emailRef} name="email" type="email" autoComplete="username" required />
        </label>
        <label className="field">
          <span>Password</span>
          <input name="password" type="password" autoComplete="current-password" required />
        </label>
        <FormError message={login.error} />
        <button type="submit" className="button wide" disabled={login.pending}>
          {login.pending ? 'Logging in…' : 'Log in'}
        </button>
        <p>
          <Link to="forgot-password">Forgot your password?</Link>
        </p>
      </form>
    </main>
  );
}
