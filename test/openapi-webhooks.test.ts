// What Kassa really POSTs to a merchant's endpoint matches the OpenAPI document's `webhooks` section:
// each body a real loopback receiver gets is validated (ajv, through checkWebhookBody) against the
// request body the served /api/openapi.json gives its event. Covered: a paid payment after a declined
// attempt, with metadata and client_reference_id; a checkout canceled before any attempt; a sandbox
// subscription's renewal (subscription_id set); a refund's events; and the dashboard's test event.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CARDS, createCheckout, pay } from './helpers/checkout.ts';
import { checkWebhookBody } from './helpers/conformance.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  DB_KIND,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import { subscribeWithSavedCard } from './helpers/subscriptions.ts';
import { type ReceivedRequest, type Receiver, setEndpoint, startReceiver } from './webhooks-helpers.ts';

type Body = Record<string, unknown>;

describe(`webhook bodies as delivered match the OpenAPI document (${DB_KIND})`, () => {
  let server: TestServer;
  let receiver: Receiver;
  let merchant: Merchant;
  let key: string;
  before(async () => {
    server = await startTestServer({ env: { KASSA_SIM_REFUND_DELAY_MS: '100' } });
    receiver = await startReceiver();
    merchant = await createTestMerchant(server, 'Webhook Schema Shop');
    await setEndpoint(server, merchant, `${receiver.url}/hooks`);
    key = await createTestKey(server, merchant);
  });
  after(async () => {
    await server.close();
    await receiver.close();
  });

  const bodyOf = (request: ReceivedRequest) => JSON.parse(request.text) as Body;

  /** Waits for `count` delivered bodies that `match`, and checks each against the document. */
  async function delivered(count: number, match: (body: Body) => boolean): Promise<Body[]> {
    const requests = await receiver.waitFor(count, 15_000, (request) => match(bodyOf(request)));
    const bodies = requests.map(bodyOf);
    for (const body of bodies) await checkWebhookBody(server.url, body);
    return bodies;
  }

  test('a paid payment with metadata and client_reference_id, after a declined attempt', async () => {
    const checkout = await createCheckout(server, key, {
      metadata: { order: 'A-17', channel: 'web' },
      client_reference_id: 'cart-99',
    });
    assert.equal((await pay(server, checkout.token, CARDS.declined)).body.status, 'CHECKOUT_PENDING');
    assert.equal((await pay(server, checkout.token, CARDS.success)).body.payment_status, 'paid');
    const bodies = await delivered(
      3,
      (body) => body.event === 'transaction.status_changed' && body.order_id === checkout.checkout_id,
    );
    const paid = bodies.find((body) => body.status === 'paid');
    assert.ok(paid, JSON.stringify(bodies));
    // The fields the document once left out (and, with additionalProperties: false, forbade).
    assert.deepEqual(paid.metadata, { order: 'A-17', channel: 'web' });
    assert.equal(paid.client_reference_id, 'cart-99');
    assert.equal(paid.subscription_id, null);
    assert.equal(typeof paid.simulated, 'boolean');
    assert.equal((paid.depositAttempts as Body[]).length, 2);
  });

  test('a checkout canceled before any attempt', async () => {
    const checkout = await createCheckout(server, key);
    assert.equal((await call(server, 'POST', `/api/checkout/${checkout.token}/cancel/`)).status, 200);
    const [canceled] = await delivered(
      1,
      (body) => body.event === 'transaction.status_changed' && body.order_id === checkout.checkout_id,
    );
    assert.equal(canceled.transaction_id, null);
    assert.equal(canceled.status, 'canceled');
    assert.deepEqual(canceled.metadata, {});
    assert.equal(canceled.client_reference_id, null);
  });

  test("a subscription's renewal payment carries its subscription_id", async () => {
    const plan = await call<{ id: string }>(server, 'POST', '/api/subscriptions/plans/', {
      token: merchant.token,
      body: { name: 'Sandbox monthly', amount: '9.99', interval: 'month', environment: 'sandbox' },
    });
    assert.equal(plan.status, 201, plan.text);
    const subscription = await subscribeWithSavedCard(server, {
      organizationId: merchant.organizationId,
      planPublicId: plan.body.id,
      cardNumber: '4242424242424242',
      anchorAt: new Date(Date.UTC(2031, 0, 31, 9, 30)).toISOString(),
      testClock: true,
    });
    const advanced = await call<{ cycles: { status: string }[] }>(
      server,
      'POST',
      `/api/subscriptions/${subscription.publicId}/advance-clock/`,
      { token: merchant.token, body: { days: 1 } },
    );
    assert.equal(advanced.status, 200, advanced.text);
    assert.equal(advanced.body.cycles[0]?.status, 'paid');
    const bodies = await delivered(
      1,
      (body) =>
        body.event === 'transaction.status_changed' &&
        body.subscription_id === subscription.publicId &&
        body.status === 'paid',
    );
    assert.equal(bodies[0].livemode, false);
    assert.equal(bodies[0].simulated, true);
  });

  test("a refund's refund.status_changed and its payment's events", async () => {
    const checkout = await createCheckout(server, key);
    const paid = await pay(server, checkout.token, CARDS.success);
    const transactionId = paid.body.transaction_id as string;
    const refund = await call(server, 'POST', `/api/transactions/${transactionId}/refund/`, {
      apiKey: key,
      body: { reason: 'Customer changed their mind', amount: '10.00' },
    });
    assert.equal(refund.status, 200, refund.text);
    const refunds = await delivered(
      2,
      (body) => body.event === 'refund.status_changed' && body.transaction_id === transactionId,
    );
    assert.deepEqual(refunds.map((body) => body.status).sort(), ['completed', 'processing']);
    await delivered(
      3,
      (body) => body.event === 'transaction.status_changed' && body.transaction_id === transactionId,
    );
  });

  test('the test event sent from the dashboard', async () => {
    const sent = await call(server, 'POST', '/api/organization/webhook/test/', { token: merchant.token });
    assert.equal(sent.status, 202, sent.text);
    await delivered(1, (body) => body.event === 'webhook.test');
  });
});
