import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { billing, CARDS, createCheckout, type Json, pay, paymentRow } from './helpers/checkout.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';

describe('POST /checkout/create/', () => {
  let server: TestServer;
  let merchant: Merchant;
  let key: string;
  let sandboxKey: string;
  let usdProduct: string;
  let eurProduct: string;
  let inactiveProduct: string;
  let foreignProduct: string;

  async function product(token: string, body: Json): Promise<string> {
    const response = await call<Json>(server, 'POST', '/api/products/', { token, body });
    assert.equal(response.status, 201, response.text);
    return response.body.id as string;
  }

  before(async () => {
    server = await startTestServer({ worker: false });
    merchant = await createTestMerchant(server, 'Create Shop');
    key = await createTestKey(server, merchant);
    sandboxKey = await createTestKey(server, merchant, { environment: 'sandbox' });
    usdProduct = await product(merchant.token, { name: 'T-shirt', unit_price: '10.00' });
    eurProduct = await product(merchant.token, { name: 'Bier', unit_price: '4.50', currency: 'EUR' });
    inactiveProduct = await product(merchant.token, { name: 'Old', unit_price: '3.00', is_active: false });
    const other = await createTestMerchant(server, 'Other Shop');
    foreignProduct = await product(other.token, { name: 'Theirs', unit_price: '9.00' });
  });
  after(() => server.close());

  const setOrganization = (changes: { tax_rate_bp?: number; price_mode?: 'HT' | 'TTC' }) =>
    server.ctx.db
      .updateTable('organizations')
      .set(changes)
      .where('id', '=', merchant.organizationId)
      .execute();

  test('201 with checkout_id = order_id (CO + 20), a 256-bit token stored only as its hash, the URL and expiry', async () => {
    const before = Math.floor(Date.now() / 1000);
    const created = await createCheckout(server, key);
    assert.match(created.checkout_id, /^CO[0-9A-Za-z]{20}$/);
    assert.equal(created.order_id, created.checkout_id);
    assert.match(created.token, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(created.checkout_url, `${server.url}/checkout/${created.token}`);
    assert.ok(Number.isInteger(created.expires_at));
    assert.ok(created.expires_at >= before + 86_400 && created.expires_at <= before + 86_402);
    const row = await server.ctx.db
      .selectFrom('checkout_sessions')
      .selectAll()
      .where('public_id', '=', created.checkout_id)
      .executeTakeFirstOrThrow();
    assert.equal(row.token_hash, createHash('sha256').update(created.token).digest('hex'));
    assert.ok(!JSON.stringify(row).includes(created.token));
  });

  test('catalog and ad hoc items in one request; catalog items take the catalog name and price', async () => {
    const created = await createCheckout(server, key, {
      products: [
        { id: usdProduct, quantity: 3 },
        { name: 'Gift wrap', unit_price: 0.99 },
        { id: usdProduct },
      ],
    });
    const page = await call<Json>(server, 'GET', `/api/checkout/${created.token}/`);
    assert.deepEqual(page.body.items, [
      { id: usdProduct, name: 'T-shirt', unit_price: '10.00', quantity: 3, amount: '30.00' },
      { id: 'item_2', name: 'Gift wrap', unit_price: '0.99', quantity: 1, amount: '0.99' },
      { id: usdProduct, name: 'T-shirt', unit_price: '10.00', quantity: 1, amount: '10.00' },
    ]);
    assert.equal(page.body.total, '40.99');
    const paid = await pay(server, created.token);
    const api = await call<Json>(server, 'GET', `/api/transactions/${paid.body.transaction_id}/`, {
      apiKey: key,
    });
    assert.deepEqual(api.body.products, [
      { id: usdProduct, name: 'T-shirt' },
      { id: 'item_2', name: 'Gift wrap' },
      { id: usdProduct, name: 'T-shirt' },
    ]);
    assert.equal(api.body.payer_email, 'ada@example.com');
  });

  test('HT prices get the tax added (half-up); TTC prices are the gross', async () => {
    await setOrganization({ tax_rate_bp: 2000, price_mode: 'HT' });
    try {
      const ht = await createCheckout(server, key, {
        products: [
          { id: usdProduct, quantity: 3 },
          { name: 'Extra', unit_price: 0.99 },
        ],
      });
      const page = await call<Json>(server, 'GET', `/api/checkout/${ht.token}/`);
      assert.deepEqual(
        [page.body.price_mode, page.body.subtotal, page.body.tax, page.body.total],
        ['HT', '30.99', '6.20', '37.19'],
      );
      const paid = await pay(server, ht.token);
      const row = await paymentRow(server, paid.body.transaction_id as string);
      assert.deepEqual([Number(row.gross), Number(row.gross_ht)], [3719, 3099]);

      await setOrganization({ price_mode: 'TTC' });
      const ttc = await createCheckout(server, key, { products: [{ name: 'Boxed', unit_price: '12.00' }] });
      const ttcPage = await call<Json>(server, 'GET', `/api/checkout/${ttc.token}/`);
      assert.deepEqual(
        [ttcPage.body.subtotal, ttcPage.body.tax, ttcPage.body.total],
        ['10.00', '2.00', '12.00'],
      );
    } finally {
      await setOrganization({ tax_rate_bp: 0, price_mode: 'TTC' });
    }
  });

  test('an organization that is not active cannot create checkouts (403), and nothing is stored', async () => {
    const sessions = async () =>
      Number(
        (
          await server.ctx.db
            .selectFrom('checkout_sessions')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('organization_id', '=', merchant.organizationId)
            .executeTakeFirstOrThrow()
        ).n,
      );
    const before = await sessions();
    const setStatus = (status: string) =>
      server.ctx.db
        .updateTable('organizations')
        .set({ status })
        .where('id', '=', merchant.organizationId)
        .execute();
    await setStatus('suspended');
    try {
      for (const [apiKey, base] of [
        [key, '/api'],
        [sandboxKey, '/sandbox/api'],
      ]) {
        const refused = await call<Json>(server, 'POST', `${base}/checkout/create/`, {
          apiKey,
          body: { ...billing(), products: [{ name: 'Thing', unit_price: 5 }] },
        });
        assert.equal(refused.status, 403, refused.text);
        assert.deepEqual(refused.body, { detail: 'This organization is not active.' });
      }
      assert.equal(await sessions(), before);
    } finally {
      await setStatus('active');
    }
    // The terms are read with the key at each request: the next creation sees the organization active.
    await createCheckout(server, key);
    assert.equal(await sessions(), before + 1);
  });

  test('currency defaults to USD; EUR checkouts take EUR catalog products', async () => {
    const usd = await createCheckout(server, key);
    assert.equal((await call<Json>(server, 'GET', `/api/checkout/${usd.token}/`)).body.currency, 'USD');
    const eur = await createCheckout(server, key, {
      currency: 'EUR',
      products: [{ id: eurProduct, quantity: 2 }],
    });
    const page = await call<Json>(server, 'GET', `/api/checkout/${eur.token}/`);
    assert.deepEqual([page.body.currency, page.body.total], ['EUR', '9.00']);
  });

  const create = (body: Json, apiKey = key, base = '/api') =>
    call<Json>(server, 'POST', `${base}/checkout/create/`, { apiKey, body });
  const adHoc = (item: Json) => ({ ...billing(), products: [item] });
  const valid = { name: 'Thing', unit_price: 5 };

  const cases: [string, () => Json, RegExp | (() => RegExp)][] = [
    [
      'a missing billing_country',
      () => ({ ...billing({ billing_country: undefined }), products: [valid] }),
      /^billing_country: /,
    ],
    [
      'a 3-letter billing_country',
      () => ({ ...billing({ billing_country: 'FRA' }), products: [valid] }),
      /^billing_country: /,
    ],
    [
      'a missing billing_first_name',
      () => ({ ...billing({ billing_first_name: undefined }), products: [valid] }),
      /^billing_first_name: /,
    ],
    [
      'a blank billing_first_name',
      () => ({ ...billing({ billing_first_name: '  ' }), products: [valid] }),
      /^billing_first_name: /,
    ],
    [
      'a 101-character billing_first_name',
      () => ({ ...billing({ billing_first_name: 'x'.repeat(101) }), products: [valid] }),
      /^billing_first_name: /,
    ],
    [
      'a 101-character billing_last_name',
      () => ({ ...billing({ billing_last_name: 'x'.repeat(101) }), products: [valid] }),
      /^billing_last_name: /,
    ],
    [
      'a missing billing_last_name',
      () => ({ ...billing({ billing_last_name: undefined }), products: [valid] }),
      /^billing_last_name: /,
    ],
    [
      'a missing billing_email',
      () => ({ ...billing({ billing_email: undefined }), products: [valid] }),
      /^billing_email: /,
    ],
    [
      'an invalid billing_email',
      () => ({ ...billing({ billing_email: 'not-an-email' }), products: [valid] }),
      /^billing_email: /,
    ],
    [
      'a numeric billing_phone',
      () => ({ ...billing({ billing_phone: 5 }), products: [valid] }),
      /^billing_phone: /,
    ],
    [
      'an unsupported currency',
      () => ({ ...billing({ currency: 'GBP' }), products: [valid] }),
      /^currency: must be one of USD, EUR/,
    ],
    ['missing products', () => billing(), /^products: /],
    ['empty products', () => ({ ...billing(), products: [] }), /^products: /],
    ['quantity 0', () => adHoc({ ...valid, quantity: 0 }), /^products\[0\]\.quantity: /],
    ['a fractional quantity', () => adHoc({ ...valid, quantity: 1.5 }), /^products\[0\]\.quantity: /],
    [
      'unit_price 0',
      () => adHoc({ name: 'x', unit_price: 0 }),
      /^products\[0\]\.unit_price: must be greater than 0/,
    ],
    ['a negative unit_price', () => adHoc({ name: 'x', unit_price: -5 }), /^products\[0\]\.unit_price: /],
    [
      'a unit_price with 3 decimals',
      () => adHoc({ name: 'x', unit_price: 1.005 }),
      /^products\[0\]\.unit_price: .*two decimals/,
    ],
    [
      'a non-numeric unit_price',
      () => adHoc({ name: 'x', unit_price: 'abc' }),
      /^products\[0\]\.unit_price: /,
    ],
    ['a boolean unit_price', () => adHoc({ name: 'x', unit_price: true }), /^products\[0\]\.unit_price: /],
    ['an ad hoc item without name', () => adHoc({ unit_price: 5 }), /^products\[0\]\.name: /],
    ['an ad hoc item without unit_price', () => adHoc({ name: 'x' }), /^products\[0\]\.unit_price: /],
    ['an item with neither id nor name', () => adHoc({ quantity: 2 }), /^products\[0\]: /],
    [
      'a catalog item with a unit_price',
      () => adHoc({ id: usdProduct, unit_price: 1 }),
      /^products\[0\]\.unit_price: /,
    ],
    ['an unknown catalog id', () => adHoc({ id: 'prod_00000000000000' }), /^products: .*prod_00000000000000/],
    [
      'an inactive catalog product',
      () => adHoc({ id: inactiveProduct }),
      () => new RegExp(`^products: .*${inactiveProduct}`),
    ],
    [
      "another organization's product",
      () => adHoc({ id: foreignProduct }),
      () => new RegExp(`^products: .*${foreignProduct}`),
    ],
    [
      'a product in another currency',
      () => adHoc({ id: eurProduct }),
      () => new RegExp(`^products: .*${eurProduct}`),
    ],
    [
      'a total below min_payment',
      () => adHoc({ name: 'x', unit_price: 0.1 }),
      /^products: .*minimum payment of 0\.50/,
    ],
    [
      'a total above max_payment',
      () => adHoc({ name: 'x', unit_price: 50_000, quantity: 3 }),
      /^products: .*maximum payment of 100000\.00/,
    ],
    ['a successUrl that is not a URL', () => ({ ...adHoc(valid), successUrl: 'not a url' }), /^successUrl: /],
    [
      'a javascript: failedUrl',
      () => ({ ...adHoc(valid), failedUrl: 'javascript:alert(1)' }),
      /^failedUrl: /,
    ],
    ['an ftp cancelUrl', () => ({ ...adHoc(valid), cancelUrl: 'ftp://shop.test/x' }), /^cancelUrl: /],
    [
      'sandbox_simulate with a production key',
      () => ({ ...adHoc(valid), sandbox_simulate: 'payment_failed' }),
      /^sandbox_simulate: /,
    ],
    [
      'sandbox_simulate: null with a production key (the field is sent, so it is refused)',
      () => ({ ...adHoc(valid), sandbox_simulate: null }),
      /^sandbox_simulate: only accepted with a sandbox API key/,
    ],
  ];
  for (const [name, body, detail] of cases) {
    test(`${name} is a 400 naming the field`, async () => {
      const response = await create(body());
      assert.equal(response.status, 400, response.text);
      assert.deepEqual(Object.keys(response.body), ['detail']);
      assert.match(response.body.detail as string, typeof detail === 'function' ? detail() : detail);
    });
  }

  test('sandbox_simulate on the sandbox: known values are accepted, unknown ones are a 400', async () => {
    for (const value of [
      'payment_failed',
      'checkout_canceled',
      'canceled',
      'success_pending_deposit',
      'checkout_pending',
    ]) {
      const response = await create({ ...adHoc(valid), sandbox_simulate: value }, sandboxKey, '/sandbox/api');
      assert.equal(response.status, 201, `${value}: ${response.text}`);
    }
    const withoutScript = await create(
      { ...adHoc(valid), sandbox_simulate: null },
      sandboxKey,
      '/sandbox/api',
    );
    assert.equal(withoutScript.status, 201, `null: ${withoutScript.text}`);
    const unknown = await create(
      { ...adHoc(valid), sandbox_simulate: 'explode' },
      sandboxKey,
      '/sandbox/api',
    );
    assert.equal(unknown.status, 400);
    assert.match(unknown.body.detail as string, /^sandbox_simulate: must be one of payment_failed, /);
  });

  test('authentication: no key 401, a session 401, a key without checkout:create 403, keys on the wrong base path 401', async () => {
    const body = adHoc(valid);
    assert.equal((await call(server, 'POST', '/api/checkout/create/', { body })).status, 401);
    assert.equal(
      (await call(server, 'POST', '/api/checkout/create/', { body, token: merchant.token })).status,
      401,
    );
    const readOnly = await createTestMerchant(server, 'Read Only');
    const readKey = await createTestKey(server, readOnly, { scopes: 'payments:read' });
    assert.equal((await create(body, readKey)).status, 403);
    assert.equal((await create(body, sandboxKey, '/api')).status, 401);
    assert.equal((await create(body, key, '/sandbox/api')).status, 401);
    const invalid = await call(server, 'POST', '/api/checkout/create/', { body: { products: 'nope' } });
    assert.equal(invalid.status, 401, 'authentication comes before validation');
  });

  test('an Idempotency-Key replays the first creation instead of creating a second session', async () => {
    const body = adHoc(valid);
    const headers = { 'idempotency-key': `create-${Date.now()}` };
    const first = await call<Json>(server, 'POST', '/api/checkout/create/', { apiKey: key, body, headers });
    const second = await call<Json>(server, 'POST', '/api/checkout/create/', { apiKey: key, body, headers });
    assert.equal(first.status, 201);
    assert.equal(second.status, 201);
    assert.equal(second.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(second.body, first.body);
  });

  test('a sandbox checkout pays with test cards too', async () => {
    const created = await createCheckout(server, sandboxKey, {}, '/sandbox/api');
    const paid = await pay(server, created.token, CARDS.success);
    assert.equal(paid.body.payment_status, 'paid');
  });
});
