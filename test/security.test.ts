// Security checks over every endpoint: the wrong kind of caller, another organization's ids, the other
// environment's ids, revoked and rotated keys, expired sessions, oversized bodies, the SSRF guard at
// configuration, the CSRF rule for cookie sessions, and what reaches logs and list responses.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../src/config.ts';
import { createContext } from '../src/context.ts';
import { openAndMigrate } from '../src/db/connection.ts';
import { createMerchant } from '../src/modules/organizations/service.ts';
import {
  closeRawAgent,
  differences,
  type JsonAnswer,
  jsonCall,
  loadOperations,
  type Operation,
  operationName,
  rawRequest,
  responseViolation,
  rowChecksums,
} from './helpers/fuzz.ts';
import { paramKind } from './helpers/fuzz-arbitraries.ts';
import {
  createFixtureMerchant,
  createOrgFixture,
  type OrgFixture,
  type RefKind,
  restoreCredentials,
} from './helpers/fuzz-fixture.ts';
import { startTestServer, type TestServer, testEnv } from './helpers/server.ts';

type Json = Record<string, unknown>;

const BILLING = {
  billing_country: 'FR',
  billing_first_name: 'Ada',
  billing_last_name: 'Lovelace',
  billing_email: 'ada@example.test',
};
const CARD = {
  card_number: '4242 4242 4242 4242',
  exp_month: 12,
  exp_year: 2099,
  cvc: '123',
  cardholder_name: 'Ada Lovelace',
};

/** A well-formed body for each operation (by path without the /sandbox prefix), for the given organization. */
function sampleBody(operation: Operation, org: OrgFixture): Json | undefined {
  const path = operation.path.replace(/^\/sandbox/, '');
  const key = `${operation.method} ${path}`;
  const bodies: Record<string, Json> = {
    'POST /api/auth/login/': { email: org.email, password: org.password },
    'PATCH /api/organization/': { telegram: '@shop' },
    'POST /api/organization/api-keys/': { name: 'second', allowed_scopes: '' },
    'POST /api/organization/api-keys/rotate/': {},
    'POST /api/products/': { name: 'Probe', unit_price: '1.00' },
    'PATCH /api/products/{id}/': { name: 'Renamed' },
    'PATCH /api/organization/members/{id}/': { role: 'viewer' },
    'POST /api/refunds/': {
      transaction_id: org.refs.payment[0],
      reason: 'probe',
      verification_code: '000000',
    },
    'POST /api/payouts/': { amount: '1.00' },
    'POST /api/payment-links/': { name: 'Probe', products: [{ product_id: org.refs.product[0] }] },
    'PATCH /api/payment-links/{id}/': { name: 'Renamed' },
    'POST /api/payment-links/public/{token}/start/': BILLING,
    'POST /api/subscriptions/public/{plan}/start/': BILLING,
    'POST /api/subscriptions/{id}/advance-clock/': { days: 1 },
    'PUT /api/organization/webhook/': { endpoint_url: 'http://127.0.0.1:9/hooks' },
    'POST /api/organization/webhook/test-transaction/': {},
    'POST /api/v1/webhooks/{slug}/': { hello: 'world' },
    'POST /api/checkout/{token}/pay/': CARD,
    'POST /api/provider/webhooks/{provider}/': {},
    'POST /api/transactions/{id}/refund/': { reason: 'probe', amount: '1.00' },
    'POST /api/checkout/create/': { ...BILLING, products: [{ name: 'Widget', unit_price: '5.00' }] },
    'POST /api/checkout/sync-status/': {
      checkout_id: operation.environment === 'sandbox' ? org.refs.sandboxCheckout[0] : org.refs.checkout[0],
    },
  };
  return bodies[key] ?? (operation.method === 'GET' || operation.method === 'DELETE' ? undefined : {});
}

/** The path with each parameter replaced by the organization's own id of the right kind. */
function samplePath(
  operation: Operation,
  org: OrgFixture,
  kinds: Partial<Record<string, RefKind>> = {},
): string {
  return operation.path.replace(/\{(\w+)\}/g, (_match, param: string) => {
    const kind = kinds[param] ?? paramKind(operation, param);
    if (param === 'provider') return 'simulator';
    if (param === 'rest') return 'index.html';
    return encodeURIComponent(kind ? org.refs[kind][0] : 'x');
  });
}

function isApiKeyOperation(operation: Operation): boolean {
  return operation.audience === 'apiKey' || operation.path.endsWith('/checkout/sync-status/');
}

async function send(
  server: TestServer,
  operation: Operation,
  path: string,
  headers: Record<string, string>,
  body: Json | undefined,
): Promise<JsonAnswer<{ detail?: string }>> {
  const answer = await jsonCall<{ detail?: string }>(server.url, operation.method, path, { headers, body });
  const violation = responseViolation(operation.method, path, {
    status: answer.status,
    headers: answer.headers,
    text: answer.text,
    ms: 0,
  });
  assert.equal(
    violation,
    null,
    `${operation.method} ${path}: ${violation} (${answer.status} ${answer.text})`,
  );
  return answer;
}

describe('security: callers, tenants and environments', () => {
  let server: TestServer;
  let operations: Operation[];
  let shopA: OrgFixture;
  let shopB: OrgFixture;

  before(async () => {
    server = await startTestServer({ worker: false });
    operations = await loadOperations(server.url);
    shopA = await createOrgFixture(server, 'Shop A');
    shopB = await createOrgFixture(server, 'Shop B');
  });
  after(async () => {
    closeRawAgent();
    await server?.close();
  });

  test('an API key on any dashboard-session endpoint is a 401 (POST /refunds/ answers 405), and writes nothing', async () => {
    const before = await rowChecksums(server.ctx.db, shopA.organizationId);
    let checked = 0;
    for (const operation of operations.filter((o) => o.audience === 'session')) {
      const path = samplePath(operation, shopA);
      const body = sampleBody(operation, shopA);
      const callers: Record<string, string>[] = [
        { authorization: `Api-Key ${shopA.prodKey}` },
        { 'api-key': shopA.prodKey },
        { authorization: `Api-Key ${shopA.sandboxKey}` },
      ];
      for (const headers of callers) {
        const answer = await send(server, operation, path, headers, body);
        const expected = operationName(operation) === 'POST /api/refunds/' ? 405 : 401;
        assert.equal(
          answer.status,
          expected,
          `${operationName(operation)} with ${Object.keys(headers)[0]}: ${answer.text}`,
        );
        checked += 1;
      }
    }
    assert.ok(checked > 80, `${checked} requests`);
    assert.deepEqual(differences(before, await rowChecksums(server.ctx.db, shopA.organizationId)), []);
  });

  test('a dashboard session on any API-key endpoint is a 401, by header or cookie, and writes nothing', async () => {
    const before = await rowChecksums(server.ctx.db, shopA.organizationId);
    for (const operation of operations.filter(isApiKeyOperation)) {
      if (operation.path === '/sandbox/api/refunds/') continue; // 405 to everyone
      const path = samplePath(operation, shopA);
      const body = sampleBody(operation, shopA);
      const callers: Record<string, string>[] = [
        { authorization: `Token ${shopA.session}` },
        { cookie: `kassa_session=${shopA.session}`, 'x-requested-with': 'XMLHttpRequest' },
      ];
      for (const headers of callers) {
        const answer = await send(server, operation, path, headers, body);
        assert.equal(answer.status, 401, `${operationName(operation)}: ${answer.text}`);
      }
    }
    assert.deepEqual(differences(before, await rowChecksums(server.ctx.db, shopA.organizationId)), []);
  });

  test('a key of the other environment is a 401 that names the right base path', async () => {
    for (const operation of operations.filter(
      (o) => o.audience === 'apiKey' && o.path !== '/sandbox/api/refunds/',
    )) {
      const wrongKey = operation.environment === 'sandbox' ? shopA.prodKey : shopA.sandboxKey;
      const answer = await send(
        server,
        operation,
        samplePath(operation, shopA),
        { authorization: `Api-Key ${wrongKey}` },
        sampleBody(operation, shopA),
      );
      assert.equal(answer.status, 401, operationName(operation));
      assert.match(
        answer.body.detail ?? '',
        operation.environment === 'sandbox' ? /\/api\// : /\/sandbox\/api\//,
      );
    }
  });

  /** Sends each endpoint no credentials with a good body, no body and a wrong body: a 401 every time. */
  async function refusedWithoutCredentials(selected: Operation[]) {
    const wrong: string[] = [];
    for (const operation of selected) {
      const path = samplePath(operation, shopA);
      // sync-status is public by token; only {checkout_id} makes it an API-key request.
      const bodies = operation.path.endsWith('/sync-status/')
        ? [sampleBody(operation, shopA)]
        : [sampleBody(operation, shopA), undefined, { unexpected: ['field'] }];
      for (const body of bodies) {
        const answer = await send(server, operation, path, {}, body);
        if (answer.status !== 401)
          wrong.push(
            `${operationName(operation)} with body ${JSON.stringify(body)}: ${answer.status} ${answer.text}`,
          );
      }
    }
    assert.deepEqual(wrong, []);
  }

  test('without credentials every session and API-key endpoint is a 401, whatever the body', async () => {
    await refusedWithoutCredentials(
      operations.filter(
        (o) => (o.audience === 'session' || isApiKeyOperation(o)) && o.path !== '/sandbox/api/refunds/', // 405 to everyone: the sandbox has no dashboard
      ),
    );
  });

  test('public endpoints and pages answer without any credentials', async () => {
    for (const operation of operations.filter((o) => o.audience === 'public' || o.audience === 'page')) {
      if (operation.path.includes('{rest}') && operation.audience === 'public') continue;
      const answer = await send(
        server,
        operation,
        samplePath(operation, shopA),
        {},
        sampleBody(operation, shopA),
      );
      assert.ok(
        ![401, 403].includes(answer.status),
        `${operationName(operation)}: ${answer.status} ${answer.text}`,
      );
    }
  });

  test("another organization's ids are a 404 on every endpoint that names one, and its rows do not change", async () => {
    const otherBefore = await rowChecksums(server.ctx.db, shopB.organizationId);
    let checked = 0;
    for (const operation of operations.filter((o) => o.audience === 'session' || o.audience === 'apiKey')) {
      if (operation.pathParams.length === 0 || operation.path === '/sandbox/api/refunds/') continue;
      const param = operation.pathParams[0];
      const kind = paramKind(operation, param);
      assert.ok(kind, operationName(operation));
      const headers =
        operation.audience === 'session'
          ? { authorization: `Token ${shopA.session}` }
          : {
              authorization: `Api-Key ${operation.environment === 'sandbox' ? shopA.sandboxKey : shopA.prodKey}`,
            };
      for (const id of shopB.refs[kind]) {
        const path = operation.path.replace(`{${param}}`, encodeURIComponent(id));
        const answer = await send(server, operation, path, headers, sampleBody(operation, shopA));
        assert.equal(answer.status, 404, `${operation.method} ${path}: ${answer.text}`);
        checked += 1;
      }
    }
    assert.ok(checked > 40, `${checked} requests`);

    // Ids named in bodies.
    const session = { authorization: `Token ${shopA.session}` };
    for (const transaction of shopB.refs.payment) {
      const resend = await jsonCall(server.url, 'POST', '/api/organization/webhook/test-transaction/', {
        headers: session,
        body: { transaction_id: transaction },
      });
      assert.equal(resend.status, 404, resend.text);
      const code = await verificationCode(server, shopA);
      const refund = await jsonCall(server.url, 'POST', '/api/refunds/', {
        headers: session,
        body: { transaction_id: transaction, reason: 'not mine', verification_code: code },
      });
      assert.equal(refund.status, 404, refund.text);
    }
    for (const [base, key, checkouts] of [
      ['/api', shopA.prodKey, shopB.refs.checkout],
      ['/sandbox/api', shopA.sandboxKey, shopB.refs.sandboxCheckout],
    ] as const) {
      for (const checkoutId of checkouts) {
        const sync = await jsonCall(server.url, 'POST', `${base}/checkout/sync-status/`, {
          apiKey: key,
          body: { checkout_id: checkoutId },
        });
        assert.equal(sync.status, 404, sync.text);
      }
    }
    const product = shopB.refs.product[0];
    const checkout = await jsonCall<{ detail: string }>(server.url, 'POST', '/api/checkout/create/', {
      apiKey: shopA.prodKey,
      body: { ...BILLING, products: [{ id: product }] },
    });
    assert.equal(checkout.status, 400);
    assert.ok(checkout.body.detail.includes(product), checkout.body.detail);
    const link = await jsonCall<{ detail: string }>(server.url, 'POST', '/api/payment-links/', {
      token: shopA.session,
      body: { name: 'Theirs', products: [{ product_id: product }] },
    });
    assert.equal(link.status, 400);
    assert.ok(link.body.detail.includes(product), link.body.detail);
    assert.deepEqual(differences(otherBefore, await rowChecksums(server.ctx.db, shopB.organizationId)), []);
  });

  test('sandbox ids are a 404 on production and production ids a 404 on the sandbox', async () => {
    const cases: [string, string, string, Json | undefined][] = [];
    for (const id of shopA.refs.sandboxPayment) {
      cases.push(['GET', `/api/transactions/${id}/`, shopA.prodKey, undefined]);
      cases.push([
        'POST',
        `/api/transactions/${id}/refund/`,
        shopA.prodKey,
        { reason: 'cross', amount: '1.00' },
      ]);
    }
    for (const id of shopA.refs.payment) {
      cases.push(['GET', `/sandbox/api/transactions/${id}/`, shopA.sandboxKey, undefined]);
      cases.push(['POST', `/sandbox/api/transactions/${id}/refund/`, shopA.sandboxKey, { reason: 'cross' }]);
    }
    for (const id of shopA.refs.sandboxRefund)
      cases.push(['GET', `/api/refunds/${id}/`, shopA.prodKey, undefined]);
    for (const id of shopA.refs.refund)
      cases.push(['GET', `/sandbox/api/refunds/${id}/`, shopA.sandboxKey, undefined]);
    for (const id of shopA.refs.sandboxCheckout)
      cases.push(['POST', '/api/checkout/sync-status/', shopA.prodKey, { checkout_id: id }]);
    for (const id of shopA.refs.checkout)
      cases.push(['POST', '/sandbox/api/checkout/sync-status/', shopA.sandboxKey, { checkout_id: id }]);
    const before = await rowChecksums(server.ctx.db, shopA.organizationId);
    for (const [method, path, apiKey, body] of cases) {
      const answer = await jsonCall(server.url, method, path, { apiKey, body });
      assert.equal(answer.status, 404, `${method} ${path}: ${answer.text}`);
    }
    assert.deepEqual(differences(before, await rowChecksums(server.ctx.db, shopA.organizationId)), []);
    for (const [base, apiKey, own, foreign] of [
      ['/api', shopA.prodKey, shopA.refs.refund[0], shopA.refs.sandboxRefund[0]],
      ['/sandbox/api', shopA.sandboxKey, shopA.refs.sandboxRefund[0], shopA.refs.refund[0]],
    ] as const) {
      const list = await jsonCall<{ results: { id: string }[] }>(server.url, 'GET', `${base}/refunds/`, {
        apiKey,
      });
      assert.equal(list.status, 200);
      const ids = list.body.results.map((refund) => refund.id);
      assert.ok(ids.includes(own) && !ids.includes(foreign), `${base}: ${ids.join(', ')}`);
    }
  });

  test('bodies over the limit are a 413 {detail} on every endpoint that takes one', async () => {
    const oversized = JSON.stringify({ name: 'x'.repeat(1024 * 1024 + 1024) });
    const writes = operations.filter(
      (o) => ['POST', 'PUT', 'PATCH'].includes(o.method) && !o.path.includes('{rest}'),
    );
    for (const operation of writes) {
      const path = samplePath(operation, shopA);
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (operation.audience === 'session') headers.authorization = `Token ${shopA.session}`;
      if (operation.audience === 'apiKey')
        headers.authorization = `Api-Key ${operation.environment === 'sandbox' ? shopA.sandboxKey : shopA.prodKey}`;
      // The public test receiver keeps requests of up to 256 KiB.
      const body = operation.path.includes('/v1/webhooks/') ? 'x'.repeat(300 * 1024) : oversized;
      const answer = await rawRequest(server.url, { method: operation.method, path, headers, body });
      assert.equal(answer.status, 413, `${operationName(operation)}: ${answer.text}`);
      assert.deepEqual(JSON.parse(answer.text), { detail: 'Request body is too large.' });
      assert.ok(answer.headers['x-request-id']);
    }
  });

  test('a cookie session without X-Requested-With is refused (403) on every unsafe endpoint and writes nothing', async () => {
    const unsafe = operations.filter((o) => o.audience === 'session' && o.method !== 'GET');
    assert.ok(unsafe.length > 15);
    const before = await rowChecksums(server.ctx.db, shopA.organizationId);
    for (const operation of unsafe) {
      const answer = await send(
        server,
        operation,
        samplePath(operation, shopA),
        { cookie: `kassa_session=${shopA.session}` },
        sampleBody(operation, shopA),
      );
      assert.equal(answer.status, 403, `${operationName(operation)}: ${answer.text}`);
      assert.match(answer.body.detail ?? '', /X-Requested-With/);
    }
    assert.deepEqual(differences(before, await rowChecksums(server.ctx.db, shopA.organizationId)), []);
    // Reads need no header; with the header, every unsafe endpoint gets past authentication.
    for (const operation of operations.filter((o) => o.audience === 'session' && o.method === 'GET')) {
      const answer = await send(
        server,
        operation,
        samplePath(operation, shopA),
        { cookie: `kassa_session=${shopA.session}` },
        undefined,
      );
      assert.ok(![401, 403].includes(answer.status), `${operationName(operation)}: ${answer.text}`);
    }
    for (const operation of unsafe) {
      const answer = await send(
        server,
        operation,
        samplePath(operation, shopA),
        { cookie: `kassa_session=${shopA.session}`, 'x-requested-with': 'XMLHttpRequest' },
        sampleBody(operation, shopA),
      );
      assert.ok(![401, 403].includes(answer.status), `${operationName(operation)}: ${answer.text}`);
      await restoreCredentials(server, shopA);
    }
  });

  test('a malformed or foreign Host header never breaks an answer, and page links keep their path', async () => {
    const reads = operations.filter(
      (o) => o.method === 'GET' && (o.audience === 'session' || o.audience === 'apiKey'),
    );
    for (const operation of reads) {
      const auth =
        operation.audience === 'session'
          ? { authorization: `Token ${shopA.session}` }
          : {
              authorization: `Api-Key ${operation.environment === 'sandbox' ? shopA.sandboxKey : shopA.prodKey}`,
            };
      for (const host of ['a b', '[', '', '%00', 'x:99999', '[::1', 'evil.example']) {
        for (const query of ['', '?page_size=1', '?page_size=1&page=2']) {
          const path = `${samplePath(operation, shopA)}${query}`;
          const answer = await send(server, operation, path, { ...auth, host }, undefined);
          assert.ok(answer.status < 500, `${path} with Host ${JSON.stringify(host)}`);
        }
      }
    }
    const page = await jsonCall<{ next: string }>(server.url, 'GET', '//api/refunds/?page_size=1', {
      apiKey: shopA.prodKey,
    });
    assert.equal(page.status, 200, page.text);
    assert.match(page.body.next, /^http:\/\/[^/]+\/api\/refunds\/\?page_size=1&page=2$/);
  });

  test('traversal paths on the static and page routes never serve a file from outside their folder', async () => {
    const targets = [
      '../../package.json',
      '..%2f..%2fpackage.json',
      '%2e%2e/%2e%2e/package.json',
      '..%5c..%5cpackage.json',
      '....//....//package.json',
      '%252e%252e%252fpackage.json',
      'assets/../../../package.json',
      '%c0%ae%c0%ae/%c0%ae%c0%ae/package.json',
      '.%2e/.%2e/.%2e/etc/passwd',
      '..%2F..%2F..%2F..%2F..%2Fetc%2Fpasswd',
    ];
    for (const base of [
      '/dashboard/',
      '/dashboard/assets/',
      '/docs/',
      '/docs/assets/',
      '/checkout/',
      '/pay/',
      '/',
    ]) {
      for (const target of targets) {
        const path = base + target;
        const answer = await rawRequest(server.url, { method: 'GET', path, headers: {} });
        assert.equal(responseViolation('GET', path, answer), null, path);
        assert.doesNotMatch(answer.text, /"name": "kassa"|root:x:0:0|devDependencies/, path);
      }
    }
  });

  test('list and detail responses never carry key hashes, password hashes or raw secrets', async () => {
    const { db } = server.ctx;
    const hashes = [
      ...(await db.selectFrom('api_keys').select('key_hash').execute()).map((r) => r.key_hash),
      ...(await db.selectFrom('users').select('password_hash').execute()).map((r) => r.password_hash),
      ...(await db.selectFrom('sessions').select('token_hash').execute()).map((r) => r.token_hash),
      ...(await db.selectFrom('checkout_sessions').select('token_hash').execute()).map((r) => r.token_hash),
      ...(await db.selectFrom('webhook_endpoints').select('secret_encrypted').execute()).map(
        (r) => r.secret_encrypted,
      ),
    ];
    const secrets = [...shopA.secrets, ...shopA.revokedKeys, ...shopA.refs.checkoutToken, shopA.session];
    const reads = operations.filter(
      (o) => o.method === 'GET' && (o.audience === 'session' || o.audience === 'apiKey'),
    );
    assert.ok(reads.length > 15);
    for (const operation of reads) {
      const headers =
        operation.audience === 'session'
          ? { authorization: `Token ${shopA.session}` }
          : {
              authorization: `Api-Key ${operation.environment === 'sandbox' ? shopA.sandboxKey : shopA.prodKey}`,
            };
      const answer = await send(server, operation, samplePath(operation, shopA), headers, undefined);
      for (const value of [...hashes, ...secrets]) {
        assert.ok(!answer.text.includes(value), `${operationName(operation)} shows ${value.slice(0, 12)}…`);
      }
      assert.doesNotMatch(
        answer.text,
        /key_hash|password_hash|token_hash|secret_encrypted|raw_key|raw_secret/,
      );
    }
  });
});

/** Asks for a dashboard refund code and reads it from the mail the service wrote to its data dir. */
async function verificationCode(server: TestServer, org: OrgFixture): Promise<string> {
  const issued = await jsonCall(server.url, 'POST', '/api/refunds/verification-code/', {
    token: org.session,
  });
  assert.equal(issued.status, 202, issued.text);
  const directory = join(server.ctx.config.dataDir, 'mail');
  const newest = readdirSync(directory).sort().at(-1);
  assert.ok(newest);
  const match = /verification code for .* is (\d{6})/.exec(readFileSync(join(directory, newest), 'utf8'));
  assert.ok(match, 'the mail carries a code');
  return match[1];
}

describe('security: revoked and rotated keys', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ worker: false });
  });
  after(() => server.close());

  test('a revoked key and a rotated-out key get 401 at once; the new key works', async () => {
    const merchant = await createFixtureMerchant(server, 'Keys');
    for (const [environment, base] of [
      ['production', '/api'],
      ['sandbox', '/sandbox/api'],
    ] as const) {
      const created = await jsonCall<{ id: number; raw_key: string }>(
        server.url,
        'POST',
        '/api/organization/api-keys/',
        {
          token: merchant.token,
          body: { name: 'k', allowed_scopes: '', environment },
        },
      );
      assert.equal(created.status, 201, created.text);
      const listWith = (key: string) => jsonCall(server.url, 'GET', `${base}/refunds/`, { apiKey: key });
      const listWithHeader = (key: string) =>
        jsonCall(server.url, 'GET', `${base}/refunds/`, { headers: { 'api-key': key } });
      assert.equal((await listWith(created.body.raw_key)).status, 200);
      const revoked = await jsonCall(
        server.url,
        'POST',
        `/api/organization/api-keys/${created.body.id}/revoke/`,
        {
          token: merchant.token,
        },
      );
      assert.equal(revoked.status, 200, revoked.text);
      assert.equal((await listWith(created.body.raw_key)).status, 401);
      assert.equal((await listWithHeader(created.body.raw_key)).status, 401);

      const second = await jsonCall<{ raw_key: string }>(server.url, 'POST', '/api/organization/api-keys/', {
        token: merchant.token,
        body: { name: 'k2', allowed_scopes: '', environment },
      });
      assert.equal(second.status, 201, second.text);
      assert.equal((await listWith(second.body.raw_key)).status, 200);
      const rotated = await jsonCall<{ raw_key: string }>(
        server.url,
        'POST',
        '/api/organization/api-keys/rotate/',
        {
          token: merchant.token,
          body: { environment },
        },
      );
      assert.equal(rotated.status, 200, rotated.text);
      const old = await listWith(second.body.raw_key);
      assert.equal(old.status, 401);
      assert.deepEqual(old.body, { detail: 'Invalid API key.' });
      assert.equal((await listWithHeader(second.body.raw_key)).status, 401);
      assert.equal((await listWith(rotated.body.raw_key)).status, 200);
    }
  });
});

describe('security: session expiry', () => {
  let server: TestServer;
  let now = Date.parse('2026-03-01T09:00:00Z');
  const HOUR = 3600 * 1000;
  before(async () => {
    server = await startTestServer({ worker: false, clock: () => new Date(now) });
  });
  after(() => server.close());

  const me = (token: string) => jsonCall(server.url, 'GET', '/api/auth/me/', { token });

  test('a session idle for 12 hours is refused; one in use keeps working until 7 days after login', async () => {
    const idle = await createFixtureMerchant(server, 'Idle');
    const busy = await createFixtureMerchant(server, 'Busy');
    const loggedIn = now;
    now += 12 * HOUR - 60_000;
    assert.equal((await me(idle.token)).status, 200, 'just inside the idle window');
    now += 12 * HOUR + 1000;
    const expired = await me(idle.token);
    assert.equal(expired.status, 401);
    assert.deepEqual(expired.body, { detail: 'Invalid or expired session token.' });
    const cookie = await jsonCall(server.url, 'GET', '/api/organization/', {
      headers: { cookie: `kassa_session=${idle.token}` },
    });
    assert.equal(cookie.status, 401);

    // The busy session is used every 11 hours: idle expiry never hits, the absolute one does.
    now = loggedIn;
    while (now + 11 * HOUR < loggedIn + 7 * 24 * HOUR) {
      now += 11 * HOUR;
      assert.equal((await me(busy.token)).status, 200, `at ${new Date(now).toISOString()}`);
    }
    now = loggedIn + 7 * 24 * HOUR + 1000;
    assert.equal((await me(busy.token)).status, 401, 'after 7 days, however recently used');
    const fresh = await jsonCall<{ token: string }>(server.url, 'POST', '/api/auth/login/', {
      body: { email: busy.email, password: busy.password },
    });
    assert.equal(fresh.status, 200);
    assert.equal((await me(fresh.body.token)).status, 200);
  });

  test('a logged-out session is refused at once', async () => {
    const merchant = await createFixtureMerchant(server, 'Logout');
    assert.equal(
      (await jsonCall(server.url, 'POST', '/api/auth/logout/', { token: merchant.token })).status,
      204,
    );
    assert.equal((await me(merchant.token)).status, 401);
  });
});

describe('security: webhook SSRF guard in production', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({
      worker: false,
      env: { KASSA_ENV: 'production', KASSA_WEBHOOK_ALLOW_PRIVATE: 'false', KASSA_ALLOW_SIMULATOR: 'true' },
    });
  });
  after(() => server.close());

  test('loopback, private, link-local and unspecified endpoint URLs are refused at configuration', async () => {
    const merchant = await createFixtureMerchant(server, 'Prod');
    for (const url of [
      'http://127.0.0.1',
      'http://127.0.0.1:8080/hooks',
      'http://localhost',
      'http://localhost./hooks',
      'http://10.0.0.1',
      'http://169.254.169.254',
      'http://169.254.169.254/latest/meta-data/',
      'http://[::1]',
      'http://[fd00::1]',
      'http://0.0.0.0',
      'http://2130706433/',
      'http://0x7f.1/',
      'https://[::ffff:10.0.0.1]/',
    ]) {
      const answer = await jsonCall<{ detail: string }>(server.url, 'PUT', '/api/organization/webhook/', {
        token: merchant.token,
        body: { endpoint_url: url },
      });
      assert.equal(answer.status, 400, `${url}: ${answer.text}`);
      assert.deepEqual(Object.keys(answer.body), ['detail']);
      assert.match(answer.body.detail, /^endpoint_url: /, url);
    }
    const stored = await jsonCall<{ endpoint_url: string | null }>(
      server.url,
      'GET',
      '/api/organization/webhook/',
      {
        token: merchant.token,
      },
    );
    assert.equal(stored.body.endpoint_url, null);
    const rows = await server.ctx.db
      .selectFrom('webhook_endpoints')
      .select('id')
      .where('organization_id', '=', merchant.organizationId)
      .execute();
    assert.deepEqual(rows, []);
  });
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

describe('security: logs', () => {
  let child: ChildProcess | null = null;
  let output = '';
  let cleanup: () => Promise<void> = async () => {};
  let baseUrl = '';
  let env: Record<string, string> = {};

  before(async () => {
    const prepared = await testEnv({ KASSA_LOG_LEVEL: 'info', KASSA_SIM_REFUND_DELAY_MS: '200' });
    cleanup = prepared.cleanup;
    env = { ...prepared.env, KASSA_PORT: String(await freePort()) };
    baseUrl = `http://127.0.0.1:${env.KASSA_PORT}`;
    env.KASSA_PUBLIC_URL = baseUrl;
    // Migrate (so the schema exists) before the service starts on the same database.
    const handle = await openAndMigrate(loadConfig(env).database);
    await handle.close();
    const root = fileURLToPath(new URL('..', import.meta.url));
    child = spawn(
      join(root, 'node_modules', '.bin', 'node'),
      ['--disable-warning=ExperimentalWarning', join(root, 'src', 'cli', 'main.ts'), 'serve'],
      { cwd: root, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    // Generous: on a loaded CI machine a cold start of the service has taken over 15 s.
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        if ((await rawRequest(baseUrl, { method: 'GET', path: '/healthz', headers: {} })).status === 200)
          break;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`the service did not start:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });
  after(async () => {
    closeRawAgent();
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child?.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    await cleanup();
  });

  test('passwords, tokens, keys, webhook secrets, card numbers and verification codes never reach the log', async () => {
    const config = loadConfig(env);
    const handle = await openAndMigrate(config.database);
    const email = 'owner@logs.test';
    const password = 'log-scan-password-Q7w9';
    try {
      await createMerchant(createContext(config, handle), { organization: 'Logs', email, password });
    } finally {
      await handle.close();
    }
    const secrets: string[] = [password];
    const login = await jsonCall<{ token: string }>(baseUrl, 'POST', '/api/auth/login/', {
      body: { email, password },
    });
    assert.equal(login.status, 200, login.text);
    const token = login.body.token;
    secrets.push(token);
    const failed = await jsonCall(baseUrl, 'POST', '/api/auth/login/', {
      body: { email, password: 'wrong-password-Zx81' },
    });
    assert.equal(failed.status, 401);
    secrets.push('wrong-password-Zx81');
    const key = await jsonCall<{ raw_key: string; id: number }>(
      baseUrl,
      'POST',
      '/api/organization/api-keys/',
      {
        token,
        body: { name: 'logs', allowed_scopes: '' },
      },
    );
    assert.equal(key.status, 201, key.text);
    secrets.push(key.body.raw_key);
    const rotated = await jsonCall<{ raw_key: string }>(
      baseUrl,
      'POST',
      '/api/organization/api-keys/rotate/',
      {
        headers: { cookie: `kassa_session=${token}`, 'x-requested-with': 'XMLHttpRequest' },
      },
    );
    assert.equal(rotated.status, 200, rotated.text);
    const apiKey = rotated.body.raw_key;
    secrets.push(apiKey);
    const endpoint = await jsonCall<{ raw_secret: string }>(baseUrl, 'PUT', '/api/organization/webhook/', {
      token,
      body: { endpoint_url: 'http://127.0.0.1:9/hooks' },
    });
    assert.equal(endpoint.status, 200, endpoint.text);
    secrets.push(endpoint.body.raw_secret);
    const rotatedSecret = await jsonCall<{ raw_secret: string }>(
      baseUrl,
      'POST',
      '/api/organization/webhook/rotate/',
      {
        token,
      },
    );
    assert.equal(rotatedSecret.status, 200, rotatedSecret.text);
    secrets.push(rotatedSecret.body.raw_secret);

    const checkout = await jsonCall<{ token: string; checkout_id: string }>(
      baseUrl,
      'POST',
      '/api/checkout/create/',
      {
        headers: { 'api-key': apiKey },
        body: { ...BILLING, products: [{ name: 'Widget', unit_price: '40.00' }] },
      },
    );
    assert.equal(checkout.status, 201, checkout.text);
    secrets.push(checkout.body.token);
    assert.equal((await jsonCall(baseUrl, 'GET', `/checkout/${checkout.body.token}`)).status, 200);
    assert.equal((await jsonCall(baseUrl, 'GET', `/api/checkout/${checkout.body.token}/`)).status, 200);
    const declined = await jsonCall(baseUrl, 'POST', `/api/checkout/${checkout.body.token}/pay/`, {
      body: { ...CARD, card_number: '4000 0000 0000 0002' },
    });
    assert.equal(declined.status, 200, declined.text);
    const paid = await jsonCall<{ transaction_id: string }>(
      baseUrl,
      'POST',
      `/api/checkout/${checkout.body.token}/pay/`,
      {
        body: CARD,
      },
    );
    assert.equal(paid.status, 200, paid.text);
    const sync = await jsonCall(baseUrl, 'POST', '/api/checkout/sync-status/', {
      body: { token: checkout.body.token },
    });
    assert.equal(sync.status, 200, sync.text);
    // The payment settles in the background; then it can be refunded, by key and from the dashboard.
    const deadline = Date.now() + 15_000;
    let refund: JsonAnswer<Json> | null = null;
    while (Date.now() < deadline) {
      refund = await jsonCall(baseUrl, 'POST', `/api/transactions/${paid.body.transaction_id}/refund/`, {
        apiKey,
        body: { reason: 'log scan', amount: '5.00' },
      });
      if (refund.status === 200) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    assert.equal(refund?.status, 200, refund?.text);
    const issued = await jsonCall(baseUrl, 'POST', '/api/refunds/verification-code/', { token });
    assert.equal(issued.status, 202, issued.text);
    const mail = readdirSync(join(env.KASSA_DATA_DIR, 'mail')).sort().at(-1) ?? '';
    const code = /is (\d{6})\./.exec(readFileSync(join(env.KASSA_DATA_DIR, 'mail', mail), 'utf8'))?.[1];
    assert.ok(code);
    secrets.push(code);
    const dashboardRefund = await jsonCall(baseUrl, 'POST', '/api/refunds/', {
      token,
      body: {
        transaction_id: paid.body.transaction_id,
        reason: 'dashboard',
        amount: '1.00',
        verification_code: code,
      },
    });
    assert.ok([200, 400].includes(dashboardRefund.status), dashboardRefund.text);
    await jsonCall(baseUrl, 'POST', '/api/organization/webhook/test/', { token });
    const logout = await jsonCall(baseUrl, 'POST', '/api/auth/logout/', { token });
    // The scan below proves an absence, so it waits until the log has everything: the last request's
    // completion line, by its request id (not a fixed sleep).
    const lastRequestId = String(logout.headers['x-request-id']);
    const logDeadline = Date.now() + 20_000;
    while (
      !output.split('\n').some((line) => line.includes(lastRequestId) && line.includes('request completed'))
    ) {
      if (Date.now() > logDeadline) assert.fail(`the log never showed request ${lastRequestId} completing`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }

    assert.match(output, /"msg":"request completed"|incoming request/, 'the log was captured');
    const cards = ['4242424242424242', '4242 4242 4242 4242', '4000000000000002', '4000 0000 0000 0002'];
    for (const secret of [...secrets, ...cards]) {
      assert.ok(!output.includes(secret), `the log contains ${secret.slice(0, 10)}…`);
    }
    assert.doesNotMatch(output, /4242[\s-]?4242[\s-]?4242[\s-]?4242/);
    assert.doesNotMatch(output, /kassa_(live|test)_[0-9A-Za-z]{40}/);
    assert.doesNotMatch(output, /whsec_[A-Za-z0-9+/_-]{20,}/);
  });
});
