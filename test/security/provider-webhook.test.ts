// #14 finding 1: the simulator's provider-webhook endpoint took ~28,000 ids per unauthenticated 1 MB body.
// It now needs an HMAC signature keyed from KASSA_SECRET_KEY, takes at most 100 ids and is rate limited;
// the other unauthenticated endpoints take small bodies only, and guessing checkout tokens is limited.
import assert from 'node:assert/strict';
import { createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { type Json, pay } from '../helpers/checkout.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  startTestServer,
  type TestServer,
} from '../helpers/server.ts';

/**
 * The signature as documented (docs/checkout-and-payments.md), computed here independently of the code:
 * key = HKDF-SHA256(KASSA_SECRET_KEY, info "kassa simulator webhook"); Kassa-Signature: t=<unix>,v1=<hex
 * HMAC-SHA256(key, "<t>.<raw body>")>.
 */
function signature(secretKeyHex: string, body: string, t = Math.floor(Date.now() / 1000)): string {
  const key = Buffer.from(
    hkdfSync('sha256', Buffer.from(secretKeyHex, 'hex'), Buffer.alloc(0), 'kassa simulator webhook', 32),
  );
  return `t=${t},v1=${createHmac('sha256', key).update(`${t}.${body}`).digest('hex')}`;
}

describe('security #1: the simulator provider webhook is signed, capped and rate limited', () => {
  let server: TestServer;
  let secretHex: string;
  before(async () => {
    server = await startTestServer({ worker: false, env: { KASSA_RATE_LIMIT_PUBLIC: '12' } });
    secretHex = server.env.KASSA_SECRET_KEY;
  });
  after(() => server.close());

  const hook = (body: string, headers: Record<string, string> = {}) =>
    call<Json>(server, 'POST', '/api/provider/webhooks/simulator/', {
      body,
      headers: { 'content-type': 'application/json', ...headers },
    });

  test('unsigned, wrongly signed, stale or over-100-id calls are refused; a signed one is applied', async () => {
    const merchant = await createTestMerchant(server, 'Signed Hooks');
    const key = await createTestKey(server, merchant, { environment: 'sandbox' });
    const created = await call<{ token: string }>(server, 'POST', '/sandbox/api/checkout/create/', {
      apiKey: key,
      body: {
        products: [{ name: 'Widget', unit_price: 10 }],
        billing_country: 'FR',
        billing_first_name: 'Ada',
        billing_last_name: 'Lovelace',
        billing_email: 'ada@example.com',
        sandbox_simulate: 'checkout_pending',
      },
    });
    const paid = await pay(server, created.body.token);
    const row = await server.ctx.db
      .selectFrom('payments')
      .select('provider_payment_id')
      .where('public_id', '=', paid.body.transaction_id as string)
      .executeTakeFirstOrThrow();
    const body = JSON.stringify({ payment_id: row.provider_payment_id });

    const unsigned = await hook(body);
    assert.equal(unsigned.status, 400, unsigned.text);
    assert.match(unsigned.body.detail as string, /Kassa-Signature/);

    const forged = await hook(body, { 'kassa-signature': signature(randomBytes(32).toString('hex'), body) });
    assert.equal(forged.status, 400);
    const otherBody = await hook(body, { 'kassa-signature': signature(secretHex, '{"payment_id":"x"}') });
    assert.equal(otherBody.status, 400);
    const stale = Math.floor(Date.now() / 1000) - 600;
    const replayed = await hook(body, { 'kassa-signature': signature(secretHex, body, stale) });
    assert.equal(replayed.status, 400, 'a signature older than 5 minutes is a replay');

    const signed = await hook(body, { 'kassa-signature': signature(secretHex, body) });
    assert.equal(signed.status, 200, signed.text);
    assert.equal(signed.body.received, true);

    const ids = Array.from({ length: 101 }, (_, i) => `simpay_${i}`);
    const many = JSON.stringify({ payment_ids: ids });
    const tooMany = await hook(many, { 'kassa-signature': signature(secretHex, many) });
    assert.equal(tooMany.status, 400);
    assert.match(tooMany.body.detail as string, /100/);
    const hundred = JSON.stringify({ payment_ids: ids.slice(0, 100) });
    assert.equal((await hook(hundred, { 'kassa-signature': signature(secretHex, hundred) })).status, 200);
  });

  test('calls from one address past the public limit are a 429 with Retry-After', async () => {
    let limited: Awaited<ReturnType<typeof hook>> | null = null;
    for (let i = 0; i < 13 && limited === null; i++) {
      const response = await hook('{"payment_id":"simpay_x"}');
      if (response.status === 429) limited = response;
    }
    assert.ok(limited, 'no 429 within 13 calls with a limit of 12 a minute');
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
  });
});

describe('security #1: other unauthenticated endpoints bound their work', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ worker: false, env: { KASSA_RATE_LIMIT_PUBLIC: '5' } });
  });
  after(() => server.close());

  test('public JSON endpoints refuse bodies over 64 KiB with a 413 before any work', async () => {
    const big = JSON.stringify({ card_number: '4242424242424242', padding: 'x'.repeat(70 * 1024) });
    const token = 'A'.repeat(43);
    for (const path of [
      `/api/checkout/${token}/pay/`,
      `/api/checkout/${token}/cancel/`,
      '/api/checkout/sync-status/',
      '/api/payment-links/public/00000000-0000-4000-8000-000000000000/start/',
      '/api/provider/webhooks/simulator/',
    ]) {
      const response = await call<Json>(server, 'POST', path, {
        body: big,
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(response.status, 413, `${path}: ${response.text}`);
    }
  });

  test('guessing checkout tokens from one address is limited like any public caller', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) {
      const guess = randomBytes(32).toString('base64url');
      statuses.push((await call(server, 'GET', `/api/checkout/${guess}/`)).status);
    }
    assert.ok(statuses.includes(429), `statuses: ${statuses.join(',')}`);
  });
});
