// Rate limits: per API key, and per address on public endpoints, each past its limit a 429 with
// Retry-After, RateLimit-* headers and a {detail}. Login failures are covered in foundation.test.ts.
// Counters live in each process's memory (docs/operations.md), so every test here uses one server.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { KEY_ROUTE } from './helpers/api-key-route.ts';
import {
  type ApiResponse,
  call,
  createTestKey,
  createTestMerchant,
  DB_KIND,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';

const LIMIT = 3;

function assertLimited(response: ApiResponse, windowS: number) {
  assert.equal(response.status, 429, response.text);
  assert.equal(typeof response.body.detail, 'string');
  const retryAfter = Number(response.headers.get('retry-after'));
  assert.ok(retryAfter >= 1 && retryAfter <= windowS, `Retry-After ${retryAfter}`);
  assert.equal(response.headers.get('ratelimit-limit'), String(LIMIT));
  assert.equal(response.headers.get('ratelimit-remaining'), '0');
  const reset = Number(response.headers.get('ratelimit-reset'));
  assert.ok(reset >= 1 && reset <= windowS, `RateLimit-Reset ${reset}`);
}

describe(`rate limits (${DB_KIND})`, () => {
  let server: TestServer;
  let shop: Merchant;

  before(async () => {
    server = await startTestServer({
      worker: false,
      env: {
        KASSA_RATE_LIMIT_API_KEY: String(LIMIT),
        KASSA_RATE_LIMIT_API_KEY_WINDOW_MS: '60000',
        KASSA_RATE_LIMIT_PUBLIC: String(LIMIT),
        KASSA_RATE_LIMIT_PUBLIC_WINDOW_MS: '60000',
      },
    });
    shop = await createTestMerchant(server, 'Busy Shop');
  });
  after(() => server.close());

  test('an API key past its limit gets 429 with Retry-After, RateLimit-* headers and a detail', async () => {
    const key = await createTestKey(server, shop);
    const remaining: (string | null)[] = [];
    for (let i = 0; i < LIMIT; i += 1) {
      const response = await call(server, 'GET', `/api${KEY_ROUTE}`, { apiKey: key });
      assert.equal(response.status, 404, 'within the limit the request runs');
      assert.equal(response.headers.get('ratelimit-limit'), String(LIMIT));
      remaining.push(response.headers.get('ratelimit-remaining'));
    }
    assert.deepEqual(remaining, ['2', '1', '0']);
    const limited = await call(server, 'GET', `/api${KEY_ROUTE}`, { apiKey: key });
    assertLimited(limited, 60);
    assert.equal(limited.body.detail, 'Rate limit exceeded for this API key. Slow down.');
    // Writes are refused the same way, before anything is created.
    const create = await call(server, 'POST', '/api/checkout/create/', {
      apiKey: key,
      body: { products: [{ name: 'Widget', unit_price: 10 }] },
    });
    assertLimited(create, 60);
  });

  test("one key's limit does not touch another key's", async () => {
    const busy = await createTestKey(server, await createTestMerchant(server, 'Noisy Neighbour'));
    for (let i = 0; i <= LIMIT; i += 1) await call(server, 'GET', `/api${KEY_ROUTE}`, { apiKey: busy });
    assert.equal((await call(server, 'GET', `/api${KEY_ROUTE}`, { apiKey: busy })).status, 429);
    const quiet = await createTestKey(server, await createTestMerchant(server, 'Quiet Shop'));
    const answer = await call(server, 'GET', `/api${KEY_ROUTE}`, { apiKey: quiet });
    assert.equal(answer.status, 404);
    assert.equal(answer.headers.get('ratelimit-remaining'), String(LIMIT - 1));
    // The sandbox key of the same organization is another key, with its own window.
    const other = await createTestMerchant(server, 'Two Keys');
    const live = await createTestKey(server, other);
    const sandbox = await createTestKey(server, other, { environment: 'sandbox' });
    for (let i = 0; i <= LIMIT; i += 1) await call(server, 'GET', `/api${KEY_ROUTE}`, { apiKey: live });
    assert.equal((await call(server, 'GET', `/sandbox/api${KEY_ROUTE}`, { apiKey: sandbox })).status, 404);
  });

  test('a public endpoint (payment-link preview) is limited per address, with the same headers', async () => {
    const product = await call<{ id: string }>(server, 'POST', '/api/products/', {
      token: shop.token,
      body: { name: 'Poster', unit_price: '15.00' },
    });
    const link = await call<{ id: string }>(server, 'POST', '/api/payment-links/', {
      token: shop.token,
      body: { name: 'Poster link', products: [{ product_id: product.body.id }] },
    });
    assert.equal(link.status, 201, link.text);
    const preview = () => call(server, 'GET', `/api/payment-links/public/${link.body.id}/`);
    for (let i = 0; i < LIMIT; i += 1) {
      const response = await preview();
      assert.equal(response.status, 200, response.text);
      assert.equal(response.headers.get('ratelimit-remaining'), String(LIMIT - 1 - i));
    }
    const limited = await preview();
    assertLimited(limited, 60);
    assert.equal(limited.body.detail, 'Too many requests from this address. Try again later.');
    // The same address on the link's start endpoint shares the window.
    const start = await call(server, 'POST', `/api/payment-links/public/${link.body.id}/start/`, {
      body: {
        billing_country: 'FR',
        billing_first_name: 'A',
        billing_last_name: 'B',
        billing_email: 'a@b.co',
      },
    });
    assertLimited(start, 60);
    // Dashboard endpoints are not public and are not counted there.
    assert.equal((await call(server, 'GET', '/api/payment-links/', { token: shop.token })).status, 200);
  });
});
