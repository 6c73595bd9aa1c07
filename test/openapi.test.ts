// The OpenAPI document at /api/openapi.json: valid OpenAPI 3.1, one operation for every /api route the
// app registers (and none it does not), security and scopes on every API-key operation, the {detail}
// error body everywhere, a documented success response everywhere, and readable docs at /docs.
// (That every response matches its schema is checked by call() in every e2e test.)
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { DB_KIND, startTestServer, type TestServer } from './helpers/server.ts';

interface Operation {
  description?: string;
  security?: Record<string, string[]>[];
  responses: Record<string, { content?: Record<string, { schema?: Record<string, unknown> }> }>;
}
interface Document {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
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

  test('every operation documents the {detail} error body and a success response', () => {
    for (const [route, operation] of operations(document)) {
      const schema = operation.responses['4XX']?.content?.['application/json']?.schema;
      assert.ok(schema, `${route} has no 4XX response`);
      assert.deepEqual(schema.required, ['detail'], route);
      assert.deepEqual(schema.properties, { detail: { type: 'string' } }, route);
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

  test('/docs answers with the interactive documentation as HTML', async () => {
    const response = await fetch(`${server.url}/docs`);
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(await response.text(), /<html/i);
  });
});
