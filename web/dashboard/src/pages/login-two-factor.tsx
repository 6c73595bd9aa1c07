// The second step of a login for a user with two-factor: a code from the authenticator app, or a
// recovery code, with the challenge the password step returned.
import { type FormEvent, useEffect, useRef } from 'react';
import { request } from '../api.ts';
import { useAction } from '../hooks.ts';
import type { Session } from '../types.ts';
import { FormFooter } from '../ui.tsx';

export function TwoFactorStep({
  challenge,
  onLogin,
}: {
  challenge: string;
  onLogin: (session: Session) => void;
}) {
  const codeRef = useRef<HTMLInputElement>(null);
  useEffect(() => codeRef.current?.focus(), []);
  const verify = useAction((code: string) =>
    request<Session & { token: string }>('POST', '/auth/login/2fa/', {
      body: { challenge, code },
      expectUnauthorized: true,
    }),
  );
  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const result = await verify.run(String(new FormData(event.currentTarget).get('code') ?? '').trim());
    if (result) {
      const { token: _token, ...session } = result;
      onLogin(session);
    }
  }
  return (
    <form onSubmit={submit}>
      <label className="field">
        <span>Code from your authenticator app (or a recovery code)</span>
        <input ref={codeRef} name="code" autoComplete="one-time-code" required />
      </label>
      <FormFooter state={verify} label="Verify" pendingLabel="Verifying…" />
    </form>
  );
}
