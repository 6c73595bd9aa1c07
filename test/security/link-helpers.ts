// What the payment-link security tests share: a merchant's product, a link over it, and the public calls.
import assert from 'node:assert/strict';
import { billing, type Json } from '../helpers/checkout.ts';
import { type ApiResponse, call, type Merchant, type TestServer } from '../helpers/server.ts';

/** A link over one new catalog product (10.00 USD); returns its record. */
export async function createLink(server: TestServer, merchant: Merchant, body: Json = {}): Promise<Json> {
  const product = await call<Json>(server, 'POST', '/api/products/', {
    token: merchant.token,
    body: { name: 'Poster', unit_price: '10.00', currency: 'USD' },
  });
  assert.equal(product.status, 201, product.text);
  const link = await call<Json>(server, 'POST', '/api/payment-links/', {
    token: merchant.token,
    body: { name: 'Internal: spring campaign B', products: [{ product_id: product.body.id }], ...body },
  });
  assert.equal(link.status, 201, link.text);
  return link.body;
}

export function startLink(server: TestServer, id: unknown, extra: Json = {}): Promise<ApiResponse<Json>> {
  return call<Json>(server, 'POST', `/api/payment-links/public/${id}/start/`, { body: billing(extra) });
}

export async function linkRecord(server: TestServer, merchant: Merchant, id: unknown): Promise<Json> {
  return (await call<Json>(server, 'GET', `/api/payment-links/${id}/`, { token: merchant.token })).body;
}
