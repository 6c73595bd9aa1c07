import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { signSimulatorWebhook } from '../src/provider/simulator/webhook-signature.ts';
import {
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

describe('GET /transactions/{id}/', () => {
  let server: TestServer;
  let merchant: Merchant;
  let key: string;
  before(async () => {
    server = await startTestServer({ worker: false });
    merchant = await createTestMerchant(server, 'Tx Shop');
    key = await createTestKey(server, merchant);
  });
  after(() => server.close());

  test('returns the payment by public or numeric id with every field of the interface', async () => {
    const checkout = await createCheckout(server, key, { products: [{ name: 'Lamp', unit_price: '5.00' }] });
    await pay(server, checkout.token, CARDS.insufficient);
    const paid = await pay(server, checkout.token, CARDS.success);
    const id = paid.body.transaction_id as string;
    assert.match(id, /^TX[0-9A-Za-z]{16}$/);
    const response = await call<Json>(server, 'GET', `/api/transactions/${id}/`, { apiKey: key });
    assert.equal(response.status, 200, response.text);
    const body = response.body;
    assert.deepEqual(Object.keys(body).sort(), [
      'amount',
      'amount_breakdown',
      'client_reference_id',
      'created_at',
      'currency',
      'depositAttempts',
      'fee_percent',
      'id',
      'metadata',
      'net_amount',
      'payer_email',
      'products',
      'simulated',
      'status',
      'subscription_id',
      'updated_at',
    ]);
    // Not a subscription's renewal: the decisions' subscription_id is null.
    assert.equal(body.subscription_id, null);
    // The simulator processed it: the decisions' `simulated` flag, added beside the interface's fields.
    assert.equal(body.simulated, true);
    // 5.00 × 2.9 % = 0.145 → 0.15 (half-up)
    assert.deepEqual(
      [body.id, body.amount, body.net_amount, body.status, body.currency],
      [id, '5.00', '4.85', 'paid', 'USD'],
    );
    assert.equal(body.fee_percent, 2.9);
    assert.deepEqual(body.amount_breakdown, { gross_ttc: '5.00', currency: 'USD', net_usd: '4.85' });
    assert.deepEqual(body.products, [{ id: 'item_1', name: 'Lamp' }]);
    const attempts = body.depositAttempts as Json[];
    assert.equal(attempts.length, 2);
    assert.deepEqual(Object.keys(attempts[0]).sort(), [
      'attemptedAt',
      'errorMessage',
      'paymentId',
      'paymentMethod',
      'status',
    ]);
    assert.deepEqual(
      attempts.map((a) => a.status),
      ['succeeded', 'requires_payment_method'],
    );
    assert.ok(Date.parse(body.created_at as string) > 0);
    const row = await paymentRow(server, id);
    const byNumber = await call<Json>(server, 'GET', `/api/transactions/${row.id}/`, { apiKey: key });
    assert.deepEqual(byNumber.body, body);
  });

  test('EUR payments convert the net at the rate fixed at creation', async () => {
    const checkout = await createCheckout(server, key, {
      currency: 'EUR',
      products: [{ name: 'Stay', unit_price: 100 }],
    });
    const paid = await pay(server, checkout.token);
    const id = paid.body.transaction_id as string;
    const before = await call<Json>(server, 'GET', `/api/transactions/${id}/`, { apiKey: key });
    assert.deepEqual([before.body.amount, before.body.net_amount], ['100.00', '97.10']);
    assert.deepEqual(before.body.amount_breakdown, {
      gross_ttc: '100.00',
      currency: 'EUR',
      net_usd: '104.87',
    });
    const rate = server.ctx.config.fxEurUsd;
    server.ctx.config.fxEurUsd = 2_000_000n;
    try {
      const later = await call<Json>(server, 'GET', `/api/transactions/${id}/`, { apiKey: key });
      assert.deepEqual(later.body.amount_breakdown, before.body.amount_breakdown);
    } finally {
      server.ctx.config.fxEurUsd = rate;
    }
  });

  test("unknown, malformed and other organizations' ids are 404; a key without payments:read is 403", async () => {
    for (const id of ['TX0000000000000000', 'nope', '999999', '0']) {
      const response = await call(server, 'GET', `/api/transactions/${id}/`, { apiKey: key });
      assert.equal(response.status, 404, id);
      assert.deepEqual(response.body, { detail: 'Payment not found.' });
    }
    const checkout = await createCheckout(server, key);
    const paid = await pay(server, checkout.token);
    const other = await createTestMerchant(server, 'Other Tx');
    const otherKey = await createTestKey(server, other);
    const id = paid.body.transaction_id as string;
    assert.equal((await call(server, 'GET', `/api/transactions/${id}/`, { apiKey: otherKey })).status, 404);
    const limited = await createTestMerchant(server, 'Limited Tx');
    const limitedKey = await createTestKey(server, limited, { scopes: 'checkout:create' });
    assert.equal((await call(server, 'GET', `/api/transactions/${id}/`, { apiKey: limitedKey })).status, 403);
    assert.equal((await call(server, 'GET', `/api/transactions/${id}/`)).status, 401);
  });
});

describe('dashboard payments', () => {
  let server: TestServer;
  let merchant: Merchant;
  let key: string;
  let sandboxKey: string;
  const ids: string[] = [];
  before(async () => {
    server = await startTestServer({ worker: false });
    merchant = await createTestMerchant(server, 'List Shop');
    key = await createTestKey(server, merchant);
    sandboxKey = await createTestKey(server, merchant, { environment: 'sandbox' });
    for (let i = 0; i < 5; i += 1) {
      const checkout = await createCheckout(server, key, {
        billing_email: `buyer${i}@Example.com`,
        currency: i === 4 ? 'EUR' : 'USD',
        products: [{ name: 'Item', unit_price: 10 + i }],
      });
      const paid = await pay(server, checkout.token, i === 3 ? CARDS.error : CARDS.success);
      ids.push(paid.body.transaction_id as string);
    }
    const sandbox = await createCheckout(server, sandboxKey, {}, '/sandbox/api');
    ids.push((await pay(server, sandbox.token)).body.transaction_id as string);
  });
  after(() => server.close());

  const list = (query = '') => call<Json>(server, 'GET', `/api/payments/${query}`, { token: merchant.token });

  test('lists production payments newest first, DRF-paginated', async () => {
    const first = await list('?page_size=2');
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.count, 5);
    assert.deepEqual(
      (first.body.results as Json[]).map((p) => p.id),
      [ids[4], ids[3]],
    );
    assert.equal(first.body.previous, null);
    assert.equal(first.body.next, `${server.url}/api/payments/?page_size=2&page=2`);
    const third = await list('?page_size=2&page=3');
    assert.deepEqual(
      (third.body.results as Json[]).map((p) => p.id),
      [ids[0]],
    );
    assert.equal(third.body.next, null);
    assert.equal(third.body.previous, `${server.url}/api/payments/?page_size=2&page=2`);
    const row = (first.body.results as Json[])[0];
    assert.equal(row.environment, 'production');
    assert.match(row.checkout_id as string, /^CO/);
    assert.equal((await list('?page_size=2&page=4')).status, 404);
  });

  test('filters by status, currency, dates and search; environment=sandbox shows the sandbox', async () => {
    assert.equal((await list('?status=failed')).body.count, 1);
    assert.equal((await list('?currency=EUR')).body.count, 1);
    assert.equal((await list('?status=paid&currency=USD')).body.count, 3);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    assert.equal((await list(`?created_at__gte=${future}`)).body.count, 0);
    assert.equal((await list(`?created_at__lte=${future}`)).body.count, 5);
    assert.equal((await list('?search=BUYER2@example')).body.count, 1);
    assert.equal((await list(`?search=${ids[1].toLowerCase()}`)).body.count, 1);
    assert.equal((await list('?search=%25')).body.count, 0);
    const sandbox = await list('?environment=sandbox');
    assert.deepEqual(
      (sandbox.body.results as Json[]).map((p) => [p.id, p.environment]),
      [[ids[5], 'sandbox']],
    );
    const byAmount = await list('?ordering=amount&currency=USD');
    assert.deepEqual(
      (byAmount.body.results as Json[]).map((p) => p.amount),
      ['10.00', '11.00', '12.00', '13.00'],
    );
  });

  test('an invalid parameter is a 400 naming it', async () => {
    for (const [query, field] of [
      ['?page=0', 'page'],
      ['?page=x', 'page'],
      ['?page_size=101', 'page_size'],
      ['?status=done', 'status'],
      ['?currency=GBP', 'currency'],
      ['?created_at__gte=yesterday', 'created_at__gte'],
      ['?created_at__lte=2024-13-45', 'created_at__lte'],
      ['?environment=staging', 'environment'],
      ['?ordering=price', 'ordering'],
    ]) {
      const response = await list(query);
      assert.equal(response.status, 400, query);
      assert.match(response.body.detail as string, new RegExp(`^${field}: `), query);
    }
  });

  test('detail adds checkout_id and environment; other organizations and API keys are refused', async () => {
    const detail = await call<Json>(server, 'GET', `/api/payments/${ids[0]}/`, { token: merchant.token });
    assert.equal(detail.status, 200);
    assert.equal(detail.body.id, ids[0]);
    assert.equal(detail.body.environment, 'production');
    assert.match(detail.body.checkout_id as string, /^CO[0-9A-Za-z]{20}$/);
    assert.equal((detail.body.depositAttempts as Json[]).length, 1);
    const sandbox = await call<Json>(server, 'GET', `/api/payments/${ids[5]}/`, { token: merchant.token });
    assert.equal(sandbox.body.environment, 'sandbox');
    const other = await createTestMerchant(server, 'Nosy');
    assert.equal((await call(server, 'GET', `/api/payments/${ids[0]}/`, { token: other.token })).status, 404);
    assert.equal((await call(server, 'GET', '/api/payments/', { apiKey: key })).status, 401);
  });

  test('the dashboard snapshot counts production transactions', async () => {
    const snapshot = await call<Json>(server, 'GET', '/api/organization/dashboard/', {
      token: merchant.token,
    });
    const stats = snapshot.body.stats as Json;
    assert.equal(stats.transaction_count, 5);
    assert.equal(stats.paid_transaction_count, 4);
    assert.deepEqual(stats.paid_volume, { USD: '33.00', EUR: '14.00' });
  });
});

describe('provider sync', () => {
  let server: TestServer;
  let merchant: Merchant;
  let sandboxKey: string;
  let offsetMs = 0;
  before(async () => {
    server = await startTestServer({ worker: true, clock: () => new Date(Date.now() + offsetMs) });
    merchant = await createTestMerchant(server, 'Sync Shop');
    sandboxKey = await createTestKey(server, merchant, { environment: 'sandbox' });
  });
  after(() => server.close());

  async function eventually(check: () => Promise<boolean>, what: string) {
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline) {
      if (await check()) return;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    assert.fail(`timed out waiting for ${what}`);
  }

  test('the worker settles a pending deposit and resolves checkout_pending on its own', async () => {
    const deposit = await createCheckout(
      server,
      sandboxKey,
      { sandbox_simulate: 'success_pending_deposit' },
      '/sandbox/api',
    );
    const pendingDeposit = await pay(server, deposit.token);
    const bank = await createCheckout(
      server,
      sandboxKey,
      { sandbox_simulate: 'checkout_pending' },
      '/sandbox/api',
    );
    const pendingBank = await pay(server, bank.token);
    await eventually(
      async () => (await paymentRow(server, pendingBank.body.transaction_id as string)).status === 'paid',
      'checkout_pending to resolve',
    );
    offsetMs += 31_000;
    await eventually(
      async () =>
        (await paymentRow(server, pendingDeposit.body.transaction_id as string)).settled_at !== null,
      'the deposit to settle',
    );
  });

  test('the worker fails a payment whose checkout expired during retries', async () => {
    const checkout = await createCheckout(server, sandboxKey, {}, '/sandbox/api');
    const declined = await pay(server, checkout.token, CARDS.declined);
    offsetMs += 86_401_000;
    // A clock that jumps wakes no loop: the decline's commit woke the expiry loop 50 ms after it, which a
    // slow response can let run before the jump (it then sleeps its 30 s safety poll). A commit after the
    // jump is what a real clock's passing stands for here.
    server.ctx.outbox.notify();
    await eventually(
      async () => (await paymentRow(server, declined.body.transaction_id as string)).status === 'failed',
      'the expired payment to fail',
    );
  });
});

describe('a provider cancel read by a sync', () => {
  // Expiry stops a payment at the provider, then fails it; a sync that reads the provider's cancel in
  // between (the sync loop, another worker, the customer's status call) must make the same move.
  let server: TestServer;
  let sandboxKey: string;
  let offsetMs = 0;
  before(async () => {
    server = await startTestServer({ worker: false, clock: () => new Date(Date.now() + offsetMs) });
    const merchant = await createTestMerchant(server, 'Cancel Shop');
    sandboxKey = await createTestKey(server, merchant, { environment: 'sandbox' });
  });
  after(() => server.close());

  async function declinedThenCanceledAtProvider(jumpMs: number, attemptInFlight = false) {
    const checkout = await createCheckout(server, sandboxKey, {}, '/sandbox/api');
    const declined = await pay(server, checkout.token, CARDS.declined);
    const row = await paymentRow(server, declined.body.transaction_id as string);
    assert.equal(row.status, 'processing');
    offsetMs += jumpMs;
    if (attemptInFlight) {
      // As the pay step leaves it while the provider answers (pay.ts, reserveAttempt).
      const until = new Date(Date.now() + offsetMs + 60_000).toISOString();
      await server.ctx.db
        .updateTable('checkout_sessions')
        .set({ attempt_locked_until: until })
        .where('id', '=', row.checkout_session_id)
        .execute();
    }
    const state = await server.ctx.providers
      .named('simulator')
      .cancelPayment(row.provider_payment_id as string);
    assert.equal(state?.outcome, 'CANCELED');
    const sync = await syncStatus(server, checkout.token);
    assert.equal(sync.status, 200);
    return { row: await paymentRow(server, row.public_id), orderId: checkout.order_id };
  }

  test("of an expired checkout's payment fails it, as the expiry would (one event)", async () => {
    const { row, orderId } = await declinedThenCanceledAtProvider(86_401_000);
    assert.equal(row.status, 'failed');
    const statuses = (await eventsOf(server, orderId)).map((payload) => payload.status);
    assert.deepEqual(statuses.slice(-1), ['failed']);
    assert.ok(!statuses.includes('canceled'), statuses.join());
  });

  test('of an expired checkout with an attempt in flight keeps the provider word: canceled', async () => {
    const { row } = await declinedThenCanceledAtProvider(86_401_000, true);
    assert.equal(row.status, 'canceled');
  });

  test('of an open checkout cancels its payment', async () => {
    const { row } = await declinedThenCanceledAtProvider(0);
    assert.equal(row.status, 'canceled');
  });
});

describe('POST /api/provider/webhooks/{provider}/', () => {
  let server: TestServer;
  let sandboxKey: string;
  before(async () => {
    server = await startTestServer({ worker: false });
    const merchant = await createTestMerchant(server, 'Hook Shop');
    sandboxKey = await createTestKey(server, merchant, { environment: 'sandbox' });
  });
  after(() => server.close());

  const hook = (body: unknown, provider = 'simulator') => {
    const raw = typeof body === 'string' ? body : JSON.stringify(body);
    const signature = signSimulatorWebhook(server.ctx.config.secretKey, raw, Math.floor(Date.now() / 1000));
    return call<Json>(server, 'POST', `/api/provider/webhooks/${provider}/`, {
      body: raw,
      headers: { 'content-type': 'application/json', 'kassa-signature': signature },
    });
  };

  test('re-reads the payments it names through the same path as sync', async () => {
    const checkout = await createCheckout(
      server,
      sandboxKey,
      { sandbox_simulate: 'checkout_pending' },
      '/sandbox/api',
    );
    const paid = await pay(server, checkout.token);
    const row = await paymentRow(server, paid.body.transaction_id as string);
    const providerId = row.provider_payment_id as string;
    assert.deepEqual((await hook({ payment_id: providerId })).body, {
      received: true,
      payments: 0,
      refunds: 0,
    });
    await hook({ payment_ids: [providerId] });
    const third = await hook({ payment_id: providerId });
    assert.deepEqual(third.body, { received: true, payments: 1, refunds: 0 });
    assert.equal((await paymentRow(server, row.public_id)).status, 'paid');
    assert.equal((await hook({ payment_id: 'simpay_unknown' })).status, 200);
  });

  test('an unknown provider is a 404 and a body naming nothing is a 400', async () => {
    assert.equal((await hook({ payment_id: 'x' }, 'stripe')).status, 404);
    const empty = await hook({ hello: 'world' });
    assert.equal(empty.status, 400);
    assert.match(empty.body.detail as string, /^body: /);
    assert.equal((await hook('[1,2]')).status, 400);
  });
});
