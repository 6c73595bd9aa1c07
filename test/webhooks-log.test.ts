import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { verify } from '@octokit/webhooks-methods';
import { emitEvent } from '../src/modules/events/emit.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import {
  type Delivery,
  header,
  type Receiver,
  setEndpoint,
  startReceiver,
  UUID,
  waitUntil,
} from './webhooks-helpers.ts';

describe('the webhook delivery log, redelivery and resend', () => {
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

  before(async () => {
    receiver = await startReceiver();
  });
  after(() => receiver.close());

  test('a redelivery is a new delivery with a new id', async () => {
    const { merchant, secret } = await merchantWithEndpoint();
    const sent = await call<{ delivery_id: string }>(server, 'POST', '/api/organization/webhook/test/', {
      token: merchant.token,
    });
    await receiver.waitFor(1, 10_000, mine(merchant));
    const again = await call<Delivery>(
      server,
      'POST',
      `/api/organization/webhook/deliveries/${sent.body.delivery_id}/redeliver/`,
      { token: merchant.token },
    );
    assert.equal(again.status, 201);
    assert.match(again.body.id, UUID);
    assert.notEqual(again.body.id, sent.body.delivery_id);
    assert.equal(again.body.redelivery_of, sent.body.delivery_id);
    const requests = await receiver.waitFor(2, 10_000, mine(merchant));
    assert.equal(header(requests[1], 'x-webhook-delivery-id'), again.body.id);
    assert.equal(requests[1].text, requests[0].text);
    assert.equal(await verify(secret, requests[1].text, header(requests[1], 'x-webhook-signature')), true);
  });

  test('an answer whose kept body holds a NUL or half a character is logged (each as U+FFFD), and the retry goes out', async () => {
    // PostgreSQL's text holds no NUL: stored as it came, the outcome's whole flush failed and its
    // deliveries were sent again and again.
    const { merchant } = await merchantWithEndpoint();
    const respond = receiver.respond;
    let answered = 0;
    receiver.respond = (request, index) =>
      mine(merchant)(request) && answered++ === 0
        ? { status: 500, body: `bad\u0000body${'x'.repeat(1023 - 8)}😀` }
        : respond(request, index);
    try {
      const sent = await call<{ delivery_id: string }>(server, 'POST', '/api/organization/webhook/test/', {
        token: merchant.token,
      });
      let delivery: (Delivery & { attempts: { response_body: string | null }[] }) | undefined;
      await waitUntil(
        async () => {
          const read = await call<typeof delivery>(
            server,
            'GET',
            `/api/organization/webhook/deliveries/${sent.body.delivery_id}/`,
            { token: merchant.token },
          );
          delivery = read.body;
          return read.status === 200 && delivery?.status === 'delivered';
        },
        10_000,
        'the delivery delivered',
      );
      assert.equal(delivery?.attempt_count, 2);
      assert.equal(delivery?.attempts[0].response_status, 500);
      // The first kilobyte is kept: its cut falls inside the emoji, whose lone first half is stored as U+FFFD.
      assert.equal(delivery?.attempts[0].response_body, `bad\ufffdbody${'x'.repeat(1023 - 8)}\ufffd`);
      assert.equal(receiver.requests.filter(mine(merchant)).length, 2, 'sent twice: once, and its retry');
    } finally {
      receiver.respond = respond;
    }
  });

  test('events from before the endpoint was set are not delivered', async () => {
    const merchant = await createTestMerchant(server);
    const eventId = await emitEvent(server.ctx.db, {
      organizationId: merchant.organizationId,
      environment: 'production',
      type: 'payout.status_changed',
      subject: 'PO0000000000000002',
      payload: { payout_id: 'PO0000000000000002', status: 'completed' },
      now: new Date().toISOString(),
    });
    await waitUntil(async () => {
      const row = await server.ctx.db
        .selectFrom('events')
        .select('dispatched_at')
        .where('id', '=', eventId)
        .executeTakeFirstOrThrow();
      return row.dispatched_at !== null;
    });
    await setEndpoint(server, merchant, `${receiver.url}/hooks/${merchant.slug}`);
    // The event was dispatched while there was no endpoint: no delivery was made for it, and none can
    // be later (an event is dispatched once). A fact of the database, not of how long we waited.
    const deliveriesOfOldEvent = await server.ctx.db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('event_id', '=', eventId)
      .execute();
    assert.deepEqual(deliveriesOfOldEvent, []);
    await call(server, 'POST', '/api/organization/webhook/test/', { token: merchant.token });
    await receiver.waitFor(1, 10_000, mine(merchant));
    const events = receiver.requests
      .filter(mine(merchant))
      .map((request) => header(request, 'x-webhook-event'));
    assert.deepEqual(events, ['webhook.test']);
  });

  test('the delivery log pages and filters, and refuses bad parameters', async () => {
    const { merchant } = await merchantWithEndpoint();
    for (let i = 0; i < 3; i += 1) {
      await call(server, 'POST', '/api/organization/webhook/test/', { token: merchant.token });
    }
    await emitEvent(server.ctx.db, {
      organizationId: merchant.organizationId,
      environment: 'production',
      type: 'refund.status_changed',
      subject: 'RF0000000000000003',
      payload: { refund_id: 'RF0000000000000003', status: 'completed' },
      now: new Date().toISOString(),
    });
    await receiver.waitFor(4, 10_000, mine(merchant));
    const list = (query: string) =>
      call<{ count: number; next: string | null; previous: string | null; results: Delivery[] }>(
        server,
        'GET',
        `/api/organization/webhook/deliveries/${query}`,
        { token: merchant.token },
      );
    await waitUntil(async () => (await list('?status=delivered')).body.count === 4);
    const page = await list('?page_size=3');
    assert.equal(page.body.count, 4);
    assert.equal(page.body.results.length, 3);
    assert.ok(page.body.next?.includes('page=2'));
    assert.equal(page.body.previous, null);
    const second = await list('?page_size=3&page=2');
    assert.equal(second.body.results.length, 1);
    assert.ok(second.body.previous);
    // The first page's link has no page parameter (DRF), the rest of the query is kept.
    assert.equal(new URL(second.body.previous).searchParams.get('page'), null);
    assert.equal(new URL(second.body.previous).searchParams.get('page_size'), '3');
    const refunds = await list('?event=refund.status_changed');
    assert.equal(refunds.body.count, 1);
    assert.equal(refunds.body.results[0].event, 'refund.status_changed');
    assert.equal((await list('?status=failed')).body.count, 0);
    const bySubject = await list('?subject=RF0000000000000003');
    assert.equal(bySubject.body.count, 1);
    assert.equal(bySubject.body.results[0].event, 'refund.status_changed');
    assert.equal((await list('?status=nope')).status, 400);
    assert.equal((await list('?event=nope')).status, 400);
    assert.equal((await list('?page_size=101')).status, 400);
    assert.equal((await list('?page=0')).status, 400);
    assert.equal((await list('?page=9')).status, 404);
  });

  test("another organization's deliveries are a 404 and never listed", async () => {
    const { merchant } = await merchantWithEndpoint();
    const other = await createTestMerchant(server, 'Other');
    const sent = await call<{ delivery_id: string }>(server, 'POST', '/api/organization/webhook/test/', {
      token: merchant.token,
    });
    const id = sent.body.delivery_id;
    const asOther = { token: other.token };
    assert.equal(
      (await call(server, 'GET', `/api/organization/webhook/deliveries/${id}/`, asOther)).status,
      404,
    );
    assert.equal(
      (await call(server, 'POST', `/api/organization/webhook/deliveries/${id}/redeliver/`, asOther)).status,
      404,
    );
    const listed = await call<{ count: number }>(
      server,
      'GET',
      '/api/organization/webhook/deliveries/',
      asOther,
    );
    assert.equal(listed.body.count, 0);
    assert.equal(
      (await call(server, 'GET', '/api/organization/webhook/deliveries/nope/', asOther)).status,
      404,
    );
  });

  test('test-transaction resends transaction.status_changed for a real payment, the latest by default', async () => {
    const { merchant, secret } = await merchantWithEndpoint();
    const apiKey = await createTestKey(server, merchant);
    const checkout = await call<{ checkout_url: string }>(server, 'POST', '/api/checkout/create/', {
      apiKey,
      body: {
        billing_country: 'FR',
        billing_first_name: 'Ada',
        billing_last_name: 'Lovelace',
        billing_email: 'ada@example.test',
        currency: 'EUR',
        products: [{ name: 'Tea', unit_price: 12.5, quantity: 2 }],
      },
    });
    assert.equal(checkout.status, 201, checkout.text);
    const token = checkout.body.checkout_url.split('/').pop() ?? '';
    const paid = await call(server, 'POST', `/api/checkout/${token}/pay/`, {
      body: {
        card_number: '4242424242424242',
        exp_month: 12,
        exp_year: 2040,
        cvc: '123',
        cardholder_name: 'Ada',
      },
    });
    assert.equal(paid.status, 200, paid.text);
    const transactionId = String(paid.body.transaction_id);

    // The automatic events of the payment arrive first; the resend carries the payment as it is now.
    const isTransaction = (request: { path: string; headers: Record<string, unknown> }) =>
      mine(merchant)(request) && request.headers['x-webhook-event'] === 'transaction.status_changed';
    const automatic = await receiver.waitFor(1, 10_000, isTransaction);
    const resend = async (body: unknown) =>
      call<{ delivery_id: string; transaction_id: string; detail?: string }>(
        server,
        'POST',
        '/api/organization/webhook/test-transaction/',
        { token: merchant.token, body },
      );
    const byPublicId = await resend({ transaction_id: transactionId });
    assert.equal(byPublicId.status, 202, byPublicId.text);
    assert.equal(byPublicId.body.transaction_id, transactionId);
    const numeric = await server.ctx.db
      .selectFrom('payments')
      .select('id')
      .where('public_id', '=', transactionId)
      .executeTakeFirstOrThrow();
    assert.equal((await resend({ transaction_id: String(numeric.id) })).status, 202);
    assert.equal((await resend({ transaction_id: numeric.id })).status, 202);
    const latest = await resend(undefined);
    assert.equal(latest.status, 202, latest.text);
    assert.equal(latest.body.transaction_id, transactionId);

    const requests = await receiver.waitFor(automatic.length + 4, 10_000, isTransaction);
    const resent = requests.find(
      (request) => header(request, 'x-webhook-delivery-id') === byPublicId.body.delivery_id,
    );
    assert.ok(resent);
    assert.equal(await verify(secret, resent.text, header(resent, 'x-webhook-signature')), true);
    const payload = JSON.parse(resent.text) as Record<string, unknown>;
    assert.equal(payload.event, 'transaction.status_changed');
    assert.equal(payload.transaction_id, transactionId);
    assert.equal(payload.status, 'paid');
    assert.equal(payload.gross_amount, '25.00');
    assert.equal(payload.livemode, true);
    assert.ok(Array.isArray(payload.depositAttempts) && payload.depositAttempts.length === 1);
    assert.deepEqual(
      Object.keys(payload).sort(),
      Object.keys(JSON.parse(automatic.at(-1)?.text ?? '{}')).sort(),
    );

    assert.equal((await resend({ transaction_id: 'TX0000000000000000' })).status, 404);
    assert.equal((await resend({ transaction_id: '999999999' })).status, 404);
    const other = await createTestMerchant(server, 'Other');
    await setEndpoint(server, other, `${receiver.url}/hooks/${other.slug}`);
    const foreign = await call(server, 'POST', '/api/organization/webhook/test-transaction/', {
      token: other.token,
      body: { transaction_id: transactionId },
    });
    assert.equal(foreign.status, 404);
    const none = await call(server, 'POST', '/api/organization/webhook/test-transaction/', {
      token: other.token,
    });
    assert.equal(none.status, 404);
  });
});
