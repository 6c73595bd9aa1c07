// kassa listen --forward-to http://localhost:4000/webhooks
// Logs in, follows the organization's events as they are written, and forwards each one signed
// (with a secret printed at start) to a local URL: webhooks on a laptop without a public endpoint.
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline/promises';
import { publicUrlOf } from '../config.ts';
import { FEED_SETTLE_HEADER } from '../modules/events/schemas.ts';
import { generateSecret, sign, standardWebhookHeaders } from '../modules/webhooks/secret.ts';
import type { Command } from './commands.ts';

interface ListenedEvent {
  id: number;
  type: string;
  payload: unknown;
}

async function login(base: string, email: string, password: string): Promise<string> {
  const response = await fetch(`${base}/api/auth/login/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  const body = (await response.json()) as { token?: string; detail?: string };
  if (!response.ok || !body.token) throw new Error(`login failed: ${body.detail ?? response.status}`);
  return body.token;
}

async function forward(target: string, secret: string, event: ListenedEvent): Promise<string> {
  const raw = JSON.stringify(event.payload);
  const deliveryId = randomUUID();
  const timestamp = Math.floor(Date.now() / 1000);
  try {
    const response = await fetch(target, {
      method: 'POST',
      // The same headers as a real delivery, the Standard Webhooks ones included.
      headers: {
        'content-type': 'application/json',
        'x-webhook-event': event.type,
        'x-webhook-delivery-id': deliveryId,
        'x-webhook-timestamp': String(timestamp),
        'x-webhook-signature': sign(secret, raw),
        ...standardWebhookHeaders(secret, deliveryId, timestamp, raw),
      },
      body: raw,
      signal: AbortSignal.timeout(10_000),
      redirect: 'manual',
    });
    return String(response.status);
  } catch (error) {
    return `error: ${(error as Error).message}`;
  }
}

export const listenCommand: Command = {
  summary: "Forward your organization's events, signed, to a local URL while you develop.",
  usage:
    '--forward-to <url> [--api <kassa url>] [--email <email>] [--password <pw>] [--token <session token>]',
  help: `Options:
  --forward-to   the local URL that receives the events (required)
  --api          the Kassa server (default KASSA_PUBLIC_URL, else http://localhost on
                 KASSA_PORT, PORT or 3000, as the server itself defaults)
  --email, --password  dashboard credentials (asked for when missing and no --token)
  --token        an existing dashboard session token instead of logging in
  --from-start   also forward events written before listen started
Events are signed with a secret printed at start (not your endpoint's secret).`,
  options: {
    'forward-to': { type: 'string' },
    api: { type: 'string' },
    email: { type: 'string' },
    password: { type: 'string' },
    token: { type: 'string' },
    'from-start': { type: 'boolean' },
  },
  async run({ values }) {
    const target = values['forward-to'];
    if (typeof target !== 'string' || !/^https?:\/\//.test(target)) {
      console.error('kassa: listen needs --forward-to http(s)://... (see --help).');
      return 1;
    }
    // The service's own default: KASSA_PUBLIC_URL, else localhost on KASSA_PORT, PORT or 3000.
    const base = String(values.api ?? publicUrlOf(process.env)).replace(/\/+$/, '');
    let token = typeof values.token === 'string' ? values.token : null;
    if (!token) {
      const prompt = createInterface({ input: process.stdin, output: process.stderr });
      const email = typeof values.email === 'string' ? values.email : await prompt.question('Email: ');
      const password =
        typeof values.password === 'string' ? values.password : await prompt.question('Password: ');
      prompt.close();
      token = await login(base, email, password);
    }
    const secret = generateSecret();
    const stop = new AbortController();
    process.once('SIGINT', () => stop.abort());
    process.once('SIGTERM', () => stop.abort());
    const auth = { authorization: `Token ${token}` };
    let cursor = '0';
    if (!values['from-start']) {
      // Skip history: find the end by paging to it. This version's feed holds nothing back (its
      // settle header is 0, src/modules/events/feed.ts), but a server before it held events back on
      // PostgreSQL for the header's time: wait that out once and skip again, so an event written just
      // before start is history, not forwarded as new.
      let settleMs = 0;
      const skipToEnd = async () => {
        for (;;) {
          const page = await fetch(`${base}/api/organization/events/?after=${cursor}&limit=500`, {
            headers: auth,
          });
          if (!page.ok) throw new Error(`cannot read events: ${page.status}`);
          settleMs = Math.min(Number(page.headers.get(FEED_SETTLE_HEADER) ?? 0) || 0, 10_000);
          const body = (await page.json()) as { results: ListenedEvent[]; cursor: string };
          cursor = body.cursor;
          if (body.results.length < 500) break;
        }
      };
      await skipToEnd();
      if (settleMs > 0) {
        await new Promise((resolve) => setTimeout(resolve, settleMs));
        await skipToEnd();
      }
    }
    // Ready only now: every event written from here on is forwarded.
    console.log(`Ready. Forwarding events to ${target}\nSigning secret for this session: ${secret}`);
    while (!stop.signal.aborted) {
      const response = await fetch(`${base}/api/organization/events/?after=${cursor}&wait=20`, {
        headers: auth,
        signal: stop.signal,
      }).catch(() => null);
      if (stop.signal.aborted) break;
      if (!response?.ok) {
        if (response?.status === 401) {
          console.error('kassa: session ended; log in again.');
          return 1;
        }
        await new Promise((resolve) => setTimeout(resolve, 1000));
        continue;
      }
      const body = (await response.json()) as { results: ListenedEvent[]; cursor: string };
      for (const event of body.results) {
        const status = await forward(target, secret, event);
        console.log(`${new Date().toISOString()}  ${event.type}  → ${status}`);
      }
      cursor = body.cursor;
    }
    return 0;
  },
};
