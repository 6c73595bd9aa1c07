// #14 finding 7: the interface's signature covers the body only, so a captured delivery could be replayed
// with a fresh X-Webhook-Timestamp. Every delivery now also carries the Standard Webhooks headers, whose
// signature covers id, timestamp and body; the `standardwebhooks` package verifies them independently.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { sealSecret } from '../../src/modules/webhooks/secret.ts';
import type { Json } from '../helpers/checkout.ts';
import { call, createTestMerchant, startTestServer, type TestServer } from '../helpers/server.ts';
import {
  header,
  hmac,
  type Receiver,
  setEndpoint,
  standardHeaders,
  startReceiver,
} from '../webhooks-helpers.ts';

describe('security #7: Standard Webhooks headers on every delivery', () => {
  let server: TestServer;
  let receiver: Receiver;
  before(async () => {
    server = await startTestServer({ env: { KASSA_WEBHOOK_RETRY_SCHEDULE_MS: '50' } });
    receiver = await startReceiver();
  });
  after(async () => {
    await server.close();
    await receiver.close();
  });

  test('new secrets are whsec_ + standard base64 of 32 bytes, and deliveries verify with standardwebhooks', async () => {
    const merchant = await createTestMerchant(server);
    const secret = (await setEndpoint(server, merchant, `${receiver.url}/new`)) as string;
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(Buffer.from(secret.slice(6), 'base64').length, 32);
    // The first answer fails, so the same delivery is sent twice: same id, each attempt its own timestamp.
    let sentToNew = 0;
    receiver.respond = (request) =>
      request.path === '/new' && ++sentToNew === 1 ? { status: 500 } : { status: 200 };
    await call(server, 'POST', '/api/organization/webhook/test/', { token: merchant.token });
    const [first, second] = await receiver.waitFor(2, 10_000, (r) => r.path === '/new');
    for (const request of [first, second]) {
      const verified = new Webhook(secret).verify(request.text, standardHeaders(request)) as Json;
      assert.equal(verified.event, 'webhook.test');
      assert.equal(header(request, 'webhook-id'), header(request, 'x-webhook-delivery-id'));
      assert.equal(header(request, 'webhook-timestamp'), header(request, 'x-webhook-timestamp'));
      assert.equal(header(request, 'x-webhook-signature'), hmac(secret, request.body));
    }
    assert.equal(header(first, 'webhook-id'), header(second, 'webhook-id'));
  });

  test('a replay with a new timestamp, or an old capture, fails verification', async () => {
    const merchant = await createTestMerchant(server);
    const secret = (await setEndpoint(server, merchant, `${receiver.url}/replay`)) as string;
    receiver.respond = () => ({ status: 200 });
    await call(server, 'POST', '/api/organization/webhook/test/', { token: merchant.token });
    const [request] = await receiver.waitFor(1, 10_000, (r) => r.path === '/replay');
    const headers = standardHeaders(request);
    assert.doesNotThrow(() => new Webhook(secret).verify(request.text, headers));
    const fresh = String(Math.floor(Date.now() / 1000) + 1);
    assert.throws(() => new Webhook(secret).verify(request.text, { ...headers, 'webhook-timestamp': fresh }));
    const old = String(Number(headers['webhook-timestamp']) - 600);
    assert.throws(() => new Webhook(secret).verify(request.text, { ...headers, 'webhook-timestamp': old }));
    assert.throws(() => new Webhook(secret).verify(`${request.text} `, headers));
  });

  test('an endpoint whose secret predates the change (base64url) keeps working', async () => {
    const merchant = await createTestMerchant(server);
    let bytes = randomBytes(32);
    while (!/[-_]/.test(bytes.toString('base64url'))) bytes = randomBytes(32);
    const legacy = `whsec_${bytes.toString('base64url')}`;
    const now = new Date().toISOString();
    await server.ctx.db
      .insertInto('webhook_endpoints')
      .values({
        organization_id: merchant.organizationId,
        endpoint_url: `${receiver.url}/legacy`,
        secret_encrypted: sealSecret(legacy, server.ctx.config.secretKey),
        created_at: now,
        updated_at: now,
        secret_rotated_at: now,
      })
      .execute();
    receiver.respond = () => ({ status: 200 });
    await call(server, 'POST', '/api/organization/webhook/test/', { token: merchant.token });
    const [request] = await receiver.waitFor(1, 10_000, (r) => r.path === '/legacy');
    assert.equal(header(request, 'x-webhook-signature'), hmac(legacy, request.body));
    // The same 32 bytes in the standard alphabet: what a receiver gives its Standard Webhooks library.
    const standard = `whsec_${bytes.toString('base64')}`;
    assert.equal(
      (new Webhook(standard).verify(request.text, standardHeaders(request)) as Json).event,
      'webhook.test',
    );
  });
});
