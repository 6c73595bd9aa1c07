import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  call,
  createTestMerchant,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';

interface Product {
  id: string;
  name: string;
  description: string;
  unit_price: string;
  currency: 'USD' | 'EUR';
  is_active: boolean;
  created_at: string;
  updated_at: string;
}

const PRODUCT_FIELDS = [
  'created_at',
  'currency',
  'description',
  'id',
  'is_active',
  'name',
  'unit_price',
  'updated_at',
].sort();

function detail(body: unknown): string {
  return (body as { detail: string }).detail;
}

describe('catalog products', () => {
  let server: TestServer;
  let merchant: Merchant;
  before(async () => {
    server = await startTestServer();
    merchant = await createTestMerchant(server, 'Catalog Shop');
  });
  after(() => server.close());

  const request = <T = Product>(method: string, path: string, body?: unknown) =>
    call<T>(server, method, `/api/products/${path}`, { token: merchant.token, body });
  const create = (body: Record<string, unknown>) => request('POST', '', body);

  test('creating a product returns 201 with a prod_ id, a two-decimal price and the defaults', async () => {
    const response = await create({ name: '  T-shirt ', unit_price: '25.5' });
    assert.equal(response.status, 201, response.text);
    assert.deepEqual(Object.keys(response.body).sort(), PRODUCT_FIELDS);
    assert.match(response.body.id, /^prod_[0-9A-Za-z]{14}$/);
    assert.equal(response.body.name, 'T-shirt');
    assert.equal(response.body.description, '');
    assert.equal(response.body.unit_price, '25.50');
    assert.equal(response.body.currency, 'USD');
    assert.equal(response.body.is_active, true);
    assert.ok(Date.parse(response.body.created_at) > 0);
    assert.equal(response.body.updated_at, response.body.created_at);
  });

  test('every field can be given at creation, and a JSON number price is read as its decimal text', async () => {
    const response = await create({
      name: 'Mug',
      description: 'Ceramic, 330 ml',
      unit_price: 12.3,
      currency: 'EUR',
      is_active: false,
    });
    assert.equal(response.status, 201, response.text);
    assert.equal(response.body.description, 'Ceramic, 330 ml');
    assert.equal(response.body.unit_price, '12.30');
    assert.equal(response.body.currency, 'EUR');
    assert.equal(response.body.is_active, false);
  });

  test('a product can be read back by id, and the list shows the newest first', async () => {
    const first = await create({ name: 'First', unit_price: '1.00' });
    const second = await create({ name: 'Second', unit_price: '2.00' });
    const read = await request('GET', `${first.body.id}/`);
    assert.equal(read.status, 200);
    assert.deepEqual(read.body, first.body);
    const list = await request<Product[]>('GET', '');
    assert.equal(list.status, 200);
    const ids = list.body.map((product) => product.id);
    assert.ok(ids.indexOf(second.body.id) < ids.indexOf(first.body.id));
    assert.deepEqual(
      list.body.find((product) => product.id === second.body.id),
      second.body,
    );
  });

  test('PATCH changes the given fields only and bumps updated_at', async () => {
    const created = await create({ name: 'Poster', unit_price: '10.00', description: 'A2' });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const patched = await request('PATCH', `${created.body.id}/`, { unit_price: '12.99', is_active: false });
    assert.equal(patched.status, 200, patched.text);
    assert.equal(patched.body.unit_price, '12.99');
    assert.equal(patched.body.is_active, false);
    assert.equal(patched.body.name, 'Poster');
    assert.equal(patched.body.description, 'A2');
    assert.equal(patched.body.created_at, created.body.created_at);
    assert.ok(patched.body.updated_at > created.body.updated_at);
    const renamed = await request('PATCH', `${created.body.id}/`, { name: 'Big poster', currency: 'EUR' });
    assert.equal(renamed.body.name, 'Big poster');
    assert.equal(renamed.body.currency, 'EUR');
    assert.deepEqual((await request('GET', `${created.body.id}/`)).body, renamed.body);
  });

  test('an invalid price, currency or name at creation is a 400 naming the field', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ name: 'Free', unit_price: '0' }, 'unit_price'],
      [{ name: 'Free', unit_price: 0 }, 'unit_price'],
      [{ name: 'Negative', unit_price: '-1.00' }, 'unit_price'],
      [{ name: 'Negative', unit_price: -1 }, 'unit_price'],
      [{ name: 'Precise', unit_price: '1.234' }, 'unit_price'],
      [{ name: 'Precise', unit_price: 1.234 }, 'unit_price'],
      [{ name: 'Floaty', unit_price: 0.1 + 0.2 }, 'unit_price'],
      [{ name: 'Words', unit_price: 'ten' }, 'unit_price'],
      [{ name: 'Exponent', unit_price: '1e3' }, 'unit_price'],
      [{ name: 'Huge', unit_price: '10000000000000.00' }, 'unit_price'],
      [{ name: 'Null', unit_price: null }, 'unit_price'],
      [{ name: 'No price' }, 'unit_price'],
      [{ name: 'Pounds', unit_price: '1.00', currency: 'GBP' }, 'currency'],
      [{ name: 'Lower', unit_price: '1.00', currency: 'usd' }, 'currency'],
      [{ unit_price: '1.00' }, 'name'],
      [{ name: '', unit_price: '1.00' }, 'name'],
      [{ name: '   ', unit_price: '1.00' }, 'name'],
      [{ name: 'x'.repeat(201), unit_price: '1.00' }, 'name'],
      [{ name: 'Flag', unit_price: '1.00', is_active: 'yes' }, 'is_active'],
      [{ name: 'Extra', unit_price: '1.00', sku: 'X1' }, 'sku'],
    ];
    for (const [body, field] of cases) {
      const response = await create(body);
      assert.equal(response.status, 400, `${JSON.stringify(body)} → ${response.text}`);
      assert.match(detail(response.body), new RegExp(`^${field}: `), JSON.stringify(body));
    }
  });

  test('an invalid PATCH is a 400 naming the field and changes nothing', async () => {
    const created = await create({ name: 'Stable', unit_price: '5.00' });
    for (const [body, field] of [
      [{ unit_price: '0.00' }, 'unit_price'],
      [{ unit_price: '5.001' }, 'unit_price'],
      [{ currency: 'JPY' }, 'currency'],
      [{ name: ' ' }, 'name'],
      [{ id: 'prod_00000000000000' }, 'id'],
    ] as const) {
      const response = await request('PATCH', `${created.body.id}/`, body);
      assert.equal(response.status, 400, JSON.stringify(body));
      assert.match(detail(response.body), new RegExp(`^${field}: `));
    }
    assert.deepEqual((await request('GET', `${created.body.id}/`)).body, created.body);
  });

  test('DELETE answers 204; the product is then a 404 everywhere and gone from the list', async () => {
    const created = await create({ name: 'Discontinued', unit_price: '3.00' });
    const deleted = await request('DELETE', `${created.body.id}/`);
    assert.equal(deleted.status, 204);
    assert.equal(deleted.text, '');
    for (const method of ['GET', 'DELETE']) {
      const response = await request(method, `${created.body.id}/`);
      assert.equal(response.status, 404, method);
      assert.deepEqual(response.body, { detail: 'Product not found.' });
    }
    assert.equal((await request('PATCH', `${created.body.id}/`, { name: 'Back' })).status, 404);
    const list = await request<Product[]>('GET', '');
    assert.ok(!list.body.some((product) => product.id === created.body.id));
  });

  test('a deleted product is kept in the database (soft delete)', async () => {
    const created = await create({ name: 'Archived', unit_price: '3.00' });
    await request('DELETE', `${created.body.id}/`);
    const row = await server.ctx.db
      .selectFrom('products')
      .select(['deleted_at', 'is_active'])
      .where('public_id', '=', created.body.id)
      .executeTakeFirst();
    assert.ok(row?.deleted_at);
    assert.equal(Number(row?.is_active), 0);
  });

  test('an unknown or malformed id is a 404', async () => {
    const ids = [
      'prod_00000000000000',
      'prod_123',
      'prod______________',
      'nope',
      '1',
      'TX0000000000000000',
      'prod_0000000000000%21',
      'x'.repeat(65),
      'x'.repeat(300),
    ];
    for (const id of ids) {
      for (const method of ['GET', 'PATCH', 'DELETE']) {
        const response = await request(method, `${id}/`, method === 'PATCH' ? { name: 'x' } : undefined);
        assert.equal(response.status, 404, `${method} ${id}: ${response.text}`);
        assert.equal(typeof detail(response.body), 'string');
      }
    }
  });

  test('the product endpoints need a session, checked before the body', async () => {
    assert.equal((await call(server, 'GET', '/api/products/')).status, 401);
    const bad = await call(server, 'POST', '/api/products/', { body: { unit_price: 'nonsense' } });
    assert.equal(bad.status, 401);
    assert.equal((await call(server, 'DELETE', '/api/products/prod_00000000000000/')).status, 401);
  });
});
