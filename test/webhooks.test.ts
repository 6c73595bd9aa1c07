import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { verify } from '@octokit/webhooks-methods';
import { emitEvent } from '../src/modules/events/emit.ts';
import { MAX_PER_ENDPOINT } from '../src/modules/webhooks/worker.ts';
import {
  call,
  createTestMerchant,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import {
  type Delivery,
  header,
  hmac,
  type Receiver,
  setEndpoint,
  startReceiver,
  UUID,
  waitUntil,
} from './webhooks-helpers.ts';

describe('webhook configuration and delivery', () => {
  let server: TestServer;
  let receiver: Receiver;
  before(async () => {
    server = await startTestServer({
      env: { KASSA_WEBHOOK_RETRY_SCHEDULE_MS: '50,50,50', KASSA_WEBHOOK_TIMEOUT_MS: '500' },
    });
  });
  after(() => server.close());

  async function merchantWithEndpoint(): Promise<{ merchant: Merchant; secret: string }> {
    const merchant = await createTestMerchant(server);
    const secret = await setEndpoint(server, merchant, `${receiver.url}/hooks/${merchant.slug}`);
    assert.ok(secret);
    return { merchant, secret };
  }
  const mine = (merchant: Merchant) => (request: { path: string }) =>
    request.path === `/hooks/${merchant.slug}`;

  async function delivery(merchant: Merchant, id: string) {
    const response = await call<Delivery>(server, 'GET', `/api/organization/webhook/deliveries/${id}/`, {
      token: merchant.token,
    });
    assert.equal(response.status, 200, response.text);
    return response.body;
  }

  before(async () => {
    receiver = await startReceiver();
  });
  after(() => receiver.close());

  test('the endpoint is unset at first, and the secret is created with the first URL and shown once', async () => {
    const merchant = await createTestMerchant(server);
    const empty = await call(server, 'GET', '/api/organization/webhook/', { token: merchant.token });
    assert.deepEqual(empty.body, {
      endpoint_url: null,
      secret_preview: null,
      created_at: null,
      updated_at: null,
      previous_secret_expires_at: null,
      endpoint_problem: null,
    });

    const first = await call<Record<string, string>>(server, 'PUT', '/api/organization/webhook/', {
      token: merchant.token,
      body: { endpoint_url: 'https://merchant.example/hooks' },
    });
    assert.equal(first.status, 200);
    assert.match(first.body.raw_secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(first.body.secret_preview, `whsec_…${first.body.raw_secret.slice(-4)}`);
    assert.equal(first.body.endpoint_url, 'https://merchant.example/hooks');

    const second = await call<Record<string, string>>(server, 'PUT', '/api/organization/webhook/', {
      token: merchant.token,
      body: { endpoint_url: 'http://merchant.example/other' },
    });
    assert.equal(second.status, 200);
    assert.equal(second.body.raw_secret, undefined);
    assert.equal(second.body.secret_preview, first.body.secret_preview);

    const shown = await call<Record<string, string>>(server, 'GET', '/api/organization/webhook/', {
      token: merchant.token,
    });
    assert.equal(shown.body.endpoint_url, 'http://merchant.example/other');
    assert.equal(shown.body.endpoint_problem, null);
    assert.equal(shown.body.previous_secret_expires_at, null);
    assert.equal(shown.body.raw_secret, undefined);
    assert.ok(!shown.text.includes(first.body.raw_secret));
  });

  test('an endpoint URL that is not http(s) or missing is a 400 naming endpoint_url', async () => {
    const merchant = await createTestMerchant(server);
    for (const body of [{ endpoint_url: 'ftp://merchant.example/' }, { endpoint_url: 'not a url' }, {}]) {
      const response = await call<{ detail: string }>(server, 'PUT', '/api/organization/webhook/', {
        token: merchant.token,
        body,
      });
      assert.equal(response.status, 400);
      assert.match(response.body.detail, /^endpoint_url: /);
    }
  });

  test('an endpoint URL with credentials (userinfo) is a 400 naming endpoint_url, and nothing is stored', async () => {
    const merchant = await createTestMerchant(server);
    for (const endpoint_url of [
      'https://user:s3cret@merchant.example/hooks',
      'https://user@merchant.example/hooks',
      'https://:s3cret@merchant.example/hooks',
    ]) {
      const response = await call<{ detail: string }>(server, 'PUT', '/api/organization/webhook/', {
        token: merchant.token,
        body: { endpoint_url },
      });
      assert.equal(response.status, 400, endpoint_url);
      assert.equal(response.body.detail, 'endpoint_url: may not contain credentials (user:password@).');
    }
    const shown = await call(server, 'GET', '/api/organization/webhook/', { token: merchant.token });
    assert.equal((shown.body as { endpoint_url: unknown }).endpoint_url, null);
  });

  test('rotate, test and test-transaction need an endpoint first (400)', async () => {
    const merchant = await createTestMerchant(server);
    for (const path of ['rotate/', 'test/', 'test-transaction/']) {
      const response = await call(server, 'POST', `/api/organization/webhook/${path}`, {
        token: merchant.token,
      });
      assert.equal(response.status, 400, path);
    }
  });

  test('the webhook endpoints need a dashboard session', async () => {
    const response = await call(server, 'GET', '/api/organization/webhook/');
    assert.equal(response.status, 401);
  });

  test('webhook.test arrives signed over the raw body with every header', async () => {
    const { merchant, secret } = await merchantWithEndpoint();
    const before = Math.floor(Date.now() / 1000);
    const sent = await call<{ delivery_id: string; event: string }>(
      server,
      'POST',
      '/api/organization/webhook/test/',
      {
        token: merchant.token,
      },
    );
    assert.equal(sent.status, 202);
    assert.match(sent.body.delivery_id, UUID);
    const [request] = await receiver.waitFor(1, 10_000, mine(merchant));
    assert.equal(header(request, 'content-type'), 'application/json');
    assert.equal(header(request, 'x-webhook-event'), 'webhook.test');
    assert.equal(header(request, 'x-webhook-delivery-id'), sent.body.delivery_id);
    const timestamp = Number(header(request, 'x-webhook-timestamp'));
    assert.ok(timestamp >= before && timestamp <= Math.floor(Date.now() / 1000) + 1);
    const signature = header(request, 'x-webhook-signature');
    assert.equal(signature, hmac(secret, request.body));
    assert.equal(await verify(secret, request.text, signature), true);
    assert.deepEqual(JSON.parse(request.text), {
      event: 'webhook.test',
      message: 'This is a test webhook from Kassa.',
      livemode: true,
    });

    await waitUntil(async () => (await delivery(merchant, sent.body.delivery_id)).status === 'delivered');
    const logged = await delivery(merchant, sent.body.delivery_id);
    assert.equal(logged.attempt_count, 1);
    assert.equal(logged.attempts.length, 1);
    assert.equal(logged.attempts[0].response_status, 200);
    assert.equal(typeof logged.attempts[0].duration_ms, 'number');
  });

  test('outbox events of every type are delivered with livemode from their environment', async () => {
    const { merchant, secret } = await merchantWithEndpoint();
    const now = new Date().toISOString();
    await server.ctx.db.transaction().execute(async (trx) => {
      await emitEvent(trx, {
        organizationId: merchant.organizationId,
        environment: 'production',
        type: 'transaction.status_changed',
        subject: 'TX0000000000000001',
        payload: { transaction_id: 'TX0000000000000001', status: 'paid', depositAttempts: [] },
        now,
      });
      await emitEvent(trx, {
        organizationId: merchant.organizationId,
        environment: 'sandbox',
        type: 'refund.status_changed',
        subject: 'RF0000000000000001',
        payload: { refund_id: 'RF0000000000000001', status: 'processing' },
        now,
      });
      await emitEvent(trx, {
        organizationId: merchant.organizationId,
        environment: 'production',
        type: 'payout.status_changed',
        subject: 'PO0000000000000001',
        payload: { payout_id: 'PO0000000000000001', status: 'completed' },
        now,
      });
    });
    const requests = await receiver.waitFor(3, 10_000, mine(merchant));
    const byEvent = new Map(requests.map((request) => [header(request, 'x-webhook-event'), request]));
    assert.deepEqual([...byEvent.keys()].sort(), [
      'payout.status_changed',
      'refund.status_changed',
      'transaction.status_changed',
    ]);
    for (const [event, request] of byEvent) {
      const body = JSON.parse(request.text) as { event: string; livemode: boolean };
      assert.equal(body.event, event);
      assert.equal(body.livemode, event !== 'refund.status_changed');
      assert.equal(await verify(secret, request.text, header(request, 'x-webhook-signature')), true);
    }
  });

  test('after rotation only the new secret verifies', async () => {
    const { merchant, secret: old } = await merchantWithEndpoint();
    const rotated = await call<{ raw_secret: string; secret_preview: string }>(
      server,
      'POST',
      '/api/organization/webhook/rotate/',
      { token: merchant.token },
    );
    assert.equal(rotated.status, 200);
    assert.notEqual(rotated.body.raw_secret, old);
    assert.equal(rotated.body.secret_preview, `whsec_…${rotated.body.raw_secret.slice(-4)}`);
    await call(server, 'POST', '/api/organization/webhook/test/', { token: merchant.token });
    const [request] = await receiver.waitFor(1, 10_000, mine(merchant));
    const signature = header(request, 'x-webhook-signature');
    assert.equal(await verify(rotated.body.raw_secret, request.text, signature), true);
    assert.equal(await verify(old, request.text, signature), false);
  });

  test('a receiver failing twice gets the third attempt with the same delivery id', async () => {
    const { merchant } = await merchantWithEndpoint();
    const path = `/hooks/${merchant.slug}`;
    const previous = receiver.respond;
    let failures = 0;
    receiver.respond = (request, index) => {
      if (request.path === path && failures < 2) {
        failures += 1;
        return { status: 500, body: 'boom' };
      }
      return previous(request, index);
    };
    const sent = await call<{ delivery_id: string }>(server, 'POST', '/api/organization/webhook/test/', {
      token: merchant.token,
    });
    const requests = await receiver.waitFor(3, 10_000, mine(merchant));
    assert.deepEqual(
      requests.map((request) => header(request, 'x-webhook-delivery-id')),
      [sent.body.delivery_id, sent.body.delivery_id, sent.body.delivery_id],
    );
    await waitUntil(async () => (await delivery(merchant, sent.body.delivery_id)).status === 'delivered');
    const logged = await delivery(merchant, sent.body.delivery_id);
    assert.deepEqual(
      logged.attempts.map((attempt) => [attempt.attempt, attempt.response_status]),
      [
        [1, 500],
        [2, 500],
        [3, 200],
      ],
    );
    assert.equal(logged.attempt_count, 3);
  });

  test('a delivery that fails every scheduled attempt ends failed after 1 + retries attempts', async () => {
    const merchant = await createTestMerchant(server);
    await setEndpoint(server, merchant, `${receiver.url}/always-fails/${merchant.slug}`);
    const previous = receiver.respond;
    receiver.respond = (request, index) =>
      request.path.startsWith('/always-fails/')
        ? { status: 302, headers: { location: '/elsewhere' } }
        : previous(request, index);
    const sent = await call<{ delivery_id: string }>(server, 'POST', '/api/organization/webhook/test/', {
      token: merchant.token,
    });
    await waitUntil(async () => (await delivery(merchant, sent.body.delivery_id)).status === 'failed');
    const logged = await delivery(merchant, sent.body.delivery_id);
    assert.equal(logged.attempts.length, 4);
    assert.ok(logged.attempts.every((attempt) => attempt.response_status === 302));
    assert.ok(
      !receiver.requests.some((request) => request.path === '/elsewhere'),
      'redirects are not followed',
    );
  });

  test('Retry-After delays the next attempt', async () => {
    const { merchant } = await merchantWithEndpoint();
    const path = `/hooks/${merchant.slug}`;
    const previous = receiver.respond;
    let first = true;
    receiver.respond = (request, index) => {
      if (request.path === path && first) {
        first = false;
        return { status: 503, headers: { 'retry-after': '1' } };
      }
      return previous(request, index);
    };
    await call(server, 'POST', '/api/organization/webhook/test/', { token: merchant.token });
    const [one, two] = await receiver.waitFor(2, 10_000, mine(merchant));
    assert.ok(two.at - one.at >= 950, `retried after ${two.at - one.at} ms`);
  });

  test('a slow endpoint with a backlog gets its share of the sends; another endpoint is served meanwhile', async () => {
    const slow = await startReceiver();
    slow.respond = () => ({ status: 200, body: 'ok', delayMs: 400 });
    try {
      const crowded = await createTestMerchant(server);
      await setEndpoint(server, crowded, `${slow.url}/hooks/${crowded.slug}`);
      const { merchant: other } = await merchantWithEndpoint();
      const emit = (merchant: Merchant, count: number) =>
        server.ctx.db.transaction().execute(async (trx) => {
          for (let index = 0; index < count; index++) {
            await emitEvent(trx, {
              organizationId: merchant.organizationId,
              environment: 'sandbox',
              type: 'refund.status_changed',
              subject: `RF${String(index).padStart(16, '0')}`,
              payload: { refund_id: `RF${String(index).padStart(16, '0')}`, status: 'processing' },
              now: new Date().toISOString(),
            });
          }
        });
      await emit(crowded, 40);
      await slow.waitFor(MAX_PER_ENDPOINT, 5_000);
      const started = Date.now();
      await emit(other, 3);
      const served = await receiver.waitFor(3, 5_000, mine(other));
      assert.ok(
        Math.max(...served.map((request) => request.at)) - started < 1_000,
        'the other endpoint did not wait for the slow backlog',
      );
      await slow.waitFor(40, 20_000);
      // At most MAX_PER_ENDPOINT requests were ever open at the slow receiver at once. (Counted by the
      // receiver itself: arrival times plus 400 ms misjudge it under load, since a timer set late in a
      // long event-loop turn is due from the turn's start.)
      assert.ok(slow.maxOpen <= MAX_PER_ENDPOINT, `up to ${slow.maxOpen} at once`);
      assert.ok(slow.maxOpen >= 2, 'the slow endpoint still got parallel sends');
    } finally {
      await slow.close();
    }
  });

  test('a receiver slower than the timeout is an attempt with a timeout error', async () => {
    const { merchant } = await merchantWithEndpoint();
    const path = `/hooks/${merchant.slug}`;
    const previous = receiver.respond;
    let first = true;
    receiver.respond = (request, index) => {
      if (request.path === path && first) {
        first = false;
        return { status: 200, delayMs: 1500 };
      }
      return previous(request, index);
    };
    const sent = await call<{ delivery_id: string }>(server, 'POST', '/api/organization/webhook/test/', {
      token: merchant.token,
    });
    await waitUntil(async () => (await delivery(merchant, sent.body.delivery_id)).status === 'delivered');
    const logged = await delivery(merchant, sent.body.delivery_id);
    assert.equal(logged.attempts[0].response_status, null);
    assert.match(logged.attempts[0].error ?? '', /Timed out after 500 ms/);
    assert.equal(logged.attempts[1].response_status, 200);
  });
});
