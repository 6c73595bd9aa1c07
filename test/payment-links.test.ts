// Payment links from the dashboard: the record, its validation, who may see it, and the public preview
// with its availability (inactive, expired, deleted → 410; unknown → 404).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { billing } from './helpers/checkout.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  DB_KIND,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';

type Json = Record<string, unknown>;

async function product(server: TestServer, merchant: Merchant, fields: Json = {}): Promise<string> {
  const response = await call<Json>(server, 'POST', '/api/products/', {
    token: merchant.token,
    body: { name: 'T-shirt', unit_price: '10.00', ...fields },
  });
  assert.equal(response.status, 201, response.text);
  return response.body.id as string;
}

async function createLink(server: TestServer, merchant: Merchant, body: Json): Promise<Json> {
  const response = await call<Json>(server, 'POST', '/api/payment-links/', { token: merchant.token, body });
  assert.equal(response.status, 201, response.text);
  return response.body;
}

describe(`payment links in the dashboard (${DB_KIND})`, () => {
  let server: TestServer;
  let merchant: Merchant;
  let other: Merchant;
  let shirt: string;
  before(async () => {
    server = await startTestServer({ worker: false });
    merchant = await createTestMerchant(server, 'Link Shop');
    other = await createTestMerchant(server, 'Other Shop');
    shirt = await product(server, merchant);
  });
  after(() => server.close());

  test('creation returns the record with a snapshot of the products, its url and zero stats', async () => {
    const mug = await product(server, merchant, { name: 'Mug', unit_price: '7.25' });
    const link = await createLink(server, merchant, {
      name: '  Summer sale  ',
      products: [{ product_id: shirt, quantity: 2 }, { product_id: mug }],
      max_uses: 10,
      metadata: { campaign: 'summer' },
    });
    assert.match(link.id as string, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.deepEqual(link, {
      id: link.id,
      name: 'Summer sale',
      url: `${server.url}/pay/${link.id}`,
      products: [
        { product_id: shirt, name: 'T-shirt', unit_price: '10.00', quantity: 2 },
        { product_id: mug, name: 'Mug', unit_price: '7.25', quantity: 1 },
      ],
      currency: 'USD',
      pricing_mode: 'TAX_INCLUSIVE',
      expires_at: null,
      max_uses: 10,
      uses_count: 0,
      is_active: true,
      metadata: { campaign: 'summer' },
      success_url: null,
      cancel_url: null,
      failed_url: null,
      status: 'active',
      environment: 'production',
      stats: { views: 0, checkouts_started: 0, payments_paid: 0, revenue: '0.00' },
      created_at: link.created_at,
      updated_at: link.updated_at,
    });
    const detail = await call<Json>(server, 'GET', `/api/payment-links/${link.id}/`, {
      token: merchant.token,
    });
    assert.equal(detail.status, 200);
    assert.deepEqual(detail.body, link);
  });

  test('pricing_mode defaults from the organization price_mode: HT is TAX_EXCLUSIVE', async () => {
    const patch = await call(server, 'PATCH', '/api/organization/', {
      token: other.token,
      body: { price_mode: 'HT' },
    });
    assert.equal(patch.status, 200, patch.text);
    const eur = await product(server, other, { currency: 'EUR' });
    const link = await createLink(server, other, {
      name: 'HT',
      products: [{ product_id: eur }],
      currency: 'EUR',
    });
    assert.equal(link.pricing_mode, 'TAX_EXCLUSIVE');
    assert.equal(link.currency, 'EUR');
    const explicit = await createLink(server, other, {
      name: 'TTC',
      products: [{ product_id: eur }],
      currency: 'EUR',
      pricing_mode: 'TAX_INCLUSIVE',
    });
    assert.equal(explicit.pricing_mode, 'TAX_INCLUSIVE');
  });

  test('every invalid creation field is a 400 that names it', async () => {
    const inactive = await product(server, merchant, { is_active: false });
    const euro = await product(server, merchant, { currency: 'EUR' });
    const cheap = await product(server, merchant, { unit_price: '0.10' });
    const foreign = await product(server, other);
    const ok = { name: 'Link', products: [{ product_id: shirt }] };
    const cases: [Json, RegExp][] = [
      [{ products: ok.products }, /^name: this field is required/],
      [{ ...ok, name: '   ' }, /^name: may not be blank/],
      [{ ...ok, name: '' }, /^name: may not be blank/],
      [{ ...ok, name: 5 }, /^name: must be of type string/],
      [{ name: 'Link' }, /^products: this field is required/],
      [{ ...ok, products: [] }, /^products: must contain at least 1 item/],
      [
        { ...ok, products: [{ product_id: 'prod_00000000000000' }] },
        /^products: unknown product id "prod_0+"/,
      ],
      [
        { ...ok, products: [{ product_id: foreign }] },
        new RegExp(`^products: unknown product id "${foreign}"`),
      ],
      [
        { ...ok, products: [{ product_id: inactive }] },
        new RegExp(`^products: product "${inactive}" is not active`),
      ],
      [
        { ...ok, products: [{ product_id: euro }] },
        /^products: product "prod_\w+" is priced in EUR, not USD/,
      ],
      [{ ...ok, products: [{ product_id: cheap }] }, /^products: the link total 0\.10 USD is outside/],
      [{ ...ok, products: [{}] }, /^products\[0\]\.product_id: this field is required/],
      [{ ...ok, products: [{ product_id: shirt, quantity: 0 }] }, /^products\[0\]\.quantity: must be >= 1/],
      [
        { ...ok, products: [{ product_id: shirt, quantity: 1.5 }] },
        /^products\[0\]\.quantity: must be of type integer/,
      ],
      [
        { ...ok, products: [{ product_id: shirt, quantity: '2' }] },
        /^products\[0\]\.quantity: must be of type integer/,
      ],
      [{ ...ok, products: [{ product_id: shirt, price: 1 }] }, /^products\[0\]\.price: unknown field/],
      [{ ...ok, currency: 'GBP' }, /^currency: must be one of USD, EUR/],
      [{ ...ok, pricing_mode: 'HT' }, /^pricing_mode: must be one of TAX_EXCLUSIVE, TAX_INCLUSIVE/],
      [{ ...ok, expires_at: 'tomorrow' }, /^expires_at: must be a valid ISO 8601 date-time/],
      [{ ...ok, expires_at: '2020-01-01T00:00:00Z' }, /^expires_at: must be in the future/],
      [{ ...ok, expires_at: 5 }, /^expires_at: must be of type string/],
      [{ ...ok, max_uses: 0 }, /^max_uses: must be >= 1/],
      [{ ...ok, max_uses: 2.5 }, /^max_uses: must be of type integer/],
      [{ ...ok, max_uses: '3' }, /^max_uses: must be of type integer/],
      [{ ...ok, metadata: ['a'] }, /^metadata: must be of type object/],
      [{ ...ok, metadata: 'x' }, /^metadata: must be of type object/],
      [{ ...ok, metadata: { blob: 'x'.repeat(20_000) } }, /^metadata: must be at most 16384 characters/],
      [{ ...ok, colour: 'red' }, /^colour: unknown field/],
    ];
    for (const [body, detail] of cases) {
      const response = await call<Json>(server, 'POST', '/api/payment-links/', {
        token: merchant.token,
        body,
      });
      assert.equal(response.status, 400, `${JSON.stringify(body).slice(0, 120)} → ${response.text}`);
      assert.match(response.body.detail as string, detail, JSON.stringify(body).slice(0, 120));
    }
    const list = await call<Json[]>(server, 'GET', '/api/payment-links/', { token: merchant.token });
    assert.ok(list.body.every((link) => link.name !== 'Link'));
  });

  test('PATCH changes name, is_active, expires_at, max_uses and metadata, and names any other field', async () => {
    const link = await createLink(server, merchant, { name: 'Patch me', products: [{ product_id: shirt }] });
    const path = `/api/payment-links/${link.id}/`;
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
    const patched = await call<Json>(server, 'PATCH', path, {
      token: merchant.token,
      body: { name: 'Patched', is_active: false, expires_at: expiresAt, max_uses: 3, metadata: { a: 1 } },
    });
    assert.equal(patched.status, 200, patched.text);
    assert.equal(patched.body.name, 'Patched');
    assert.equal(patched.body.is_active, false);
    assert.equal(patched.body.status, 'inactive');
    assert.equal(patched.body.expires_at, expiresAt);
    assert.equal(patched.body.max_uses, 3);
    assert.deepEqual(patched.body.metadata, { a: 1 });
    assert.deepEqual(patched.body.products, link.products);
    const cleared = await call<Json>(server, 'PATCH', path, {
      token: merchant.token,
      body: { is_active: true, expires_at: null, max_uses: null, metadata: null },
    });
    assert.equal(cleared.body.status, 'active');
    assert.equal(cleared.body.expires_at, null);
    assert.equal(cleared.body.max_uses, null);
    assert.equal(cleared.body.metadata, null);
    const cases: [Json, RegExp][] = [
      [{ products: [{ product_id: shirt }] }, /^products: cannot be changed after creation/],
      [{ currency: 'EUR' }, /^currency: cannot be changed after creation/],
      [{ pricing_mode: 'TAX_EXCLUSIVE' }, /^pricing_mode: cannot be changed after creation/],
      [{ uses_count: 0 }, /^uses_count: this field is read-only/],
      [{ colour: 'red' }, /^colour: unknown field/],
      [{ name: ' ' }, /^name: may not be blank/],
      [{ is_active: 'no' }, /^is_active: must be of type boolean/],
      [{ max_uses: 0 }, /^max_uses: must be >= 1/],
      [{ expires_at: 'soon' }, /^expires_at: must be a valid ISO 8601 date-time/],
      [{ metadata: [1] }, /^metadata: must be of type object/],
    ];
    for (const [body, detail] of cases) {
      const response = await call<Json>(server, 'PATCH', path, { token: merchant.token, body });
      assert.equal(response.status, 400, `${JSON.stringify(body)} → ${response.text}`);
      assert.match(response.body.detail as string, detail);
    }
  });

  test('the list is newest first and leaves deleted links out; the deleted link still reads as deleted', async () => {
    const first = await createLink(server, merchant, { name: 'First', products: [{ product_id: shirt }] });
    const second = await createLink(server, merchant, { name: 'Second', products: [{ product_id: shirt }] });
    let list = await call<Json[]>(server, 'GET', '/api/payment-links/', { token: merchant.token });
    assert.equal(list.status, 200);
    assert.ok(Array.isArray(list.body));
    const ids = list.body.map((link) => link.id);
    assert.ok(ids.indexOf(second.id) < ids.indexOf(first.id));
    const deleted = await call(server, 'DELETE', `/api/payment-links/${first.id}/`, {
      token: merchant.token,
    });
    assert.equal(deleted.status, 204);
    assert.equal(deleted.text, '');
    list = await call<Json[]>(server, 'GET', '/api/payment-links/', { token: merchant.token });
    assert.ok(!list.body.some((link) => link.id === first.id));
    const detail = await call<Json>(server, 'GET', `/api/payment-links/${first.id}/`, {
      token: merchant.token,
    });
    assert.equal(detail.body.status, 'deleted');
    assert.equal(detail.body.is_active, false);
    const again = await call(server, 'DELETE', `/api/payment-links/${first.id}/`, { token: merchant.token });
    assert.equal(again.status, 204);
    const patch = await call<Json>(server, 'PATCH', `/api/payment-links/${first.id}/`, {
      token: merchant.token,
      body: { is_active: true },
    });
    assert.equal(patch.status, 409);
    assert.equal(patch.body.detail, 'This payment link has been deleted.');
  });

  test('API keys and missing credentials get 401 on every dashboard endpoint', async () => {
    const key = await createTestKey(server, merchant);
    const link = await createLink(server, merchant, { name: 'Keyed', products: [{ product_id: shirt }] });
    const endpoints: [string, string][] = [
      ['GET', '/api/payment-links/'],
      ['POST', '/api/payment-links/'],
      ['GET', `/api/payment-links/${link.id}/`],
      ['PATCH', `/api/payment-links/${link.id}/`],
      ['DELETE', `/api/payment-links/${link.id}/`],
      ['GET', `/api/payment-links/${link.id}/payments/`],
    ];
    for (const [method, path] of endpoints) {
      const body = method === 'POST' || method === 'PATCH' ? { name: 'x' } : undefined;
      for (const auth of [{ apiKey: key }, {}]) {
        const response = await call<Json>(server, method, path, { ...auth, body });
        assert.equal(response.status, 401, `${method} ${path}`);
        assert.equal(typeof response.body.detail, 'string');
      }
    }
  });

  test("another organization's link, an unknown uuid and a malformed id are 404", async () => {
    const link = await createLink(server, merchant, { name: 'Mine', products: [{ product_id: shirt }] });
    for (const id of [link.id, randomUUID(), 'not-a-uuid', '123']) {
      for (const [method, suffix] of [
        ['GET', ''],
        ['PATCH', ''],
        ['DELETE', ''],
        ['GET', 'payments/'],
      ]) {
        const response = await call<Json>(server, method, `/api/payment-links/${id}/${suffix}`, {
          token: other.token,
          body: method === 'PATCH' ? { name: 'Stolen' } : undefined,
        });
        assert.equal(response.status, 404, `${method} ${id}/${suffix}`);
        assert.equal(response.body.detail, 'Payment link not found.');
      }
    }
    const list = await call<Json[]>(server, 'GET', '/api/payment-links/', { token: other.token });
    assert.ok(!list.body.some((row) => row.id === link.id));
    const mine = await call<Json>(server, 'GET', `/api/payment-links/${link.id}/`, { token: merchant.token });
    assert.equal(mine.body.name, 'Mine');
    assert.equal(mine.body.status, 'active');
  });

  test('a link with no payments lists none', async () => {
    const link = await createLink(server, merchant, { name: 'Quiet', products: [{ product_id: shirt }] });
    const payments = await call(server, 'GET', `/api/payment-links/${link.id}/payments/`, {
      token: merchant.token,
    });
    assert.equal(payments.status, 200);
    assert.deepEqual(payments.body, []);
  });

  test('start is a 400 naming the field for bad customer details, and consumes no use', async () => {
    const link = await createLink(server, merchant, { name: 'Strict', products: [{ product_id: shirt }] });
    const path = `/api/payment-links/public/${link.id}/start/`;
    const cases: [Json, RegExp][] = [
      [{ ...billing(), billing_email: undefined }, /^billing_email: this field is required/],
      [{ ...billing(), billing_email: 'not-an-email' }, /^billing_email: must be a valid email/],
      [{ ...billing(), billing_country: 'FRA' }, /^billing_country: must be at most 2 characters/],
      [{ ...billing(), billing_country: undefined }, /^billing_country: this field is required/],
      [{ ...billing(), billing_first_name: 'x'.repeat(101) }, /^billing_first_name: must be at most 100/],
      [{ ...billing(), billing_last_name: undefined }, /^billing_last_name: this field is required/],
      [{ ...billing(), billing_last_name: '  ' }, /^billing_last_name: may not be blank/],
      [{ ...billing(), currency: 'EUR' }, /^currency: this payment link charges in USD, not EUR/],
      [{ ...billing(), currency: 'GBP' }, /^currency: must be one of USD, EUR/],
      [{ ...billing(), successUrl: 'not a url' }, /^successUrl: must be a valid URL/],
      [{ ...billing(), products: [] }, /^products: unknown field/],
    ];
    for (const [body, detail] of cases) {
      const response = await call<Json>(server, 'POST', path, { body });
      assert.equal(response.status, 400, `${JSON.stringify(body)} → ${response.text}`);
      assert.match(response.body.detail as string, detail);
    }
    const detail = await call<Json>(server, 'GET', `/api/payment-links/${link.id}/`, {
      token: merchant.token,
    });
    assert.equal(detail.body.uses_count, 0);
  });
});
