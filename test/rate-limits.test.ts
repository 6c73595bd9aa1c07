// Rate limits: per API key, and per address on public endpoints, each past its limit a 429 with
// Retry-After, RateLimit-* headers and a {detail}. Login failures are covered in foundation.test.ts.
// Counters live in each process's memory (docs/operations.md), so every test here uses one server.
// The OpenAPI document lists 429 on exactly the operations a limit can refuse: every API-key and public
// operation is called past limits of 1, and those answering 429 must be those documenting it, but for
// the few whose 429 has another cause (named below, each provoked by its own test).
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

/**
 * Operations whose 429 comes from a count of their own rather than from the key's or the address's limit,
 * each provoked where its limit is tested: the password line's share per address and the login limiter
 * (openapi-password-503.test.ts, security/password-failures.test.ts), the second-factor codes per account
 * (two-factor.test.ts), verification codes per user (refunds-dashboard.test.ts), long-polls per session
 * (events-feed.test.ts).
 */
const OWN_LIMITS = [
  'GET /api/organization/events/',
  'POST /api/auth/2fa/disable/',
  'POST /api/auth/accept-invite/',
  'POST /api/auth/confirm/',
  'POST /api/auth/login/',
  'POST /api/auth/login/2fa/',
  'POST /api/auth/password-reset/confirm/',
  'POST /api/auth/password/',
  'POST /api/refunds/verification-code/',
];

interface DocumentedOperation {
  security?: Record<string, string[]>[];
  responses: Record<string, unknown>;
}

describe(`the operations documenting 429 are those a limit refuses (${DB_KIND})`, () => {
  let server: TestServer;

  before(async () => {
    server = await startTestServer({
      worker: false,
      env: {
        KASSA_RATE_LIMIT_API_KEY: '1',
        KASSA_RATE_LIMIT_API_KEY_WINDOW_MS: '600000',
        KASSA_RATE_LIMIT_PUBLIC: '1',
        KASSA_RATE_LIMIT_PUBLIC_WINDOW_MS: '600000',
      },
    });
  });
  after(() => server.close());

  test('every API-key or public operation documenting 429 answers it past the limits of 1, and no other does', async () => {
    const document = (
      await call<{ paths: Record<string, Record<string, DocumentedOperation>> }>(
        server,
        'GET',
        '/api/openapi.json',
      )
    ).body;
    const key = await createTestKey(server, await createTestMerchant(server, 'Limited Shop'));
    const documented: string[] = [];
    const refused: string[] = [];
    for (const [template, methods] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        const route = `${method.toUpperCase()} ${template}`;
        if ('429' in operation.responses) documented.push(route);
        const security = operation.security ?? [];
        const apiKey = security.some((requirement) => 'ApiKey' in requirement);
        // Session operations have no limit of the key's or the address's kind: their 429s are OWN_LIMITS.
        if (!apiKey && security.length > 0) continue;
        // Any id and an empty body: each limit refuses before the route looks at either. call() checks
        // every answer against the document.
        const path = template.replace(/\{\w+\}/g, 'x1');
        const options = { apiKey: apiKey ? key : undefined, body: method === 'get' ? undefined : {} };
        for (let i = 0; i < 2; i += 1) {
          if ((await call(server, method, path, options)).status === 429) {
            refused.push(route);
            break;
          }
        }
      }
    }
    assert.deepEqual(
      documented.filter((route) => !OWN_LIMITS.includes(route)).sort(),
      refused.sort(),
      'the operations documenting 429 (but for OWN_LIMITS) are exactly those a limit refused',
    );
    for (const route of OWN_LIMITS) assert.ok(documented.includes(route), `${route} documents its 429`);
  });
});
