import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  attemptsOf,
  CARDS,
  createCheckout,
  eventsOf,
  type Json,
  pay,
  paymentRow,
  syncStatus,
} from './helpers/checkout.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';

const SETTLE_DELAY_MS = 5_000;

describe('sandbox_simulate scripts, driven through the hosted step and sync-status', () => {
  let server: TestServer;
  let merchant: Merchant;
  let sandboxKey: string;
  let liveKey: string;
  let offsetMs = 0;
  before(async () => {
    server = await startTestServer({
      worker: false,
      clock: () => new Date(Date.now() + offsetMs),
      env: { KASSA_SIM_SETTLE_DELAY_MS: String(SETTLE_DELAY_MS) },
    });
    merchant = await createTestMerchant(server, 'Sandbox Shop');
    sandboxKey = await createTestKey(server, merchant, { environment: 'sandbox' });
    liveKey = await createTestKey(server, merchant);
  });
  after(() => server.close());

  const sandboxCheckout = (simulate?: string) =>
    createCheckout(server, sandboxKey, simulate ? { sandbox_simulate: simulate } : {}, '/sandbox/api');

  async function settlements(paymentPublicId: string): Promise<number> {
    const payment = await paymentRow(server, paymentPublicId);
    const rows = await server.ctx.db
      .selectFrom('wallet_movements')
      .select('id')
      .where('kind', '=', 'settlement')
      .where('reference_id', '=', payment.id)
      .execute();
    return rows.length;
  }

  test('omitted: PAYMENT_SUCCESS with the deposit succeeded, SUCCESS, wallet credited', async () => {
    const checkout = await sandboxCheckout();
    const paid = await pay(server, checkout.token, CARDS.declined);
    assert.equal(paid.body.payment_status, 'processing', 'without a script the card decides');
    const retried = await pay(server, checkout.token, CARDS.success);
    assert.equal(retried.body.status, 'SUCCESS');
    assert.equal((await syncStatus(server, checkout.token)).body.status, 'SUCCESS');
    assert.equal(await settlements(retried.body.transaction_id as string), 1);
    const events = await eventsOf(server, checkout.checkout_id);
    assert.ok(events.every((event) => event.livemode === false));
  });

  for (const [simulate, status, paymentStatus, attemptStatus] of [
    ['payment_failed', 'FAILED', 'failed', 'failed'],
    ['checkout_canceled', 'CANCELED', 'canceled', 'canceled'],
    ['canceled', 'CANCELED', 'canceled', 'canceled'],
  ] as const) {
    test(`${simulate}: ${status}, the payment ${paymentStatus}, nothing credited, whatever the card`, async () => {
      const checkout = await sandboxCheckout(simulate);
      const paid = await pay(server, checkout.token, CARDS.success);
      assert.equal(paid.status, 200, paid.text);
      assert.equal(paid.body.status, status);
      assert.equal(paid.body.payment_status, paymentStatus);
      assert.equal((paid.body.attempt as Json).status, attemptStatus);
      const sync = await syncStatus(server, checkout.token);
      assert.equal(sync.body.status, status);
      assert.equal(sync.body.payment_status, paymentStatus);
      const events = await eventsOf(server, checkout.checkout_id);
      assert.deepEqual(
        events.map((event) => [event.status, attemptsOf(event).length]),
        [
          ['processing', 0],
          [paymentStatus, 1],
        ],
      );
      assert.equal(await settlements(paid.body.transaction_id as string), 0);
      assert.equal((await pay(server, checkout.token)).status, 410);
    });
  }

  test('success_pending_deposit: paid at once with the attempt pending; the deposit settles later, once', async () => {
    const checkout = await sandboxCheckout('success_pending_deposit');
    const paid = await pay(server, checkout.token);
    assert.equal(paid.body.status, 'SUCCESS');
    assert.equal(paid.body.payment_status, 'paid');
    assert.equal((paid.body.attempt as Json).status, 'pending');
    const id = paid.body.transaction_id as string;
    let row = await paymentRow(server, id);
    assert.deepEqual([row.deposit_status, row.settled_at], ['pending', null]);
    assert.equal((await syncStatus(server, checkout.token)).body.status, 'SUCCESS');
    assert.equal(await settlements(id), 0);
    assert.equal((await eventsOf(server, checkout.checkout_id)).length, 2);

    offsetMs += SETTLE_DELAY_MS + 100;
    const results = await Promise.all(Array.from({ length: 5 }, () => syncStatus(server, checkout.token)));
    assert.ok(
      results.every((result) => result.body.status === 'SUCCESS' && result.body.payment_status === 'paid'),
    );
    row = await paymentRow(server, id);
    assert.equal(row.deposit_status, 'succeeded');
    assert.ok(row.settled_at);
    assert.equal(await settlements(id), 1);
    const events = await eventsOf(server, checkout.checkout_id);
    assert.deepEqual(
      events.map((event) => [event.status, attemptsOf(event)[0]?.status ?? null]),
      [
        ['processing', null],
        ['paid', 'pending'],
        ['paid', 'succeeded'],
      ],
    );
    await syncStatus(server, checkout.token);
    assert.equal((await eventsOf(server, checkout.checkout_id)).length, 3);
    const api = await call<Json>(server, 'GET', `/sandbox/api/transactions/${id}/`, { apiKey: sandboxKey });
    assert.equal((api.body.depositAttempts as Json[])[0].status, 'succeeded');
  });

  test('checkout_pending: pending, resolves to success on the third sync call; pay and cancel wait (409)', async () => {
    const checkout = await sandboxCheckout('checkout_pending');
    const paid = await pay(server, checkout.token);
    assert.equal(paid.body.status, 'CHECKOUT_PENDING');
    assert.equal(paid.body.payment_status, 'pending');
    assert.equal((paid.body.attempt as Json).status, 'pending');
    assert.equal((await pay(server, checkout.token)).status, 409);
    assert.equal((await call(server, 'POST', `/api/checkout/${checkout.token}/cancel/`)).status, 409);
    const first = await syncStatus(server, checkout.token);
    const second = await syncStatus(server, checkout.token);
    assert.deepEqual(
      [first.body.status, second.body.status, second.body.payment_status],
      ['CHECKOUT_PENDING', 'CHECKOUT_PENDING', 'pending'],
    );
    assert.equal(first.body.redirect_url, null);
    const third = await syncStatus(server, checkout.token);
    assert.equal(third.body.status, 'SUCCESS');
    assert.equal(third.body.payment_status, 'paid');
    assert.equal(await settlements(paid.body.transaction_id as string), 1);
    const events = await eventsOf(server, checkout.checkout_id);
    assert.deepEqual(
      events.map((event) => [event.status, attemptsOf(event)[0]?.status ?? null]),
      [
        ['processing', null],
        ['pending', 'pending'],
        ['paid', 'succeeded'],
      ],
    );
  });

  test('concurrent sync-status calls apply the outcome once: one event per change, one settlement', async () => {
    const checkout = await sandboxCheckout('checkout_pending');
    const paid = await pay(server, checkout.token);
    const results = await Promise.all(Array.from({ length: 8 }, () => syncStatus(server, checkout.token)));
    assert.ok(results.every((result) => result.status === 200));
    const final = await syncStatus(server, checkout.token);
    assert.equal(final.body.status, 'SUCCESS');
    const events = await eventsOf(server, checkout.checkout_id);
    assert.deepEqual(
      events.map((event) => event.status),
      ['processing', 'pending', 'paid'],
    );
    assert.equal(await settlements(paid.body.transaction_id as string), 1);
  });

  test('sync-status by checkout_id needs a key of the checkout environment', async () => {
    const checkout = await sandboxCheckout('checkout_pending');
    await pay(server, checkout.token);
    const path = '/checkout/sync-status/';
    const body = { checkout_id: checkout.checkout_id };
    const byKey = await call<Json>(server, 'POST', `/sandbox/api${path}`, { apiKey: sandboxKey, body });
    assert.equal(byKey.status, 200, byKey.text);
    assert.equal(byKey.body.checkout_id, checkout.checkout_id);
    assert.equal(byKey.body.payment_status, 'pending');
    assert.equal((await call(server, 'POST', `/api${path}`, { body })).status, 401);
    assert.equal((await call(server, 'POST', `/api${path}`, { apiKey: liveKey, body })).status, 404);
    const both = await call(server, 'POST', `/api${path}`, { body: { ...body, token: checkout.token } });
    assert.equal(both.status, 400);
    const neither = await call<Json>(server, 'POST', `/api${path}`, { body: {} });
    assert.equal(neither.status, 400);
    assert.match(neither.body.detail as string, /^token: /);
  });

  test('a sandbox payment is a 404 on /api/ and visible on /sandbox/api/', async () => {
    const checkout = await sandboxCheckout();
    const paid = await pay(server, checkout.token);
    const id = paid.body.transaction_id as string;
    const live = await call(server, 'GET', `/api/transactions/${id}/`, { apiKey: liveKey });
    assert.equal(live.status, 404);
    const row = await paymentRow(server, id);
    assert.equal(
      (await call(server, 'GET', `/api/transactions/${row.id}/`, { apiKey: liveKey })).status,
      404,
    );
    const sandbox = await call<Json>(server, 'GET', `/sandbox/api/transactions/${id}/`, {
      apiKey: sandboxKey,
    });
    assert.equal(sandbox.status, 200);
    assert.equal(sandbox.body.status, 'paid');
  });

  test("the simulator's state is in the database: a second instance continues where the first left off", async () => {
    const checkout = await sandboxCheckout('checkout_pending');
    await pay(server, checkout.token);
    await syncStatus(server, checkout.token);
    const second = await startTestServer({ worker: false, shareWith: server });
    try {
      await syncStatus(second, checkout.token);
      const third = await syncStatus(second, checkout.token);
      assert.equal(third.body.status, 'SUCCESS');
      assert.equal((await syncStatus(server, checkout.token)).body.status, 'SUCCESS');
      assert.equal((await eventsOf(server, checkout.checkout_id)).length, 3);
    } finally {
      await second.close();
    }
  });
});
