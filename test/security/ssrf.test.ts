// #14 finding 5: the SSRF guard was on in production only and missed ranges (IPv4-compatible ::/96, 6to4,
// TEST-NETs, NAT64, ...). It is now on in every environment unless KASSA_WEBHOOK_ALLOW_PRIVATE=true, with
// the ranges taken from IANA's special-purpose registries; the service's own test receiver stays allowed.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Json } from '../helpers/checkout.ts';
import { call, createTestMerchant, startTestServer, type TestServer } from '../helpers/server.ts';
import { type Receiver, startReceiver, waitUntil } from '../webhooks-helpers.ts';

describe('security #5: the SSRF guard is on by default, with the special-purpose ranges', () => {
  let server: TestServer;
  let receiver: Receiver;
  before(async () => {
    // KASSA_ENV=test, as in development: the guard must hold without KASSA_ENV=production.
    server = await startTestServer({ env: { KASSA_WEBHOOK_ALLOW_PRIVATE: 'false' } });
    receiver = await startReceiver();
  });
  after(async () => {
    await server.close();
    await receiver.close();
  });

  const put = (token: string, url: string) =>
    call<Json>(server, 'PUT', '/api/organization/webhook/', { token, body: { endpoint_url: url } });

  test('loopback, private, reserved, documentation and transition addresses are refused', async () => {
    const merchant = await createTestMerchant(server);
    for (const url of [
      receiver.url,
      'http://127.0.0.1:9/',
      'http://192.0.2.10/', // TEST-NET-1
      'http://198.51.100.7/', // TEST-NET-2
      'http://203.0.113.9/', // TEST-NET-3
      'http://198.18.0.1/', // benchmarking
      'http://192.0.0.8/', // IETF protocol assignments
      'http://240.0.0.1/', // reserved
      'http://0.1.2.3/', // "this network"
      'http://[::7f00:1]/', // IPv4-compatible ::127.0.0.1
      'http://[::a00:1]/', // IPv4-compatible ::10.0.0.1
      'http://[2002:7f00:1::1]/', // 6to4 of 127.0.0.1
      'http://[2002:808:808::1]/', // 6to4 of a public address: still a transition address
      'http://[64:ff9b::a00:1]/', // NAT64 of 10.0.0.1
      'http://[64:ff9b::808:808]/', // NAT64 of 8.8.8.8: a transition address
      'http://[64:ff9b:1::1]/', // local-use NAT64
      'http://[2001::1]/', // Teredo
      'http://[2001:db8::1]/', // documentation
      'http://[3fff::1]/', // documentation (RFC 9637)
      'http://[100::1]/', // discard-only
      'http://[fec0::1]/', // site-local
      'http://[::ffff:192.168.1.1]/', // IPv4-mapped
    ]) {
      const response = await put(merchant.token, url);
      assert.equal(response.status, 400, url);
      assert.match(response.body.detail as string, /^endpoint_url: .*non-public address/, url);
    }
    assert.equal((await put(merchant.token, 'https://93.184.215.14/hooks')).status, 200);
  });

  test("the service's own public test receiver is always allowed, and deliveries reach it", async () => {
    const merchant = await createTestMerchant(server);
    const own = `${server.url}/api/v1/webhooks/${merchant.slug}/`;
    assert.equal((await put(merchant.token, own)).status, 200);
    const sent = await call<Json>(server, 'POST', '/api/organization/webhook/test/', {
      token: merchant.token,
    });
    assert.equal(sent.status, 202);
    await waitUntil(
      async () => {
        const received = await call<Json>(server, 'GET', '/api/organization/webhook/received/', {
          token: merchant.token,
        });
        return (received.body.count as number) > 0;
      },
      10_000,
      'the test receiver to get the delivery',
    );
    // Another path on the same origin is not the receiver.
    assert.equal((await put(merchant.token, `${server.url}/api/organization/`)).status, 400);
  });
});
