import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { PaymentRow } from '../src/modules/payments/table.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import { createPaidPayment } from './helpers/wallet-fixtures.ts';

interface Refund {
  id: string;
  transaction_id: string;
  amount: string;
  currency: string;
  amount_in_cents: number;
  amount_usd: string;
  reason: string;
  status: string;
  created_at: string;
  updated_at: string;
}
interface Page {
  count: number;
  next: string | null;
  previous: string | null;
  results: Refund[];
  detail?: string;
}

describe('listing and reading refunds', () => {
  let server: TestServer;
  let merchant: Merchant;
  let key: string;
  let sandboxKey: string;
  const payments: PaymentRow[] = [];
  const created: { id: number; publicId: string }[] = [];
  let startedAt: string;
  before(async () => {
    server = await startTestServer({ env: { KASSA_SIM_REFUND_DELAY_MS: '600000' } });
    merchant = await createTestMerchant(server);
    key = await createTestKey(server, merchant);
    sandboxKey = await createTestKey(server, merchant, { environment: 'sandbox' });
    startedAt = new Date().toISOString();
    const reasons = [
      'Damaged in transit',
      'Wrong size',
      'Customer request',
      'Duplicate order',
      'damaged box',
    ];
    for (const [index, reason] of reasons.entries()) {
      const payment = await createPaidPayment(server.ctx, {
        organizationId: merchant.organizationId,
        gross: BigInt(1000 * (index + 1)),
        currency: index % 2 ? 'EUR' : 'USD',
      });
      payments.push(payment);
      const response = await call<{ refund_id: number; refund_public_id: string }>(
        server,
        'POST',
        `/api/transactions/${payment.public_id}/refund/`,
        { apiKey: key, body: { reason, amount: `${index + 1}.00` } },
      );
      assert.equal(response.status, 200, response.text);
      created.push({ id: response.body.refund_id, publicId: `RF${response.body.refund_public_id}` });
    }
    // One failed refund, to filter on.
    await server.ctx.db
      .updateTable('refunds')
      .set({ status: 'failed' })
      .where('id', '=', created[4].id)
      .execute();
  });
  after(() => server.close());

  const list = (query = '', apiKey = key, base = '/api') =>
    call<Page>(server, 'GET', `${base}/refunds/${query}`, { apiKey });

  test('the list is a DRF page of Refund objects, newest first', async () => {
    const response = await list();
    assert.equal(response.status, 200, response.text);
    assert.equal(response.body.count, 5);
    assert.equal(response.body.next, null);
    assert.equal(response.body.previous, null);
    assert.deepEqual(
      response.body.results.map((refund) => refund.id),
      created.map((refund) => refund.publicId).reverse(),
    );
    const first = response.body.results[4];
    assert.deepEqual(first, {
      id: created[0].publicId,
      transaction_id: payments[0].public_id,
      amount: '1.00',
      currency: 'USD',
      amount_in_cents: 100,
      amount_usd: '0.97',
      reason: 'Damaged in transit',
      status: 'processing',
      created_at: first.created_at,
      updated_at: first.updated_at,
    });
  });

  test('filters by status, creation time and search (payment id or reason, any case)', async () => {
    assert.deepEqual(
      (await list('?status=failed')).body.results.map((r) => r.id),
      [created[4].publicId],
    );
    assert.equal((await list('?status=processing')).body.count, 4);
    assert.equal((await list(`?created_at__gte=${encodeURIComponent(startedAt)}`)).body.count, 5);
    assert.equal((await list('?created_at__lte=2000-01-01T00:00:00Z')).body.count, 0);
    assert.equal((await list('?created_at__gte=2000-01-01')).body.count, 5);
    const damaged = await list('?search=DAMAGED');
    assert.deepEqual(
      damaged.body.results.map((r) => r.id).sort(),
      [created[0].publicId, created[4].publicId].sort(),
    );
    const byPayment = await list(`?search=${payments[2].public_id.toLowerCase()}`);
    assert.deepEqual(
      byPayment.body.results.map((r) => r.id),
      [created[2].publicId],
    );
    assert.equal((await list('?search=100%25')).body.count, 0);
  });

  test('orders by created_at, amount or status, either way', async () => {
    const amounts = (await list('?ordering=amount')).body.results.map((r) => r.amount);
    assert.deepEqual(amounts, ['1.00', '2.00', '3.00', '4.00', '5.00']);
    const descending = (await list('?ordering=-amount')).body.results.map((r) => r.amount);
    assert.deepEqual(descending, ['5.00', '4.00', '3.00', '2.00', '1.00']);
    const oldest = (await list('?ordering=created_at')).body.results.map((r) => r.id);
    assert.deepEqual(
      oldest,
      created.map((refund) => refund.publicId),
    );
    assert.equal((await list('?ordering=status')).body.results[0].status, 'failed');
  });

  test('pages carry absolute next and previous links', async () => {
    const first = await list('?page_size=2&ordering=amount');
    assert.equal(first.body.count, 5);
    assert.equal(first.body.results.length, 2);
    assert.equal(first.body.previous, null);
    assert.ok(first.body.next);
    const next = new URL(first.body.next);
    assert.equal(next.searchParams.get('page'), '2');
    assert.equal(next.searchParams.get('page_size'), '2');
    const second = await list(`${next.pathname.replace('/api/refunds/', '')}${next.search}`);
    assert.deepEqual(
      second.body.results.map((r) => r.amount),
      ['3.00', '4.00'],
    );
    assert.ok(second.body.previous);
    assert.equal(new URL(second.body.previous).searchParams.get('page'), null);
    const last = await list('?page_size=2&page=3&ordering=amount');
    assert.equal(last.body.next, null);
    assert.deepEqual(
      last.body.results.map((r) => r.amount),
      ['5.00'],
    );
    assert.equal((await list('?page=4&page_size=2')).status, 404);
  });

  test('a bad parameter is a 400 that names it', async () => {
    const cases: [string, string][] = [
      ['?status=done', 'status'],
      ['?created_at__gte=yesterday', 'created_at__gte'],
      ['?created_at__lte=2024-13-45T00:00:00Z', 'created_at__lte'],
      ['?ordering=reason', 'ordering'],
      ['?page=0', 'page'],
      ['?page=abc', 'page'],
      ['?page_size=101', 'page_size'],
      ['?page_size=0', 'page_size'],
      ['?status=failed&status=completed', 'status'],
    ];
    for (const [query, name] of cases) {
      const response = await list(query);
      assert.equal(response.status, 400, query);
      assert.match(String(response.body.detail), new RegExp(`^${name}: `), query);
    }
  });

  test('a refund is read by its RF id or numeric id, within the organization and environment', async () => {
    for (const id of [created[1].publicId, String(created[1].id)]) {
      const response = await call<Refund>(server, 'GET', `/api/refunds/${id}/`, { apiKey: key });
      assert.equal(response.status, 200, response.text);
      assert.equal(response.body.id, created[1].publicId);
      assert.equal(response.body.currency, 'EUR');
    }
    const other = await createTestMerchant(server);
    const otherKey = await createTestKey(server, other);
    assert.equal(
      (await call(server, 'GET', `/api/refunds/${created[1].publicId}/`, { apiKey: otherKey })).status,
      404,
    );
    assert.equal((await list('', otherKey)).body.count, 0);
    assert.equal(
      (await call(server, 'GET', `/sandbox/api/refunds/${created[1].id}/`, { apiKey: sandboxKey })).status,
      404,
    );
    assert.equal((await list('', sandboxKey, '/sandbox/api')).body.count, 0);
    assert.equal((await call(server, 'GET', '/api/refunds/RFnope/', { apiKey: key })).status, 404);
  });

  test('reading needs refunds:read or payments:read; POST /refunds/ with an API key is a 405', async () => {
    const other = await createTestMerchant(server);
    const checkoutOnly = await createTestKey(server, other, { scopes: 'checkout:create' });
    assert.equal((await list('', checkoutOnly)).status, 403);
    assert.equal((await call(server, 'GET', '/api/refunds/')).status, 401);
    for (const [base, apiKey] of [
      ['/api', key],
      ['/sandbox/api', sandboxKey],
    ]) {
      const response = await call(server, 'POST', `${base}/refunds/`, { apiKey, body: { reason: 'x' } });
      assert.equal(response.status, 405, base);
      assert.equal(typeof (response.body as { detail: string }).detail, 'string');
    }
  });
});
