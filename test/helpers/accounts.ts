// Team members for tests, made the way a merchant makes them: the owner invites through the API, the
// invitation mail lands in the development mailbox (<data dir>/mail/*.eml), and the invitee accepts it.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBase62 } from '../../src/lib/ids.ts';
import { totpCode } from '../../src/modules/auth/totp.ts';
import { call, type Merchant, type TestServer } from './server.ts';

export interface Member {
  id: number;
  email: string;
  password: string;
  token: string;
  role: string;
}

/** The text of the newest mail to `to` (quoted-printable undone), or null. */
export function latestMail(server: TestServer, to: string): string | null {
  const directory = join(server.env.KASSA_DATA_DIR, 'mail');
  let files: string[];
  try {
    files = readdirSync(directory)
      .filter((name) => name.endsWith('.eml'))
      .sort();
  } catch {
    return null;
  }
  for (const name of files.reverse()) {
    const raw = readFileSync(join(directory, name), 'utf8');
    if (!new RegExp(`^To: .*${to.replace(/[.+]/g, '\\$&')}`, 'mi').test(raw)) continue;
    return raw
      .replace(/=\r?\n/g, '')
      .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
  }
  return null;
}

/** The token of the newest link of a kind (accept-invite, reset-password) mailed to `to`. */
export function mailedToken(
  server: TestServer,
  to: string,
  page: 'accept-invite' | 'reset-password',
): string {
  const mail = latestMail(server, to);
  const match = mail && new RegExp(`/dashboard/${page}#token=([A-Za-z0-9_-]+)`).exec(mail);
  if (!match) throw new Error(`no ${page} link mailed to ${to}`);
  return match[1];
}

/** The owner invites `role`; the invitee accepts with a password and is logged in. */
export async function addMember(server: TestServer, owner: Merchant, role: string): Promise<Member> {
  const email = `${role}-${randomBase62(6).toLowerCase()}@acme.test`;
  const invited = await call(server, 'POST', '/api/organization/members/', {
    token: owner.token,
    body: { email, role },
  });
  if (invited.status !== 201) throw new Error(`invitation failed: ${invited.text}`);
  const password = 'member password 1';
  const accepted = await call<{ token: string; user: { id: number } }>(
    server,
    'POST',
    '/api/auth/accept-invite/',
    {
      body: { token: mailedToken(server, email, 'accept-invite'), password },
    },
  );
  if (accepted.status !== 200) throw new Error(`acceptance failed: ${accepted.text}`);
  return { id: accepted.body.user.id, email, password, token: accepted.body.token, role };
}

/** Turns two-factor on for a logged-in user; returns the base32 secret and the recovery codes. */
export async function enableTwoFactor(
  server: TestServer,
  token: string,
): Promise<{ secret: string; recoveryCodes: string[] }> {
  const setup = await call<{ secret: string }>(server, 'POST', '/api/auth/2fa/setup/', { token });
  if (setup.status !== 200) throw new Error(`2fa setup failed: ${setup.text}`);
  const enabled = await call<{ recovery_codes: string[] }>(server, 'POST', '/api/auth/2fa/enable/', {
    token,
    body: { code: totpCode(setup.body.secret, server.ctx.clock()) },
  });
  if (enabled.status !== 200) throw new Error(`2fa enable failed: ${enabled.text}`);
  return { secret: setup.body.secret, recoveryCodes: enabled.body.recovery_codes };
}
