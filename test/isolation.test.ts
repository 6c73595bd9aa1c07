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
  unit_price: string;
}
interface KeyRecord {
  id: number;
  status: string;
  prefix: string;
  raw_key?: string;
}

describe('cross-organization isolation', () => {
  let server: TestServer;
  let shopA: Merchant;
  let shopB: Merchant;
  let productA: Product;
  let keyA: KeyRecord;
  let keyB: KeyRecord;
  before(async () => {
    server = await startTestServer();
    shopA = await createTestMerchant(server, 'Shop A');
    shopB = await createTestMerchant(server, 'Shop B');
    productA = (
      await call<Product>(server, 'POST', '/api/products/', {
        token: shopA.token,
        body: { name: 'A only', unit_price: '9.99' },
      })
    ).body;
    await call(server, 'POST', '/api/products/', {
      token: shopB.token,
      body: { name: 'B only', unit_price: '1.00' },
    });
    keyA = (
      await call<KeyRecord>(server, 'POST', '/api/organization/api-keys/', {
        token: shopA.token,
        body: { name: 'A key', allowed_scopes: '' },
      })
    ).body;
    keyB = (
      await call<KeyRecord>(server, 'POST', '/api/organization/api-keys/', {
        token: shopB.token,
        body: { name: 'B key', allowed_scopes: '' },
      })
    ).body;
  });
  after(() => server.close());

  test('another organization cannot read, change or delete a product: 404, and the product is untouched', async () => {
    const path = `/api/products/${productA.id}/`;
    const read = await call(server, 'GET', path, { token: shopB.token });
    assert.equal(read.status, 404);
    assert.deepEqual(read.body, { detail: 'Product not found.' });
    assert.equal(
      (await call(server, 'PATCH', path, { token: shopB.token, body: { name: 'Hijacked' } })).status,
      404,
    );
    assert.equal((await call(server, 'DELETE', path, { token: shopB.token })).status, 404);
    const owner = await call<Product>(server, 'GET', path, { token: shopA.token });
    assert.equal(owner.status, 200);
    assert.deepEqual(owner.body, productA);
  });

  test('each organization lists only its own products', async () => {
    const listA = await call<Product[]>(server, 'GET', '/api/products/', { token: shopA.token });
    const listB = await call<Product[]>(server, 'GET', '/api/products/', { token: shopB.token });
    assert.deepEqual(
      listA.body.map((product) => product.name),
      ['A only'],
    );
    assert.deepEqual(
      listB.body.map((product) => product.name),
      ['B only'],
    );
  });

  test('another organization cannot revoke a key: 404, and the key stays active', async () => {
    const response = await call(server, 'POST', `/api/organization/api-keys/${keyA.id}/revoke/`, {
      token: shopB.token,
    });
    assert.equal(response.status, 404);
    assert.deepEqual(response.body, { detail: 'API key not found.' });
    const listA = await call<KeyRecord[]>(server, 'GET', '/api/organization/api-keys/', {
      token: shopA.token,
    });
    assert.equal(listA.body.find((key) => key.id === keyA.id)?.status, 'active');
  });

  test('each organization sees only its own keys, and rotating one leaves the other alone', async () => {
    const listB = await call<KeyRecord[]>(server, 'GET', '/api/organization/api-keys/', {
      token: shopB.token,
    });
    assert.deepEqual(
      listB.body.map((key) => key.id),
      [keyB.id],
    );
    const rotated = await call<KeyRecord>(server, 'POST', '/api/organization/api-keys/rotate/', {
      token: shopB.token,
    });
    assert.equal(rotated.status, 200);
    keyB = rotated.body;
    const listA = await call<KeyRecord[]>(server, 'GET', '/api/organization/api-keys/', {
      token: shopA.token,
    });
    assert.deepEqual(
      listA.body.map((key) => [key.id, key.status]),
      [[keyA.id, 'active']],
    );
  });

  test('each session sees and changes only its own organization', async () => {
    const orgB = await call<{ id: number; name: string }>(server, 'GET', '/api/organization/', {
      token: shopB.token,
    });
    assert.equal(orgB.body.id, shopB.organizationId);
    await call(server, 'PATCH', '/api/organization/', {
      token: shopB.token,
      body: { name: 'Shop B renamed' },
    });
    const orgA = await call<{ id: number; name: string }>(server, 'GET', '/api/organization/', {
      token: shopA.token,
    });
    assert.equal(orgA.body.id, shopA.organizationId);
    assert.equal(orgA.body.name, 'Shop A');
  });

  test("one organization's payment is a 404 to another organization's key", async () => {
    const checkout = await call<{ token: string }>(server, 'POST', '/api/checkout/create/', {
      apiKey: keyA.raw_key,
      body: {
        billing_country: 'FR',
        billing_first_name: 'Ada',
        billing_last_name: 'Lovelace',
        billing_email: 'ada@example.com',
        products: [{ id: productA.id }],
      },
    });
    assert.equal(checkout.status, 201, checkout.text);
    const paid = await call<{ transaction_id: string }>(
      server,
      'POST',
      `/api/checkout/${checkout.body.token}/pay/`,
      {
        body: {
          card_number: '4242424242424242',
          exp_month: 12,
          exp_year: 2099,
          cvc: '123',
          cardholder_name: 'Ada',
        },
      },
    );
    assert.equal(paid.status, 200, paid.text);
    const path = `/api/transactions/${paid.body.transaction_id}/`;
    assert.equal((await call(server, 'GET', path, { apiKey: keyA.raw_key })).status, 200);
    const other = await call(server, 'GET', path, { apiKey: keyB.raw_key });
    assert.equal(other.status, 404);
    assert.equal(typeof (other.body as { detail: string }).detail, 'string');
  });

  test("a checkout naming another organization's product is a 400 naming the id", async () => {
    const response = await call(server, 'POST', '/api/checkout/create/', {
      apiKey: keyB.raw_key,
      body: {
        billing_country: 'FR',
        billing_first_name: 'Ada',
        billing_last_name: 'Lovelace',
        billing_email: 'ada@example.com',
        products: [{ id: productA.id }],
      },
    });
    assert.equal(response.status, 400);
    assert.match((response.body as { detail: string }).detail, new RegExp(productA.id));
  });
});
