// An endpoint URL with credentials (https://user:password@host/…) stored before such URLs were refused
// at configuration (a 400 since then): the worker never sends to it (no request, no Authorization
// header), records each attempt as failed with a message that says what to do, and keeps retrying on
// the schedule; GET /organization/webhook/ names the problem and masks the password; setting the URL
// again without credentials lets the waiting deliveries through.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { emitEvent } from '../src/modules/events/emit.ts';
import { CREDENTIALS_PROBLEM, CREDENTIALS_REFUSED } from '../src/modules/webhooks/endpoint-url.ts';
import { call, createTestMerchant, startTestServer, type TestServer } from './helpers/server.ts';
import { header, hmac, type Receiver, setEndpoint, startReceiver, waitUntil } from './webhooks-helpers.ts';

interface Attempt {
  url: string;
  response_status: number | null;
  duration_ms: number;
  error: string | null;
}
interface LoggedDelivery {
  id: string;
  status: string;
  next_attempt_at: string | null;
  last_error: string | null;
  attempts: Attempt[];
}
interface Endpoint {
  endpoint_url: string | null;
  endpoint_problem: string | null;
}

const PASSWORD = 's3cret-pw';

describe('a stored endpoint URL with credentials', () => {
  let server: TestServer;
  let receiver: Receiver;
  before(async () => {
    // Retries every second for a while: long enough to fix the URL before the delivery fails for good.
    server = await startTestServer({
      env: { KASSA_WEBHOOK_RETRY_SCHEDULE_MS: '1000,1000,1000,1000,1000,1000,1000,1000' },
    });
    receiver = await startReceiver();
  });
  after(async () => {
    await server.close();
    await receiver.close();
  });

  test('is never sent to: each attempt fails without a request, GET says why, and a fixed URL gets the retries', async () => {
    const merchant = await createTestMerchant(server);
    const path = `/hooks/${merchant.slug}`;
    const secret = (await setEndpoint(server, merchant, `${receiver.url}${path}`)) as string;
    // As a row written before credentials were refused would be.
    const withCredentials = receiver.url.replace('http://', `http://merchant:${PASSWORD}@`) + path;
    await server.ctx.db
      .updateTable('webhook_endpoints')
      .set({ endpoint_url: withCredentials })
      .where('organization_id', '=', merchant.organizationId)
      .execute();

    const shown = await call<Endpoint>(server, 'GET', '/api/organization/webhook/', {
      token: merchant.token,
    });
    assert.equal(shown.status, 200);
    assert.equal(shown.body.endpoint_url, receiver.url.replace('http://', 'http://merchant:****@') + path);
    assert.equal(shown.body.endpoint_problem, CREDENTIALS_PROBLEM);

    // A test delivery (claimed as a due delivery) and an outbox event (claimed as a first delivery).
    const sent = await call<{ delivery_id: string }>(server, 'POST', '/api/organization/webhook/test/', {
      token: merchant.token,
    });
    assert.equal(sent.status, 202);
    await server.ctx.db.transaction().execute((trx) =>
      emitEvent(trx, {
        organizationId: merchant.organizationId,
        environment: 'production',
        type: 'payout.status_changed',
        subject: 'PO0000000000000001',
        payload: { payout_id: 'PO0000000000000001', status: 'completed' },
        now: new Date().toISOString(),
      }),
    );
    const deliveries = async () => {
      const page = await call<{ results: { id: string }[] }>(
        server,
        'GET',
        '/api/organization/webhook/deliveries/',
        { token: merchant.token },
      );
      return Promise.all(
        page.body.results.map(
          async (delivery) =>
            (
              await call<LoggedDelivery>(
                server,
                'GET',
                `/api/organization/webhook/deliveries/${delivery.id}/`,
                { token: merchant.token },
              )
            ).body,
        ),
      );
    };
    let logged: LoggedDelivery[] = [];
    await waitUntil(
      async () => {
        logged = await deliveries();
        return logged.length === 2 && logged.every((delivery) => delivery.attempts.length >= 1);
      },
      10_000,
      'both deliveries to be attempted',
    );
    for (const delivery of logged) {
      const [first] = delivery.attempts;
      assert.equal(first.response_status, null);
      assert.equal(first.error, CREDENTIALS_REFUSED);
      assert.equal(first.duration_ms, 0);
      assert.equal(first.url, shown.body.endpoint_url, 'the attempt shows the URL with its password masked');
      assert.equal(delivery.last_error, CREDENTIALS_REFUSED);
      // Retried on the schedule like any failed attempt, so that a fixed URL gets it.
      assert.equal(delivery.status, 'pending');
      assert.ok(delivery.next_attempt_at);
    }
    assert.equal(receiver.requests.filter((request) => request.path === path).length, 0);
    // Nothing stored or shown holds the password: the attempts were recorded masked.
    const attemptUrls = await server.ctx.db
      .selectFrom('webhook_attempts as a')
      .innerJoin('webhook_deliveries as d', 'd.id', 'a.delivery_id')
      .select('a.url')
      .where('d.organization_id', '=', merchant.organizationId)
      .execute();
    assert.ok(attemptUrls.length >= 2);
    for (const { url } of attemptUrls) assert.equal(url.includes(PASSWORD), false, url);

    // The merchant sets the URL again without credentials: the waiting deliveries arrive at the next retry.
    await setEndpoint(server, merchant, `${receiver.url}${path}`);
    const fixed = await call<Endpoint>(server, 'GET', '/api/organization/webhook/', {
      token: merchant.token,
    });
    assert.equal(fixed.body.endpoint_problem, null);
    // The audit entry of the change names the old URL with its password masked too.
    const audit = await call<{ results: { details: { from: string | null; to: string } }[] }>(
      server,
      'GET',
      '/api/organization/audit-log/?action=webhook.endpoint_changed',
      { token: merchant.token },
    );
    assert.deepEqual(audit.body.results[0]?.details, {
      from: shown.body.endpoint_url,
      to: `${receiver.url}${path}`,
    });
    const arrived = await receiver.waitFor(2, 10_000, (request) => request.path === path);
    for (const request of arrived) {
      assert.equal(request.headers.authorization, undefined);
      assert.equal(header(request, 'x-webhook-signature'), hmac(secret, request.body));
    }
    await waitUntil(
      async () => (await deliveries()).every((delivery) => delivery.status === 'delivered'),
      10_000,
      'both deliveries to be delivered',
    );
  });

  test('an attempt recorded with the password before is shown with it masked', async () => {
    const merchant = await createTestMerchant(server);
    const path = `/hooks/${merchant.slug}`;
    await setEndpoint(server, merchant, `${receiver.url}${path}`);
    const sent = await call<{ delivery_id: string }>(server, 'POST', '/api/organization/webhook/test/', {
      token: merchant.token,
    });
    await receiver.waitFor(1, 10_000, (request) => request.path === path);
    const detail = () =>
      call<LoggedDelivery>(server, 'GET', `/api/organization/webhook/deliveries/${sent.body.delivery_id}/`, {
        token: merchant.token,
      });
    await waitUntil(async () => (await detail()).body.attempts.length === 1, 10_000, 'the attempt');
    const withCredentials = receiver.url.replace('http://', `http://merchant:${PASSWORD}@`) + path;
    await server.ctx.db
      .updateTable('webhook_attempts')
      .set({ url: withCredentials })
      .where('delivery_id', 'in', (eb) =>
        eb.selectFrom('webhook_deliveries').select('id').where('delivery_id', '=', sent.body.delivery_id),
      )
      .execute();
    const shown = await detail();
    assert.equal(shown.body.attempts[0].url, receiver.url.replace('http://', 'http://merchant:****@') + path);
    assert.equal(shown.text.includes(PASSWORD), false);
  });
});
