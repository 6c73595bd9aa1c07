import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { call, createTestMerchant, startTestServer, type TestServer } from './helpers/server.ts';
import { setEndpoint, waitUntil } from './webhooks-helpers.ts';

interface Received {
  event: string | null;
  delivery_id: string | null;
  content_type: string | null;
  headers: Record<string, string>;
  body: string;
  body_encoding: 'utf8' | 'base64';
  signature_valid: boolean | null;
}
interface ReceivedPage {
  count: number;
  next: string | null;
  results: Received[];
}

function sign(secret: string, body: Buffer | string) {
  return `sha256=${createHmac('sha256', Buffer.from(secret, 'utf8')).update(body).digest('hex')}`;
}

describe('the public test receiver', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  const post = (slug: string, body: string | Buffer, headers: Record<string, string> = {}) =>
    fetch(`${server.url}/api/v1/webhooks/${slug}/`, { method: 'POST', body, headers });

  test('accepts a POST for a known slug and keeps it with its signature check', async () => {
    const merchant = await createTestMerchant(server);
    const secret = await setEndpoint(server, merchant, 'https://merchant.example/hooks');
    assert.ok(secret);
    const body = '{"event":"webhook.test","message":"hi",  "livemode":true}';
    const good = await post(merchant.slug, body, {
      'content-type': 'application/json',
      'x-webhook-signature': sign(secret, body),
      'x-webhook-event': 'webhook.test',
      authorization: 'Bearer should-not-be-kept',
    });
    assert.equal(good.status, 200);
    assert.deepEqual(await good.json(), { received: true });
    const bad = await post(merchant.slug, body, {
      'content-type': 'application/json',
      'x-webhook-signature': sign('whsec_wrong', body),
    });
    assert.equal(bad.status, 200);
    const unsigned = await post(merchant.slug, 'plain text', { 'content-type': 'text/plain' });
    assert.equal(unsigned.status, 200);
    const binary = Buffer.from([0xff, 0xfe, 0x00, 0x01]);
    assert.equal(
      (await post(merchant.slug, binary, { 'content-type': 'application/octet-stream' })).status,
      200,
    );

    const listed = await call<ReceivedPage>(server, 'GET', '/api/organization/webhook/received/', {
      token: merchant.token,
    });
    assert.equal(listed.status, 200);
    assert.equal(listed.body.count, 4);
    const [octets, text, wrong, right] = listed.body.results;
    assert.equal(right.body, body);
    assert.equal(right.body_encoding, 'utf8');
    assert.equal(right.signature_valid, true);
    assert.equal(right.event, 'webhook.test');
    assert.equal(right.headers.authorization, '[redacted]');
    assert.equal(wrong.signature_valid, false);
    assert.equal(text.signature_valid, null);
    assert.equal(text.body, 'plain text');
    assert.equal(text.content_type, 'text/plain');
    assert.equal(octets.body_encoding, 'base64');
    assert.deepEqual(Buffer.from(octets.body, 'base64'), binary);
  });

  test('an unknown slug is a 404 and a body over 256 KiB is a 413', async () => {
    const missing = await post('no-such-organization', '{}', { 'content-type': 'application/json' });
    assert.equal(missing.status, 404);
    assert.equal(typeof ((await missing.json()) as { detail: string }).detail, 'string');
    const merchant = await createTestMerchant(server);
    const big = await post(merchant.slug, 'x'.repeat(256 * 1024 + 1), { 'content-type': 'text/plain' });
    assert.equal(big.status, 413);
    assert.deepEqual(await big.json(), { detail: 'Request body is too large.' });
    const fits = await post(merchant.slug, 'x'.repeat(256 * 1024), { 'content-type': 'text/plain' });
    assert.equal(fits.status, 200);
  });

  test('keeps the last 100 requests of each organization, and only its own', async () => {
    const merchant = await createTestMerchant(server);
    const other = await createTestMerchant(server, 'Other');
    for (let i = 0; i < 105; i += 1) {
      const response = await post(merchant.slug, JSON.stringify({ i }), {
        'content-type': 'application/json',
      });
      assert.equal(response.status, 200);
    }
    await post(other.slug, '{"mine":true}', { 'content-type': 'application/json' });
    const page = await call<ReceivedPage>(
      server,
      'GET',
      '/api/organization/webhook/received/?page_size=100',
      {
        token: merchant.token,
      },
    );
    assert.equal(page.body.count, 100);
    assert.equal(page.body.results[0].body, '{"i":104}');
    assert.equal(page.body.results[99].body, '{"i":5}');
    const others = await call<ReceivedPage>(server, 'GET', '/api/organization/webhook/received/', {
      token: other.token,
    });
    assert.equal(others.body.count, 1);
  });

  test("the service's own deliveries to its test receiver verify", async () => {
    const merchant = await createTestMerchant(server);
    await setEndpoint(server, merchant, `${server.url}/api/v1/webhooks/${merchant.slug}/`);
    const sent = await call<{ delivery_id: string }>(server, 'POST', '/api/organization/webhook/test/', {
      token: merchant.token,
    });
    assert.equal(sent.status, 202);
    let results: Received[] = [];
    await waitUntil(async () => {
      const page = await call<ReceivedPage>(server, 'GET', '/api/organization/webhook/received/', {
        token: merchant.token,
      });
      results = page.body.results;
      return results.length > 0;
    });
    assert.equal(results[0].delivery_id, sent.body.delivery_id);
    assert.equal(results[0].event, 'webhook.test');
    assert.equal(results[0].signature_valid, true);
    assert.equal(results[0].content_type, 'application/json');
  });
});
