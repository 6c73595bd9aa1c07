import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sealSecret } from '../src/modules/webhooks/secret.ts';
import { call, createTestMerchant, startTestServer, type TestServer } from './helpers/server.ts';
import { type Receiver, startReceiver, waitUntil } from './webhooks-helpers.ts';

interface Delivery {
  status: string;
  attempts: { response_status: number | null; error: string | null }[];
}

describe('the SSRF guard with KASSA_ENV=production', () => {
  let server: TestServer;
  let receiver: Receiver;
  before(async () => {
    server = await startTestServer({
      env: {
        KASSA_ENV: 'production',
        KASSA_WEBHOOK_ALLOW_PRIVATE: 'false',
        KASSA_ALLOW_SIMULATOR: 'true',
        KASSA_WEBHOOK_RETRY_SCHEDULE_MS: '60000',
      },
    });
    receiver = await startReceiver();
  });
  after(async () => {
    await server.close();
    await receiver.close();
  });

  test('endpoint URLs on non-public address hosts are refused at configuration', async () => {
    const merchant = await createTestMerchant(server);
    for (const url of [
      receiver.url,
      'http://localhost:8080/hooks',
      'http://127.1.2.3/',
      'http://10.0.0.5/hooks',
      'http://172.16.9.1/',
      'http://192.168.1.10/',
      'http://169.254.169.254/latest/meta-data/',
      'http://100.64.0.1/',
      'http://0.0.0.0/',
      'http://[::1]/hooks',
      'http://[fe80::1]/',
      'http://[fd00::1]/',
      'http://[::ffff:127.0.0.1]/',
      'http://[::ffff:a9fe:a9fe]/',
    ]) {
      const response = await call<{ detail: string }>(server, 'PUT', '/api/organization/webhook/', {
        token: merchant.token,
        body: { endpoint_url: url },
      });
      assert.equal(response.status, 400, url);
      assert.match(response.body.detail, /^endpoint_url: .*non-public address/, url);
    }
    const accepted = await call(server, 'PUT', '/api/organization/webhook/', {
      token: merchant.token,
      body: { endpoint_url: 'https://93.184.215.14/hooks' },
    });
    assert.equal(accepted.status, 200);
  });

  test('a stored endpoint that points at a private address is refused again at delivery', async () => {
    for (const host of [receiver.url, receiver.url.replace('127.0.0.1', 'localhost')]) {
      const merchant = await createTestMerchant(server);
      const now = new Date().toISOString();
      // As if the address had been public when it was configured (DNS changes; rows get edited).
      await server.ctx.db
        .insertInto('webhook_endpoints')
        .values({
          organization_id: merchant.organizationId,
          endpoint_url: `${host}/hooks`,
          secret_encrypted: sealSecret('whsec_test', server.ctx.config.secretKey),
          created_at: now,
          updated_at: now,
          secret_rotated_at: now,
        })
        .execute();
      const sent = await call<{ delivery_id: string }>(server, 'POST', '/api/organization/webhook/test/', {
        token: merchant.token,
      });
      assert.equal(sent.status, 202);
      let delivery: Delivery = { status: 'pending', attempts: [] };
      await waitUntil(async () => {
        const response = await call<Delivery>(
          server,
          'GET',
          `/api/organization/webhook/deliveries/${sent.body.delivery_id}/`,
          { token: merchant.token },
        );
        delivery = response.body;
        return delivery.attempts.length > 0;
      });
      assert.equal(delivery.attempts[0].response_status, null);
      assert.match(delivery.attempts[0].error ?? '', /Refused: .*(non-public address)/, host);
    }
    assert.equal(receiver.requests.length, 0);
  });
});
