// The public side of a payment link: the preview the /pay/{id} page shows, and the availability table
// (deactivate, PATCH to inactive / expired / max uses, delete) on both the preview and the start.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { billing } from './helpers/checkout.ts';
import {
  type ApiResponse,
  call,
  createTestMerchant,
  DB_KIND,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';

type Json = Record<string, unknown>;

const INACTIVE = 'This payment link is inactive.';
const EXPIRED = 'This payment link has expired.';
const EXHAUSTED = 'This payment link has reached its maximum number of uses.';
const DELETED = 'This payment link has been deleted.';

describe(`public payment links (${DB_KIND})`, () => {
  let server: TestServer;
  let merchant: Merchant;
  let shirt: string;
  let mug: string;
  let offsetMs = 0;
  before(async () => {
    server = await startTestServer({ worker: false, clock: () => new Date(Date.now() + offsetMs) });
    merchant = await createTestMerchant(server, 'Public Shop');
    // 20 % tax, so the totals show a real split.
    await server.ctx.db
      .updateTable('organizations')
      .set({ tax_rate_bp: 2000 })
      .where('id', '=', merchant.organizationId)
      .execute();
    for (const [name, price] of [
      ['T-shirt', '10.00'],
      ['Mug', '5.00'],
    ]) {
      const response = await call<Json>(server, 'POST', '/api/products/', {
        token: merchant.token,
        body: { name, unit_price: price },
      });
      if (name === 'Mug') mug = response.body.id as string;
      else shirt = response.body.id as string;
    }
  });
  after(() => server.close());

  async function createLink(body: Json = {}): Promise<string> {
    const response = await call<Json>(server, 'POST', '/api/payment-links/', {
      token: merchant.token,
      body: {
        name: 'Public link',
        products: [{ product_id: shirt, quantity: 2 }, { product_id: mug }],
        ...body,
      },
    });
    assert.equal(response.status, 201, response.text);
    return response.body.id as string;
  }

  const patch = (id: string, body: Json) =>
    call<Json>(server, 'PATCH', `/api/payment-links/${id}/`, { token: merchant.token, body });
  const preview = (id: string) => call<Json>(server, 'GET', `/api/payment-links/public/${id}/`);
  const start = (id: string) =>
    call<Json>(server, 'POST', `/api/payment-links/public/${id}/start/`, { body: billing() });
  const detail = async (id: string) =>
    (await call<Json>(server, 'GET', `/api/payment-links/${id}/`, { token: merchant.token })).body;

  async function assertGone(id: string, message: string, status: string) {
    const responses: ApiResponse<Json>[] = [await preview(id), await start(id)];
    for (const response of responses) {
      assert.equal(response.status, 410, response.text);
      assert.deepEqual(response.body, { detail: message });
    }
    assert.equal((await detail(id)).status, status);
  }

  async function assertOpen(id: string) {
    assert.equal((await preview(id)).status, 200);
    const started = await start(id);
    assert.equal(started.status, 201, started.text);
  }

  test('the preview shows merchant, products, totals before and after tax, and expiry; no auth needed', async () => {
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    const exclusive = await createLink({ pricing_mode: 'TAX_EXCLUSIVE', expires_at: expiresAt });
    const response = await preview(exclusive);
    assert.equal(response.status, 200, response.text);
    assert.deepEqual(response.body, {
      id: exclusive,
      merchant: { name: 'Public Shop', website: null },
      products: [
        { product_id: shirt, name: 'T-shirt', unit_price: '10.00', quantity: 2, amount: '20.00' },
        { product_id: mug, name: 'Mug', unit_price: '5.00', quantity: 1, amount: '5.00' },
      ],
      currency: 'USD',
      pricing_mode: 'TAX_EXCLUSIVE',
      tax_rate_percent: '20.00',
      totals: { subtotal: '25.00', tax: '5.00', gross: '30.00' },
      expires_at: expiresAt,
    });
    const inclusive = await preview(await createLink({ pricing_mode: 'TAX_INCLUSIVE' }));
    assert.deepEqual(inclusive.body.totals, { subtotal: '20.83', tax: '4.17', gross: '25.00' });
  });

  test('every preview counts a view in the stats', async () => {
    const id = await createLink();
    for (let i = 0; i < 3; i += 1) assert.equal((await preview(id)).status, 200);
    const stats = (await detail(id)).stats as Json;
    assert.equal(stats.views, 3);
    assert.equal(stats.checkouts_started, 0);
  });

  test('an unknown or malformed token is a 404 on preview and start', async () => {
    for (const token of [randomUUID(), 'nope', '00000000-0000-0000-0000-000000000000', 'x'.repeat(150)]) {
      for (const response of [await preview(token), await start(token)]) {
        assert.equal(response.status, 404, `${token}: ${response.text}`);
        assert.deepEqual(response.body, { detail: 'Payment link not found.' });
      }
    }
  });

  test('deactivating makes both public endpoints 410 inactive; reactivating opens them again', async () => {
    const id = await createLink();
    assert.equal((await patch(id, { is_active: false })).status, 200);
    await assertGone(id, INACTIVE, 'inactive');
    assert.equal((await patch(id, { is_active: true })).status, 200);
    await assertOpen(id);
  });

  test('a link created inactive is 410 inactive from the start', async () => {
    await assertGone(await createLink({ is_active: false }), INACTIVE, 'inactive');
  });

  test('PATCH expires_at into the past makes it 410 expired; clearing the expiry opens it', async () => {
    const id = await createLink();
    assert.equal((await patch(id, { expires_at: new Date(Date.now() - 1000).toISOString() })).status, 200);
    await assertGone(id, EXPIRED, 'expired');
    assert.equal((await patch(id, { expires_at: null })).status, 200);
    await assertOpen(id);
  });

  test('a link is 410 expired once its expiry passes', async () => {
    const id = await createLink({ expires_at: new Date(Date.now() + 3_600_000).toISOString() });
    await assertOpen(id);
    offsetMs = 2 * 3_600_000;
    try {
      await assertGone(id, EXPIRED, 'expired');
    } finally {
      offsetMs = 0;
    }
  });

  test('PATCH max_uses down to the uses already counted makes it 410 exhausted; raising it opens it', async () => {
    const id = await createLink();
    await assertOpen(id);
    await assertOpen(id);
    const tooLow = await patch(id, { max_uses: 1 });
    assert.equal(tooLow.status, 400);
    assert.match(
      tooLow.body.detail as string,
      /^max_uses: must be at least the number of uses already held \(2: paid payments and open checkouts\)/,
    );
    assert.equal((await patch(id, { max_uses: 2 })).status, 200);
    await assertGone(id, EXHAUSTED, 'exhausted');
    assert.equal((await patch(id, { max_uses: 3 })).status, 200);
    await assertOpen(id);
    await assertGone(id, EXHAUSTED, 'exhausted');
    assert.equal((await detail(id)).uses_count, 3);
  });

  test('deleting makes both public endpoints 410 deleted, whatever else holds', async () => {
    const id = await createLink({ max_uses: 1 });
    const deleted = await call(server, 'DELETE', `/api/payment-links/${id}/`, { token: merchant.token });
    assert.equal(deleted.status, 204);
    await assertGone(id, DELETED, 'deleted');
  });

  test('inactive wins over expired and exhausted in the reported reason', async () => {
    const id = await createLink({ max_uses: 1 });
    await assertOpen(id);
    await assertGone(id, EXHAUSTED, 'exhausted');
    assert.equal((await patch(id, { expires_at: new Date(Date.now() - 1000).toISOString() })).status, 200);
    await assertGone(id, EXPIRED, 'expired');
    assert.equal((await patch(id, { is_active: false })).status, 200);
    await assertGone(id, INACTIVE, 'inactive');
  });
});

describe(`public payment-link rate limit (${DB_KIND})`, () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ worker: false, env: { KASSA_RATE_LIMIT_PUBLIC: '3' } });
  });
  after(() => server.close());

  test('past the per-IP limit the public endpoints answer 429 with Retry-After and RateLimit headers', async () => {
    const token = randomUUID();
    for (let i = 0; i < 3; i += 1) {
      const response = await call(server, 'GET', `/api/payment-links/public/${token}/`);
      assert.equal(response.status, 404);
      assert.equal(response.headers.get('ratelimit-limit'), '3');
      assert.equal(response.headers.get('ratelimit-remaining'), String(2 - i));
    }
    for (const [method, path] of [
      ['GET', `/api/payment-links/public/${token}/`],
      ['POST', `/api/payment-links/public/${token}/start/`],
    ]) {
      const response = await call<Json>(server, method, path, {
        body: method === 'POST' ? billing() : undefined,
      });
      assert.equal(response.status, 429);
      assert.ok(Number(response.headers.get('retry-after')) > 0);
      assert.equal(response.headers.get('ratelimit-remaining'), '0');
      assert.ok(Number(response.headers.get('ratelimit-reset')) > 0);
      assert.equal(typeof response.body.detail, 'string');
    }
  });
});
