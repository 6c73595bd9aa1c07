// The OpenAPI document at /api/openapi.json: valid OpenAPI 3.1, one operation for every /api route the
// app registers (and none it does not), security and scopes on every API-key operation, the {detail}
// error body everywhere, a documented success response everywhere, and readable docs at /docs.
// (That every response matches its schema is checked by call() in every e2e test.)
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { SUMMARIES } from '../src/http/openapi-summaries.ts';
import { requestBodyValidator } from './helpers/conformance.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  DB_KIND,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';

interface Operation {
  operationId?: string;
  summary?: string;
  description?: string;
  parameters?: { $ref?: string; name?: string; in?: string; schema?: Record<string, unknown> }[];
  requestBody?: {
    content: Record<string, { schema: { properties: Record<string, Record<string, unknown>> } }>;
  };
  security?: Record<string, string[]>[];
  responses: Record<
    string,
    { headers?: Record<string, unknown>; content?: Record<string, { schema?: Record<string, unknown> }> }
  >;
}
interface Document {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  servers?: { url: string; variables?: { origin?: { default: string } } }[];
  webhooks?: Record<string, Record<string, Operation>>;
  info: { license?: { name: string }; contact?: unknown };
  components: { schemas?: Record<string, Record<string, unknown>> };
}

/** Method and path ("GET /api/products/{id}/") of every route in app.printRoutes(), HEAD left out. */
function registeredRoutes(tree: string): Set<string> {
  const routes = new Set<string>();
  const stack: string[] = [];
  for (const line of tree.split('\n')) {
    const match = /^([│ ]*)[├└]── (\S+)(?: \(([^)]+)\))?/.exec(line);
    if (!match) continue;
    const depth = match[1].length / 4;
    stack[depth] = (depth > 0 ? stack[depth - 1] : '') + match[2];
    stack.length = depth + 1;
    for (const method of (match[3] ?? '').split(', ').filter((m) => m && m !== 'HEAD')) {
      const path = `${stack[depth].replace(/:(\w+)/g, '{$1}').replace(/\/$/, '')}/`;
      routes.add(`${method} ${path}`);
    }
  }
  return routes;
}

function operations(document: Document): [string, Operation][] {
  return Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]): [string, Operation] => [
      `${method.toUpperCase()} ${path}`,
      operation,
    ]),
  );
}

/** A schema, or the component schema its $ref names. */
function resolve(document: Document, schema: Record<string, unknown> | undefined) {
  const ref = schema?.$ref;
  return typeof ref === 'string'
    ? document.components.schemas?.[ref.replace('#/components/schemas/', '')]
    : schema;
}

describe(`the OpenAPI document (${DB_KIND})`, () => {
  let server: TestServer;
  let document: Document;
  let routes: Set<string>;

  before(async () => {
    server = await startTestServer({ worker: false });
    const response = await fetch(`${server.url}/api/openapi.json`);
    assert.equal(response.status, 200);
    document = (await response.json()) as Document;
    routes = registeredRoutes(server.app.printRoutes({ commonPrefix: false }));
  });
  after(() => server.close());

  test('is a valid OpenAPI 3.1.0 document', async () => {
    assert.equal(document.openapi, '3.1.0');
    const result = await new Validator().validate(document as unknown as Record<string, unknown>);
    assert.deepEqual(result.errors ?? [], []);
    assert.equal(result.valid, true);
  });

  test('documents every /api route the app registers, and nothing else', () => {
    const apiRoutes = [...routes].filter(
      (route) => / \/api\//.test(route) && !route.includes('openapi.json'),
    );
    assert.ok(apiRoutes.length > 40, `only ${apiRoutes.length} routes found in printRoutes()`);
    const documented = operations(document).map(([route]) => route);
    assert.deepEqual(
      apiRoutes.filter((route) => !documented.includes(route)),
      [],
      'registered but undocumented',
    );
    assert.deepEqual(
      documented.filter((route) => !routes.has(route)),
      [],
      'documented but not registered',
    );
  });

  test('every API-key operation lists its scopes and both API-key security schemes', () => {
    // The sandbox base path carries exactly the API-key routes (its POST /refunds/ only answers 405).
    const keyRoutes = [...routes]
      .filter((route) => route.includes(' /sandbox/api/') && route !== 'POST /sandbox/api/refunds/')
      .map((route) => route.replace(' /sandbox/api/', ' /api/'));
    assert.ok(keyRoutes.length >= 6);
    const byRoute = new Map(operations(document));
    for (const route of keyRoutes) {
      const operation = byRoute.get(route);
      assert.ok(operation, `${route} is not documented`);
      const security = operation.security ?? [];
      const scopes = security.flatMap((requirement) => requirement.ApiKey ?? []);
      assert.ok(scopes.length > 0, `${route} lists no scopes`);
      for (const scheme of ['ApiKey', 'ApiKeyHeader']) {
        const listed = security.flatMap((requirement) => requirement[scheme] ?? []);
        assert.deepEqual(listed.sort(), [...scopes].sort(), `${route}: ${scheme} scopes`);
      }
      assert.match(operation.description ?? '', new RegExp(`Scopes: ${scopes.join(' or ')}\\.`));
    }
    // Sessions and public operations carry their own schemes, never a key's.
    const sessionOnly = byRoute.get('GET /api/organization/');
    assert.deepEqual(sessionOnly?.security, [{ SessionToken: [] }, { SessionCookie: [] }]);
    assert.deepEqual(byRoute.get('POST /api/auth/login/')?.security, []);
    // sync-status answers a checkout token without a key, or a checkout_id with one.
    assert.deepEqual(byRoute.get('POST /api/checkout/sync-status/')?.security?.[0], {});
  });

  test('every operation documents each client error by its exact status, with the {detail} body, and a success response', () => {
    for (const [route, operation] of operations(document)) {
      const statuses = Object.keys(operation.responses);
      assert.ok(
        !statuses.some((status) => /XX$|^default$/.test(status)),
        `${route} has a catch-all response`,
      );
      const clientErrors = statuses.filter((status) => /^4\d\d$/.test(status));
      assert.ok(clientErrors.includes('400'), `${route} documents no 400`);
      for (const status of clientErrors) {
        const response = operation.responses[status] as { description?: string; content?: unknown };
        assert.ok(response.description?.trim(), `${route} ${status} has no description`);
        const schema = resolve(document, operation.responses[status]?.content?.['application/json']?.schema);
        assert.deepEqual(schema?.required, ['detail'], `${route} ${status}`);
        assert.deepEqual(schema?.properties, { detail: { type: 'string' } }, `${route} ${status}`);
      }
      const success = Object.keys(operation.responses).filter((status) => /^2\d\d$/.test(status));
      assert.equal(success.length, 1, `${route} documents ${success.length} success responses`);
    }
  });

  test('descriptions are not repeated (the HEAD twin of a GET is not documented again)', () => {
    for (const [route, operation] of operations(document)) {
      const notes = (operation.description ?? '').match(/Sandbox keys use the same path/g) ?? [];
      assert.ok(notes.length <= 1, `${route}: ${operation.description}`);
    }
  });

  test('every operation has a unique operationId and a summary; the API-key ones are named by hand', () => {
    const ids = operations(document).map(([route, operation]) => {
      assert.ok(operation.summary?.trim(), `${route} has no summary`);
      assert.ok(operation.operationId, `${route} has no operationId`);
      return operation.operationId;
    });
    assert.equal(new Set(ids).size, ids.length, 'operationIds repeat');
    for (const id of ['createCheckoutSession', 'syncCheckoutStatus', 'listTransactions', 'getTransaction']) {
      assert.ok(ids.includes(id), id);
    }
    for (const id of ['createRefund', 'listRefunds', 'getRefund']) assert.ok(ids.includes(id), id);
  });

  test('every entry of the summary table names a route that exists', () => {
    const documented = new Set(operations(document).map(([route]) => route));
    for (const key of Object.keys(SUMMARIES)) {
      const route = `${key.replace(/:(\w+)/g, '{$1}')}`;
      assert.ok(documented.has(route), `SUMMARIES has ${key}, which is not a route`);
    }
  });

  test('named schemas are components, referenced from the operations', () => {
    const names = Object.keys(document.components.schemas ?? {});
    for (const name of ['Payment', 'PaymentPage', 'Refund', 'RefundPage', 'CheckoutSession', 'Error']) {
      assert.ok(names.includes(name), `components.schemas has no ${name}`);
    }
    const byRoute = new Map(operations(document));
    const ok = (route: string, status: string) =>
      byRoute.get(route)?.responses[status]?.content?.['application/json']?.schema?.$ref;
    assert.equal(ok('GET /api/transactions/{id}/', '200'), '#/components/schemas/Payment');
    assert.equal(ok('POST /api/checkout/create/', '201'), '#/components/schemas/CheckoutSession');
  });

  test('servers, license, contact, and the two webhook signature schemes on the four events', () => {
    assert.deepEqual(
      document.servers?.map((server) => server.url),
      ['{origin}', '{origin}/sandbox'],
    );
    // {origin} defaults to this instance's public URL (the test server's own port), not localhost:3000.
    assert.deepEqual(
      document.servers?.map((entry) => entry.variables?.origin?.default),
      [server.url, server.url],
    );
    assert.equal(document.info.license?.name, 'MIT');
    assert.ok(document.info.contact);
    const events = Object.keys(document.webhooks ?? {}).sort();
    assert.deepEqual(events, [
      'payout.status_changed',
      'refund.status_changed',
      'transaction.status_changed',
      'webhook.test',
    ]);
    for (const event of events) {
      const headers = (document.webhooks?.[event].post.parameters ?? []).map((p) => p.$ref?.split('/').pop());
      for (const name of ['X-Webhook-Signature', 'webhook-id', 'webhook-timestamp', 'webhook-signature']) {
        assert.ok(headers.includes(name), `${event} lacks ${name}`);
      }
    }
  });

  test('errors are explicit: 401/403 on authenticated operations, 429 with its headers where limited', () => {
    const byRoute = new Map(operations(document));
    const keyRoutes = [
      'POST /api/checkout/create/',
      'GET /api/transactions/',
      'POST /api/transactions/{id}/refund/',
    ];
    for (const route of [...keyRoutes, 'POST /api/auth/login/']) {
      const limited = byRoute.get(route)?.responses['429'];
      assert.ok(limited, `${route} documents no 429`);
      assert.deepEqual(Object.keys(limited.headers ?? {}).sort(), [
        'RateLimit-Limit',
        'RateLimit-Remaining',
        'RateLimit-Reset',
        'Retry-After',
      ]);
    }
    for (const route of [...keyRoutes, 'GET /api/organization/']) {
      for (const status of ['400', '401', '403']) {
        const schema = byRoute.get(route)?.responses[status]?.content?.['application/json']?.schema;
        assert.deepEqual(schema, { $ref: '#/components/schemas/Error' }, `${route} ${status}`);
      }
    }
    const idempotent = byRoute.get('POST /api/checkout/create/')?.parameters?.map((p) => p.$ref);
    assert.ok(idempotent?.includes('#/components/parameters/Idempotency-Key'));
  });

  test("a read of one's own account documents no 403 and meets none: no role, CSRF, two-factor or recent-auth refusal applies", async () => {
    const byRoute = new Map(operations(document));
    const ownAccount = ['GET /api/auth/me/', 'GET /api/auth/sessions/'];
    for (const route of ownAccount) {
      assert.ok(byRoute.get(route), route);
      assert.equal(
        byRoute.get(route)?.responses['403'],
        undefined,
        `${route} documents a 403 it cannot answer`,
      );
    }
    // Every cause of a session 403 at once: the organization requires two-factor the member lacks, the
    // login is hours old, and the session comes as a cookie without X-Requested-With.
    const merchant = await createTestMerchant(server, 'Own Account Shop');
    await server.ctx.db
      .updateTable('organizations')
      .set({ require_two_factor: 1 })
      .where('id', '=', merchant.organizationId)
      .execute();
    await server.ctx.db
      .updateTable('sessions')
      .set({ authenticated_at: new Date(Date.now() - 6 * 60 * 60 * 1000).toISOString() })
      .where('organization_id', '=', merchant.organizationId)
      .execute();
    const cookie = { headers: { cookie: `kassa_session=${merchant.token}` } };
    for (const route of ownAccount) {
      const answer = await call(server, 'GET', route.split(' ')[1], cookie);
      assert.equal(answer.status, 200, `${route}: ${answer.text}`);
    }
    const organization = await call(server, 'GET', '/api/organization/', cookie);
    assert.equal(organization.status, 403, 'the same session is refused beyond its own account');
    assert.ok(byRoute.get('GET /api/organization/')?.responses['403']);
  });

  test("the statuses the contract names for a route are among the route's documented ones", () => {
    const byRoute = new Map(operations(document));
    const named: Record<string, string[]> = {
      // An Idempotency-Key still running (409) or reused with another body (422), on every API-key POST.
      'POST /api/checkout/create/': ['400', '401', '403', '409', '413', '422', '429'],
      'POST /api/transactions/{id}/refund/': ['400', '401', '403', '404', '409', '422', '429'],
      'POST /api/checkout/sync-status/': ['404', '409', '422'],
      'GET /api/transactions/{id}/': ['401', '404'],
      'GET /api/refunds/{id}/': ['401', '404'],
      // A page past the last is DRF's 404 "Invalid page.".
      'GET /api/refunds/': ['400', '401', '404'],
      'GET /api/payments/': ['404'],
      // POST /refunds/ is the dashboard's: an API key gets 405.
      'POST /api/refunds/': ['404', '405'],
      'GET /api/payment-links/public/{token}/': ['404', '410', '429'],
      'POST /api/payment-links/public/{token}/start/': ['400', '404', '410', '429'],
      'PATCH /api/payment-links/{id}/': ['404', '409'],
      'POST /api/checkout/{token}/pay/': ['400', '404', '409', '410', '429'],
      'POST /api/checkout/{token}/cancel/': ['404', '409', '410'],
      'GET /api/subscriptions/public/{plan}/': ['404', '410'],
      'POST /api/organization/webhook/deliveries/{id}/redeliver/': ['404', '409'],
      'POST /api/auth/login/': ['400', '401', '429'],
      'POST /api/v1/webhooks/{slug}/': ['404', '413'],
      // Over STRIPE_WEBHOOK_BODY_LIMIT (512 KiB), not the public 64 KiB: a 413 before the signature is read.
      'POST /api/provider/webhooks/stripe/': ['400', '404', '413'],
    };
    for (const [route, statuses] of Object.entries(named)) {
      const documented = Object.keys(byRoute.get(route)?.responses ?? {});
      for (const status of statuses)
        assert.ok(documented.includes(status), `${route} does not document ${status}`);
    }
  });

  test('the events feed declares its Kassa-Feed-Settle-Ms header, as an integer, on its 200', async () => {
    const feed = new Map(operations(document)).get('GET /api/organization/events/')?.responses['200'];
    const declared = feed?.headers?.['Kassa-Feed-Settle-Ms'] as
      | { schema: unknown; description: string }
      | undefined;
    assert.deepEqual(declared?.schema, { type: 'integer', minimum: 0 });
    assert.match(declared?.description ?? '', /0 on both databases/);
    // The keyword is the response's, not the body schema's.
    assert.equal(JSON.stringify(feed?.content).includes('Kassa-Feed-Settle-Ms'), false);
    // And every answer's Kassa-* header is checked against the document by call() (conformance.ts).
    const merchant = await createTestMerchant(server);
    const page = await call(server, 'GET', '/api/organization/events/', { token: merchant.token });
    assert.equal(page.status, 200, page.text);
    assert.equal(page.headers.get('kassa-feed-settle-ms'), '0');
  });

  test('the hosted step declares the Retry-After of a Stripe payment form not opened yet, on its 200', () => {
    const page = new Map(operations(document)).get('GET /api/checkout/{token}/')?.responses['200'];
    const declared = page?.headers?.['Retry-After'] as { schema: unknown; description: string } | undefined;
    assert.deepEqual(declared?.schema, { type: 'integer', minimum: 1 });
    assert.match(declared?.description ?? '', /client_secret is null because Stripe did not answer/);
    assert.equal(
      JSON.stringify(page?.content).includes('Retry-After'),
      false,
      "the response's, not the body's",
    );
  });

  test('request fields the handlers check by hand are documented with their precise types', () => {
    const byRoute = new Map(operations(document));
    const query = (route: string, name: string) =>
      byRoute.get(route)?.parameters?.find((parameter) => parameter.name === name)?.schema;
    assert.equal(query('GET /api/transactions/', 'page')?.type, 'integer');
    assert.equal(query('GET /api/transactions/', 'created_after')?.format, 'date-time');
    assert.deepEqual(query('GET /api/refunds/', 'status'), { $ref: '#/components/schemas/RefundStatus' });
    assert.ok(Array.isArray(query('GET /api/payments/', 'ordering')?.enum));
    const body = (route: string) =>
      byRoute.get(route)?.requestBody?.content['application/json'].schema.properties ?? {};
    const products = body('POST /api/checkout/create/').products.items as { oneOf?: unknown[] };
    assert.equal(products.oneOf?.length, 2);
    assert.ok(body('POST /api/checkout/create/').sandbox_simulate.anyOf);
    assert.ok(body('POST /api/transactions/{id}/refund/').amount.anyOf);
  });

  test('the checkout body and its items accept what the server accepts: other fields are ignored, not refused', async () => {
    // The items' schemas said additionalProperties: false while the server took such items (201).
    const validate = await requestBodyValidator(server.url, 'POST', '/api/checkout/create/');
    const merchant = await createTestMerchant(server, 'Schema Shop');
    const key = await createTestKey(server, merchant);
    const product = await call<{ id: string }>(server, 'POST', '/api/products/', {
      token: merchant.token,
      body: { name: 'Mug', unit_price: '12.00', currency: 'USD' },
    });
    assert.equal(product.status, 201, product.text);
    const base = {
      billing_country: 'FR',
      billing_first_name: 'Ada',
      billing_last_name: 'Lovelace',
      billing_email: 'ada@example.com',
    };
    const cases: [string, unknown[], Record<string, unknown>?][] = [
      ['an ad hoc item with an extra field', [{ name: 'Widget', unit_price: 25, sku: 'W-1' }]],
      ['a catalog item with an extra field', [{ id: product.body.id, quantity: 2, note: 'gift' }]],
      ['a catalog item with a name, which the catalog overrides', [{ id: product.body.id, name: 'Cup' }]],
      ['an extra top-level field', [{ name: 'Widget', unit_price: '25.00' }], { cart: 'c-1' }],
      ['a catalog id with a unit_price', [{ id: product.body.id, unit_price: 5 }]],
      ['a name without a unit_price', [{ name: 'Widget' }]],
      ['a unit_price without a name', [{ unit_price: 5 }]],
    ];
    for (const [what, products, extra] of cases) {
      const body = { ...base, products, ...extra };
      const response = await call(server, 'POST', '/api/checkout/create/', { apiKey: key, body });
      assert.ok([201, 400].includes(response.status), `${what}: ${response.status} ${response.text}`);
      assert.equal(validate(body), response.status === 201, `${what}: the document and the server disagree`);
    }
  });

  test('/docs answers with the interactive documentation as HTML', async () => {
    const response = await fetch(`${server.url}/docs`);
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(await response.text(), /<html/i);
  });
});
