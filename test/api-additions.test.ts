// The API additions of decisions.md: checkout metadata and client_reference_id (on the payment and in
// its webhooks), GET /transactions/ for API keys, refund creation's id/transaction, and
// GET /refunds/{refund_public_id}/ without its RF prefix.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { billing, createCheckout, pay } from './helpers/checkout.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  DB_KIND,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import { eventsOf, eventually } from './helpers/wallet-fixtures.ts';

type Json = Record<string, unknown>;
interface PaymentBody {
  id: string;
  status: string;
  metadata: Record<string, string>;
  client_reference_id: string | null;
  created_at: string;
}
interface PageBody<T> {
  count: number;
  next: string | null;
  previous: string | null;
  results: T[];
}

describe(`API additions (${DB_KIND})`, () => {
  let server: TestServer;
  let merchant: Merchant;
  let key: string;
  let sandboxKey: string;

  before(async () => {
    server = await startTestServer();
    merchant = await createTestMerchant(server, 'Additions Shop');
    key = await createTestKey(server, merchant);
    sandboxKey = await createTestKey(server, merchant, { environment: 'sandbox' });
  });
  after(() => server.close());

  /** A paid payment (production unless told) from a checkout created with `extra`. */
  async function paidPayment(extra: Json = {}, base: '/api' | '/sandbox/api' = '/api') {
    const created = await createCheckout(server, base === '/api' ? key : sandboxKey, extra, base);
    const paid = await pay(server, created.token);
    assert.equal(paid.status, 200, paid.text);
    return { created, id: String(paid.body.transaction_id) };
  }

  describe('checkout metadata and client_reference_id', () => {
    test('are returned on the payment and in its transaction.status_changed webhooks', async () => {
      const metadata = { order: '1001', cart: 'c-77', note: 'gift wrap' };
      const { created, id } = await paidPayment({ metadata, client_reference_id: 'order-1001' });
      const payment = await call<PaymentBody>(server, 'GET', `/api/transactions/${id}/`, { apiKey: key });
      assert.equal(payment.status, 200, payment.text);
      assert.deepEqual(payment.body.metadata, metadata);
      assert.equal(payment.body.client_reference_id, 'order-1001');

      const events = await eventually(async () => {
        const found = await eventsOf(server.ctx, id);
        return found.some((event) => event.payload.status === 'paid') ? found : undefined;
      });
      assert.ok(events.length > 0);
      for (const event of events) {
        assert.equal(event.type, 'transaction.status_changed');
        assert.equal(event.payload.order_id, created.checkout_id);
        assert.deepEqual(event.payload.metadata, metadata);
        assert.equal(event.payload.client_reference_id, 'order-1001');
      }

      // The dashboard's view of the payment carries them too.
      const dashboard = await call<PaymentBody>(server, 'GET', `/api/payments/${id}/`, {
        token: merchant.token,
      });
      assert.deepEqual(dashboard.body.metadata, metadata);
      assert.equal(dashboard.body.client_reference_id, 'order-1001');
    });

    test('a payment without them shows metadata {} and client_reference_id null', async () => {
      const { id } = await paidPayment();
      const payment = await call<PaymentBody>(server, 'GET', `/api/transactions/${id}/`, { apiKey: key });
      assert.deepEqual(payment.body.metadata, {});
      assert.equal(payment.body.client_reference_id, null);
    });

    test('a checkout canceled before payment sends them in its canceled webhook', async () => {
      const created = await createCheckout(server, key, {
        metadata: { order: '2002' },
        client_reference_id: 'order-2002',
      });
      const canceled = await call(server, 'POST', `/api/checkout/${created.token}/cancel/`);
      assert.equal(canceled.status, 200, canceled.text);
      const [event] = await eventsOf(server.ctx, created.checkout_id);
      assert.equal(event.payload.transaction_id, null);
      assert.equal(event.payload.status, 'canceled');
      assert.deepEqual(event.payload.metadata, { order: '2002' });
      assert.equal(event.payload.client_reference_id, 'order-2002');
    });

    test('limits: 20 keys, keys of 40 characters, string values of 500, a reference of 200; each a 400 naming it', async () => {
      const tooMany = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, 'v']));
      const cases: [Json, string][] = [
        [{ metadata: tooMany }, 'metadata: must have at most 20 keys.'],
        [
          { metadata: { ['k'.repeat(41)]: 'v' } },
          `metadata key "${'k'.repeat(41)}": must be at most 40 characters.`,
        ],
        [{ metadata: { note: 'x'.repeat(501) } }, 'metadata.note: must be at most 500 characters.'],
        [{ metadata: { count: 3 } }, 'metadata.count: must be of type string.'],
        [{ metadata: { nested: { a: 'b' } } }, 'metadata.nested: must be of type string.'],
        [{ metadata: 'order=1' }, 'metadata: must be of type object.'],
        [{ client_reference_id: 'r'.repeat(201) }, 'client_reference_id: must be at most 200 characters.'],
      ];
      for (const [extra, detail] of cases) {
        const response = await call(server, 'POST', '/api/checkout/create/', {
          apiKey: key,
          body: { ...billing(), products: [{ name: 'Widget', unit_price: 5 }], ...extra },
        });
        assert.equal(response.status, 400, JSON.stringify(extra).slice(0, 80));
        assert.deepEqual(response.body, { detail });
      }
      // At the limits exactly, it is accepted.
      const full = Object.fromEntries(
        Array.from({ length: 20 }, (_, i) => [
          `${'k'.repeat(38)}${String(i).padStart(2, '0')}`,
          'v'.repeat(500),
        ]),
      );
      await createCheckout(server, key, { metadata: full, client_reference_id: 'r'.repeat(200) });
    });
  });

  describe('GET /transactions/ with an API key', () => {
    let environmentIds: { production: string[]; sandbox: string[] };
    let cutoff: string;

    before(async () => {
      const first = await paidPayment({ client_reference_id: 'list-a' });
      const second = await paidPayment({ client_reference_id: 'list-b' });
      cutoff = new Date().toISOString();
      await new Promise((resolve) => setTimeout(resolve, 5));
      const third = await paidPayment({ client_reference_id: 'list-a' });
      const failed = await createCheckout(server, key, { client_reference_id: 'list-failed' });
      assert.equal((await pay(server, failed.token, '4000 0000 0000 0119')).status, 200);
      const sandbox = await paidPayment({ client_reference_id: 'list-a' }, '/sandbox/api');
      environmentIds = { production: [first.id, second.id, third.id], sandbox: [sandbox.id] };
    });

    async function list(query: string, apiKey = key, base = '/api') {
      return call<PageBody<PaymentBody>>(server, 'GET', `${base}/transactions/${query}`, { apiKey });
    }

    test("lists the key's environment's payments, newest first, in pages with next and previous", async () => {
      const all = await list('');
      assert.equal(all.status, 200, all.text);
      const times = all.body.results.map((payment) => payment.created_at);
      assert.deepEqual(times, [...times].sort().reverse());
      const ids = all.body.results.map((payment) => payment.id);
      for (const id of environmentIds.production) assert.ok(ids.includes(id));
      assert.ok(!ids.includes(environmentIds.sandbox[0]), 'no sandbox payment on /api');
      assert.equal(all.body.count, ids.length);

      const first = await list('?page_size=2');
      assert.equal(first.body.results.length, 2);
      assert.equal(first.body.previous, null);
      assert.ok(first.body.next?.includes('page=2'));
      const second = await list('?page_size=2&page=2');
      assert.deepEqual(
        [...first.body.results, ...second.body.results].map((payment) => payment.id),
        ids.slice(0, 2 + second.body.results.length),
      );
      assert.equal((await list('?page=99')).status, 404);

      const sandbox = await list('', sandboxKey, '/sandbox/api');
      assert.deepEqual(
        sandbox.body.results.map((payment) => payment.id),
        environmentIds.sandbox,
      );
    });

    test('filters by status, order_id, client_reference_id, created_after and created_before', async () => {
      const byReference = await list('?client_reference_id=list-a');
      assert.deepEqual(
        byReference.body.results.map((payment) => payment.id),
        [environmentIds.production[2], environmentIds.production[0]],
      );
      const failed = await list('?status=failed&client_reference_id=list-failed');
      assert.equal(failed.body.count, 1);
      assert.equal(failed.body.results[0].status, 'failed');
      assert.equal((await list('?status=paid&client_reference_id=list-failed')).body.count, 0);

      const one = await call<PaymentBody>(
        server,
        'GET',
        `/api/transactions/${environmentIds.production[1]}/`,
        {
          apiKey: key,
        },
      );
      const order = await server.ctx.db
        .selectFrom('checkout_sessions')
        .innerJoin('payments', 'payments.checkout_session_id', 'checkout_sessions.id')
        .select('checkout_sessions.public_id')
        .where('payments.public_id', '=', one.body.id)
        .executeTakeFirstOrThrow();
      const byOrder = await list(`?order_id=${order.public_id}`);
      assert.deepEqual(
        byOrder.body.results.map((payment) => payment.id),
        [one.body.id],
      );

      const after = await list(`?client_reference_id=list-a&created_after=${encodeURIComponent(cutoff)}`);
      assert.deepEqual(
        after.body.results.map((payment) => payment.id),
        [environmentIds.production[2]],
      );
      const before = await list(`?client_reference_id=list-a&created_before=${encodeURIComponent(cutoff)}`);
      assert.deepEqual(
        before.body.results.map((payment) => payment.id),
        [environmentIds.production[0]],
      );
    });

    test('a bad parameter is a 400 naming it; a key without payments:read gets 403', async () => {
      const bad: [string, string][] = [
        ['?status=settled', 'status: must be one of'],
        ['?created_after=yesterday', 'created_after: must be a valid ISO 8601 date-time.'],
        ['?created_before=2026-13-45', 'created_before: must be a valid ISO 8601 date-time.'],
        ['?order_id=TX123', 'order_id: must be a checkout id'],
        ['?page_size=101', 'page_size'],
        [`?client_reference_id=${'r'.repeat(201)}`, 'client_reference_id: must be at most 200 characters.'],
      ];
      for (const [query, detail] of bad) {
        const response = await list(query);
        assert.equal(response.status, 400, query);
        assert.ok((response.body as unknown as { detail: string }).detail.startsWith(detail), response.text);
      }
      const checkoutOnly = await createTestKey(server, await createTestMerchant(server, 'Scoped'), {
        scopes: 'checkout:create',
      });
      assert.equal((await list('', checkoutOnly)).status, 403);
      assert.equal((await list('', 'kassa_live_nope')).status, 401);
    });

    test("another organization's key sees none of these payments", async () => {
      const other = await createTestMerchant(server, 'Other Shop');
      const otherKey = await createTestKey(server, other);
      const page = await list('?client_reference_id=list-a', otherKey);
      assert.equal(page.status, 200);
      assert.equal(page.body.count, 0);
    });
  });

  describe('refund ids', () => {
    let paymentId: string;
    let created: Json;

    before(async () => {
      ({ id: paymentId } = await paidPayment());
      await eventually(async () => {
        const row = await server.ctx.db
          .selectFrom('payments')
          .select('settled_at')
          .where('public_id', '=', paymentId)
          .executeTakeFirst();
        return row?.settled_at ? row : undefined;
      });
      const response = await call(server, 'POST', `/api/transactions/${paymentId}/refund/`, {
        apiKey: key,
        body: { reason: 'Customer asked', amount: '10.00' },
      });
      assert.equal(response.status, 200, response.text);
      created = response.body;
    });

    test('creation also returns id (RF…) and transaction (TX…), alongside the interface fields', async () => {
      assert.match(String(created.id), /^RF[0-9A-Za-z]{16}$/);
      assert.equal(created.id, `RF${created.refund_public_id}`);
      assert.equal(created.transaction, paymentId);
      assert.equal(typeof created.refund_id, 'number');
      assert.equal(typeof created.transaction_id, 'number');
    });

    test('GET /refunds/{id}/ takes the public id, the public id without RF, or the numeric id', async () => {
      for (const reference of [created.id, created.refund_public_id, created.refund_id]) {
        const response = await call<{ id: string; transaction_id: string }>(
          server,
          'GET',
          `/api/refunds/${reference}/`,
          { apiKey: key },
        );
        assert.equal(response.status, 200, `${reference}: ${response.text}`);
        assert.equal(response.body.id, created.id);
        assert.equal(response.body.transaction_id, paymentId);
      }
      const unknown = await call(server, 'GET', `/api/refunds/${'A'.repeat(16)}/`, { apiKey: key });
      assert.deepEqual([unknown.status, unknown.body], [404, { detail: 'Refund not found.' }]);
      const sandbox = await call(server, 'GET', `/sandbox/api/refunds/${created.refund_public_id}/`, {
        apiKey: sandboxKey,
      });
      assert.equal(sandbox.status, 404, 'a production refund is not found on the sandbox');
    });
  });
});
