import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { ForbiddenError, UnauthorizedError } from '../src/http/errors.ts';
import { authenticateApiKey } from '../src/modules/api-keys/service.ts';
import { addMember } from './helpers/accounts.ts';
import { KEY_ROUTE, KEY_ROUTE_SCOPE } from './helpers/api-key-route.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';

interface KeyRecord {
  id: number;
  name: string;
  prefix: string;
  scopes: string[];
  environment: 'production' | 'sandbox';
  status: 'active' | 'revoked';
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  raw_key?: string;
}

const RECORD_FIELDS = [
  'created_at',
  'environment',
  'id',
  'last_used_at',
  'name',
  'prefix',
  'revoked_at',
  'scopes',
  'status',
].sort();
const LIMIT_MESSAGE = 'An active API key already exists for this environment. Rotate it instead.';
const KEYS = '/api/organization/api-keys/';

function detail(body: unknown): string {
  return (body as { detail: string }).detail;
}

describe('API key management (dashboard session)', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  function createKey(merchant: Merchant, body: Record<string, unknown>) {
    return call<KeyRecord>(server, 'POST', KEYS, { token: merchant.token, body });
  }

  function revoke(merchant: Merchant, id: number) {
    return call<KeyRecord>(server, 'POST', `${KEYS}${id}/revoke/`, { token: merchant.token });
  }

  test('creating a production key returns 201 with the record and a kassa_live_ raw key shown once', async () => {
    const merchant = await createTestMerchant(server);
    const created = await createKey(merchant, { name: 'Backend', allowed_scopes: 'payments:read' });
    assert.equal(created.status, 201);
    const { raw_key: rawKey, ...record } = created.body;
    assert.match(rawKey ?? '', /^kassa_live_[0-9A-Za-z]{40}$/);
    assert.deepEqual(Object.keys(record).sort(), RECORD_FIELDS);
    assert.equal(record.prefix, rawKey?.slice(0, 16));
    assert.equal(record.name, 'Backend');
    assert.deepEqual(record.scopes, ['payments:read']);
    assert.equal(record.environment, 'production');
    assert.equal(record.status, 'active');
    assert.equal(typeof record.id, 'number');
    assert.ok(Date.parse(record.created_at) > 0);
    assert.equal(record.last_used_at, null);
    assert.equal(record.revoked_at, null);
  });

  test('creating a sandbox key returns a kassa_test_ raw key', async () => {
    const merchant = await createTestMerchant(server);
    const created = await createKey(merchant, { name: 'Tests', allowed_scopes: '', environment: 'sandbox' });
    assert.equal(created.status, 201);
    assert.match(created.body.raw_key ?? '', /^kassa_test_[0-9A-Za-z]{40}$/);
    assert.equal(created.body.prefix, created.body.raw_key?.slice(0, 16));
    assert.equal(created.body.environment, 'sandbox');
  });

  test('environment defaults to production and allowed_scopes to every scope', async () => {
    const merchant = await createTestMerchant(server);
    const created = await createKey(merchant, { name: 'Defaults' });
    assert.equal(created.status, 201);
    assert.equal(created.body.environment, 'production');
    assert.deepEqual(created.body.scopes, []);
  });

  test('the list shows every key of the organization and never a raw key or its hash', async () => {
    const merchant = await createTestMerchant(server);
    const live = await createKey(merchant, { name: 'Live', allowed_scopes: '' });
    const sandbox = await createKey(merchant, {
      name: 'Sandbox',
      allowed_scopes: '',
      environment: 'sandbox',
    });
    const list = await call<KeyRecord[]>(server, 'GET', KEYS, { token: merchant.token });
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.map((key) => key.id).sort(), [live.body.id, sandbox.body.id].sort());
    for (const key of list.body) assert.deepEqual(Object.keys(key).sort(), RECORD_FIELDS);
    for (const raw of [live.body.raw_key ?? '', sandbox.body.raw_key ?? '']) {
      assert.ok(raw.length > 0);
      assert.ok(!list.text.includes(raw), 'the list contains a raw key');
      assert.ok(
        !list.text.includes(createHash('sha256').update(raw).digest('hex')),
        'the list contains a hash',
      );
      assert.ok(!list.text.includes(raw.slice(16)), 'the list contains the secret part of a key');
    }
    assert.doesNotMatch(list.text, /raw_key|hash/);
  });

  test('allowed_scopes accepts commas and/or spaces in any order and returns the scopes in canonical order', async () => {
    const merchant = await createTestMerchant(server);
    const cases: [string, string[]][] = [
      ['payments:read,refunds:read', ['payments:read', 'refunds:read']],
      ['refunds:write  checkout:create', ['checkout:create', 'refunds:write']],
      [' refunds:read , payments:read,payments:read ', ['payments:read', 'refunds:read']],
      [
        'refunds:write\tpayments:write,\ncheckout:create payments:read refunds:read',
        ['checkout:create', 'payments:read', 'payments:write', 'refunds:read', 'refunds:write'],
      ],
      ['', []],
      [' , ', []],
    ];
    for (const [input, expected] of cases) {
      const created = await createKey(merchant, { name: 'Scoped', allowed_scopes: input });
      assert.equal(created.status, 201, `${JSON.stringify(input)}: ${created.text}`);
      assert.deepEqual(created.body.scopes, expected, JSON.stringify(input));
      assert.equal((await revoke(merchant, created.body.id)).status, 200);
    }
  });

  test('an unknown scope is a 400 naming the scope, and no key is created', async () => {
    const merchant = await createTestMerchant(server);
    const response = await createKey(merchant, {
      name: 'Bad',
      allowed_scopes: 'payments:read, payouts:write',
    });
    assert.equal(response.status, 400);
    assert.match(detail(response.body), /^allowed_scopes: /);
    assert.match(detail(response.body), /payouts:write/);
    const list = await call<KeyRecord[]>(server, 'GET', KEYS, { token: merchant.token });
    assert.deepEqual(list.body, []);
  });

  test('a missing or blank name is a 400 naming the field', async () => {
    const merchant = await createTestMerchant(server);
    for (const body of [{ allowed_scopes: '' }, { name: '', allowed_scopes: '' }, { name: '   ' }]) {
      const response = await createKey(merchant, body);
      assert.equal(response.status, 400, JSON.stringify(body));
      assert.match(detail(response.body), /^name: /);
    }
  });

  test('an unknown environment is a 400 naming the field', async () => {
    const merchant = await createTestMerchant(server);
    const response = await createKey(merchant, { name: 'Key', environment: 'staging' });
    assert.equal(response.status, 400);
    assert.match(detail(response.body), /^environment: /);
  });

  test('a second active key in one environment is refused with the exact message; the other environment is free', async () => {
    const merchant = await createTestMerchant(server);
    assert.equal((await createKey(merchant, { name: 'One' })).status, 201);
    const second = await createKey(merchant, { name: 'Two' });
    assert.equal(second.status, 400);
    assert.deepEqual(second.body, { detail: LIMIT_MESSAGE });
    const sandbox = await createKey(merchant, { name: 'Sandbox', environment: 'sandbox' });
    assert.equal(sandbox.status, 201);
    const secondSandbox = await createKey(merchant, { name: 'Sandbox 2', environment: 'sandbox' });
    assert.equal(secondSandbox.status, 400);
    assert.deepEqual(secondSandbox.body, { detail: LIMIT_MESSAGE });
  });

  test('after a revoke a new key may be created again', async () => {
    const merchant = await createTestMerchant(server);
    const first = await createKey(merchant, { name: 'One' });
    assert.equal((await revoke(merchant, first.body.id)).status, 200);
    assert.equal((await createKey(merchant, { name: 'Two' })).status, 201);
  });

  test('the limit follows the operator-set max_active_api_keys', async () => {
    const merchant = await createTestMerchant(server);
    await server.ctx.db
      .updateTable('organizations')
      .set({ max_active_api_keys: 2 })
      .where('id', '=', merchant.organizationId)
      .execute();
    assert.equal((await createKey(merchant, { name: 'One' })).status, 201);
    assert.equal((await createKey(merchant, { name: 'Two' })).status, 201);
    const third = await createKey(merchant, { name: 'Three' });
    assert.equal(third.status, 400);
    assert.deepEqual(third.body, { detail: LIMIT_MESSAGE });
  });

  test('concurrent creations leave exactly one active key', async () => {
    const merchant = await createTestMerchant(server);
    const responses = await Promise.all(
      Array.from({ length: 6 }, (_, i) => createKey(merchant, { name: `Racer ${i}` })),
    );
    assert.deepEqual(responses.map((r) => r.status).sort(), [201, 400, 400, 400, 400, 400]);
    const list = await call<KeyRecord[]>(server, 'GET', KEYS, { token: merchant.token });
    assert.equal(list.body.filter((key) => key.status === 'active').length, 1);
  });

  test('rotate revokes the active key and returns a new one with the same name and scopes, raw key once', async () => {
    const merchant = await createTestMerchant(server);
    const first = await createKey(merchant, {
      name: 'Backend',
      allowed_scopes: 'refunds:read payments:read',
    });
    const rotated = await call<KeyRecord>(server, 'POST', `${KEYS}rotate/`, { token: merchant.token });
    assert.equal(rotated.status, 200);
    assert.match(rotated.body.raw_key ?? '', /^kassa_live_[0-9A-Za-z]{40}$/);
    assert.notEqual(rotated.body.raw_key, first.body.raw_key);
    assert.notEqual(rotated.body.id, first.body.id);
    assert.equal(rotated.body.name, 'Backend');
    assert.deepEqual(rotated.body.scopes, ['payments:read', 'refunds:read']);
    assert.equal(rotated.body.status, 'active');
    const list = await call<KeyRecord[]>(server, 'GET', KEYS, { token: merchant.token });
    const old = list.body.find((key) => key.id === first.body.id);
    assert.equal(old?.status, 'revoked');
    assert.ok(old?.revoked_at);
    assert.equal(list.body.filter((key) => key.status === 'active').length, 1);
  });

  test('rotate with {environment: sandbox} replaces only the sandbox key', async () => {
    const merchant = await createTestMerchant(server);
    const live = await createKey(merchant, { name: 'Live' });
    const sandbox = await createKey(merchant, { name: 'Sandbox', environment: 'sandbox' });
    const rotated = await call<KeyRecord>(server, 'POST', `${KEYS}rotate/`, {
      token: merchant.token,
      body: { environment: 'sandbox' },
    });
    assert.equal(rotated.status, 200);
    assert.equal(rotated.body.environment, 'sandbox');
    assert.match(rotated.body.raw_key ?? '', /^kassa_test_/);
    const list = await call<KeyRecord[]>(server, 'GET', KEYS, { token: merchant.token });
    const status = new Map(list.body.map((key) => [key.id, key.status]));
    assert.equal(status.get(live.body.id), 'active');
    assert.equal(status.get(sandbox.body.id), 'revoked');
  });

  test('rotate with no active key is a 404 that says to create one', async () => {
    const merchant = await createTestMerchant(server);
    const response = await call(server, 'POST', `${KEYS}rotate/`, { token: merchant.token, body: {} });
    assert.equal(response.status, 404);
    assert.match(detail(response.body), /create one/);
  });

  test('revoke returns 200 with the record marked revoked, and revoking again changes nothing', async () => {
    const merchant = await createTestMerchant(server);
    const created = await createKey(merchant, { name: 'Doomed', allowed_scopes: 'checkout:create' });
    const revoked = await revoke(merchant, created.body.id);
    assert.equal(revoked.status, 200);
    assert.deepEqual(Object.keys(revoked.body).sort(), RECORD_FIELDS);
    assert.equal(revoked.body.id, created.body.id);
    assert.equal(revoked.body.status, 'revoked');
    assert.ok(Date.parse(revoked.body.revoked_at ?? '') > 0);
    assert.equal(revoked.body.raw_key, undefined);
    const again = await revoke(merchant, created.body.id);
    assert.equal(again.status, 200);
    assert.equal(again.body.revoked_at, revoked.body.revoked_at);
  });

  test('revoking an unknown or malformed key id is a 404', async () => {
    const merchant = await createTestMerchant(server);
    for (const id of ['999999', 'abc', '0', '-1', '1.5', '9'.repeat(40)]) {
      const response = await call(server, 'POST', `${KEYS}${id}/revoke/`, { token: merchant.token });
      assert.equal(response.status, 404, id);
      assert.equal(typeof detail(response.body), 'string');
    }
  });

  test('the key endpoints need a session: 401 without one', async () => {
    assert.equal((await call(server, 'GET', KEYS)).status, 401);
    assert.equal((await call(server, 'POST', KEYS, { body: { name: 'x' } })).status, 401);
    assert.equal((await call(server, 'POST', `${KEYS}rotate/`)).status, 401);
    assert.equal((await call(server, 'POST', `${KEYS}1/revoke/`)).status, 401);
  });

  // decisions: a developer has "API keys, webhooks, read payments and refunds", not refunding; a key
  // carries no scope its maker's role could not use (src/modules/api-keys/scopes.ts, SCOPE_PERMISSION).
  const DEVELOPER_REFUSAL = 'Your role (developer) does not allow refunding payments.';

  async function activeKeys(merchant: Merchant) {
    const list = await call<KeyRecord[]>(server, 'GET', KEYS, { token: merchant.token });
    return list.body.filter((key) => key.status === 'active');
  }

  async function auditActions(merchant: Merchant, action: string) {
    const log = await call<{ results: { action: string }[] }>(
      server,
      'GET',
      `/api/organization/audit-log/?page_size=100&action=${action}`,
      { token: merchant.token },
    );
    assert.equal(log.status, 200, log.text);
    return log.body.results.length;
  }

  test("a developer cannot create a key that could refund (all scopes, refunds:write, payments:write): 403 with the role's refusal, nothing issued", async () => {
    const owner = await createTestMerchant(server);
    const developer = await addMember(server, owner, 'developer');
    for (const allowedScopes of [
      '',
      ' , ',
      'refunds:write',
      'payments:write',
      'checkout:create payments:write',
    ]) {
      const refused = await call(server, 'POST', KEYS, {
        token: developer.token,
        body: { name: 'Refunder', allowed_scopes: allowedScopes },
      });
      assert.equal(refused.status, 403, `"${allowedScopes}": ${refused.text}`);
      assert.equal(detail(refused.body), DEVELOPER_REFUSAL);
    }
    // Omitting allowed_scopes is the empty string: every scope.
    const omitted = await call(server, 'POST', KEYS, { token: developer.token, body: { name: 'Default' } });
    assert.equal(omitted.status, 403);
    assert.equal(detail(omitted.body), DEVELOPER_REFUSAL);
    assert.deepEqual(await activeKeys(owner), []);
    assert.equal(await auditActions(owner, 'api_key.created'), 0);

    const integration = await call<KeyRecord>(server, 'POST', KEYS, {
      token: developer.token,
      body: { name: 'Integration', allowed_scopes: 'checkout:create payments:read refunds:read' },
    });
    assert.equal(integration.status, 201, integration.text);
    assert.deepEqual(integration.body.scopes, ['checkout:create', 'payments:read', 'refunds:read']);
  });

  test('a developer cannot rotate a key that could refund (the old key stays active); a narrower key they may revoke, create and rotate', async () => {
    const owner = await createTestMerchant(server);
    const developer = await addMember(server, owner, 'developer');
    const everything = await createKey(owner, { name: 'Everything', allowed_scopes: '' });
    const refunder = await createKey(owner, {
      name: 'Refunder',
      allowed_scopes: 'payments:write',
      environment: 'sandbox',
    });
    for (const environment of ['production', 'sandbox']) {
      const refused = await call(server, 'POST', `${KEYS}rotate/`, {
        token: developer.token,
        body: { environment },
      });
      assert.equal(refused.status, 403, `${environment}: ${refused.text}`);
      assert.equal(detail(refused.body), DEVELOPER_REFUSAL);
    }
    assert.deepEqual(
      (await activeKeys(owner)).map((key) => key.id).sort(),
      [everything.body.id, refunder.body.id].sort(),
    );
    assert.equal(await auditActions(owner, 'api_key.rotated'), 0);

    // Revoking only takes power away; then a key within the developer's role is theirs to rotate.
    assert.equal(
      (await call(server, 'POST', `${KEYS}${refunder.body.id}/revoke/`, { token: developer.token })).status,
      200,
    );
    const reader = await call<KeyRecord>(server, 'POST', KEYS, {
      token: developer.token,
      body: { name: 'Reader', allowed_scopes: 'refunds:read', environment: 'sandbox' },
    });
    assert.equal(reader.status, 201, reader.text);
    const rotated = await call<KeyRecord>(server, 'POST', `${KEYS}rotate/`, {
      token: developer.token,
      body: { environment: 'sandbox' },
    });
    assert.equal(rotated.status, 200, rotated.text);
    assert.deepEqual(rotated.body.scopes, ['refunds:read']);
  });

  test('owners and admins still create and rotate all-scope keys', async () => {
    const owner = await createTestMerchant(server);
    const admin = await addMember(server, owner, 'admin');
    const created = await call<KeyRecord>(server, 'POST', KEYS, {
      token: admin.token,
      body: { name: 'All', allowed_scopes: '' },
    });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(created.body.scopes, []);
    for (const member of [admin, owner]) {
      const rotated = await call<KeyRecord>(server, 'POST', `${KEYS}rotate/`, { token: member.token });
      assert.equal(rotated.status, 200, rotated.text);
      assert.deepEqual(rotated.body.scopes, []);
    }
    const refunds = await call<KeyRecord>(server, 'POST', KEYS, {
      token: admin.token,
      body: { name: 'Refunds', allowed_scopes: 'refunds:write payments:write', environment: 'sandbox' },
    });
    assert.equal(refunds.status, 201, refunds.text);
  });
});

describe('API key authentication on API-key endpoints', () => {
  let server: TestServer;
  let merchant: Merchant;
  before(async () => {
    server = await startTestServer();
    merchant = await createTestMerchant(server, 'Key Shop');
  });
  after(() => server.close());

  async function rotate(environment: 'production' | 'sandbox') {
    const response = await call<KeyRecord>(server, 'POST', `${KEYS}rotate/`, {
      token: merchant.token,
      body: { environment },
    });
    if (response.status === 404) return createTestKey(server, merchant, { environment });
    return response.body.raw_key ?? '';
  }

  test('a valid key works with Authorization: Api-Key and with the Api-Key header', async () => {
    const key = await rotate('production');
    const viaAuthorization = await call(server, 'GET', `/api${KEY_ROUTE}`, {
      headers: { authorization: `Api-Key ${key}` },
    });
    assert.equal(viaAuthorization.status, 404, viaAuthorization.text);
    const viaHeader = await call(server, 'GET', `/api${KEY_ROUTE}`, { headers: { 'api-key': key } });
    assert.equal(viaHeader.status, 404, viaHeader.text);
  });

  test('a missing, malformed or unknown key is a 401 with a detail, in both header styles', async () => {
    const unknown = `kassa_live_${'A'.repeat(40)}`;
    const cases: Record<string, string>[] = [
      {},
      { authorization: 'Api-Key' },
      { authorization: `Api-Key ${unknown}` },
      { 'api-key': unknown },
      { 'api-key': 'not-a-key' },
      { authorization: 'Bearer something' },
    ];
    for (const headers of cases) {
      const response = await call(server, 'GET', `/api${KEY_ROUTE}`, { headers });
      assert.equal(response.status, 401, JSON.stringify(headers));
      assert.equal(typeof detail(response.body), 'string');
    }
  });

  test('a sandbox key on /api/ is a 401 naming the sandbox base path', async () => {
    const key = await rotate('sandbox');
    const response = await call(server, 'GET', `/api${KEY_ROUTE}`, { apiKey: key });
    assert.equal(response.status, 401);
    assert.match(detail(response.body), /\/sandbox\/api\//);
    assert.equal((await call(server, 'GET', `/sandbox/api${KEY_ROUTE}`, { apiKey: key })).status, 404);
  });

  test('a production key on /sandbox/api/ is a 401 naming the production base path', async () => {
    const key = await rotate('production');
    const response = await call(server, 'GET', `/sandbox/api${KEY_ROUTE}`, { apiKey: key });
    assert.equal(response.status, 401);
    assert.match(detail(response.body), /(?<!sandbox)\/api\//);
  });

  test('a rotated-away key is refused at once and its replacement works', async () => {
    const old = await rotate('production');
    assert.equal((await call(server, 'GET', `/api${KEY_ROUTE}`, { apiKey: old })).status, 404);
    const replacement = await rotate('production');
    assert.equal((await call(server, 'GET', `/api${KEY_ROUTE}`, { apiKey: old })).status, 401);
    assert.equal((await call(server, 'GET', `/api${KEY_ROUTE}`, { apiKey: replacement })).status, 404);
  });

  test('a revoked key is refused at once', async () => {
    const key = await rotate('production');
    assert.equal((await call(server, 'GET', `/api${KEY_ROUTE}`, { apiKey: key })).status, 404);
    const list = await call<KeyRecord[]>(server, 'GET', KEYS, { token: merchant.token });
    const active = list.body.find(
      (record) => record.status === 'active' && record.environment === 'production',
    );
    assert.ok(active);
    await call(server, 'POST', `${KEYS}${active.id}/revoke/`, { token: merchant.token });
    assert.equal((await call(server, 'GET', `/api${KEY_ROUTE}`, { apiKey: key })).status, 401);
  });

  test('last_used_at is set once the key has been used', async () => {
    const key = await rotate('production');
    const before = await call<KeyRecord[]>(server, 'GET', KEYS, { token: merchant.token });
    const record = before.body.find((k) => k.prefix === key.slice(0, 16));
    assert.equal(record?.last_used_at, null);
    await call(server, 'GET', `/api${KEY_ROUTE}`, { apiKey: key });
    const afterUse = await call<KeyRecord[]>(server, 'GET', KEYS, { token: merchant.token });
    const used = afterUse.body.find((k) => k.prefix === key.slice(0, 16));
    assert.ok(Date.parse(used?.last_used_at ?? '') > 0);
  });

  test('a key without the required scope is a 403 naming the scope; an empty scope list allows everything', async () => {
    const other = await createTestMerchant(server, 'Scoped Shop');
    const narrow = await createTestKey(server, other, { scopes: 'checkout:create' });
    const response = await call(server, 'GET', `/api${KEY_ROUTE}`, { apiKey: narrow });
    assert.equal(response.status, 403);
    assert.match(detail(response.body), new RegExp(KEY_ROUTE_SCOPE));
    const third = await createTestMerchant(server, 'Open Shop');
    const open = await createTestKey(server, third, { scopes: '' });
    assert.equal((await call(server, 'GET', `/api${KEY_ROUTE}`, { apiKey: open })).status, 404);
    const fourth = await createTestMerchant(server, 'Read Shop');
    const read = await createTestKey(server, fourth, { scopes: KEY_ROUTE_SCOPE });
    assert.equal((await call(server, 'GET', `/api${KEY_ROUTE}`, { apiKey: read })).status, 404);
  });

  test('a dashboard session token on an API-key endpoint is a 401', async () => {
    const response = await call(server, 'GET', `/api${KEY_ROUTE}`, { token: merchant.token });
    assert.equal(response.status, 401);
    assert.match(detail(response.body), /API key/);
    const cookie = await call(server, 'GET', `/api${KEY_ROUTE}`, {
      headers: { cookie: `kassa_session=${merchant.token}` },
    });
    assert.equal(cookie.status, 401);
  });

  test('an API key on dashboard session endpoints is a 401, in both header styles', async () => {
    const key = await rotate('production');
    for (const [method, path] of [
      ['GET', '/api/organization/'],
      ['GET', '/api/organization/dashboard/'],
      ['GET', KEYS],
      ['POST', `${KEYS}rotate/`],
      ['GET', '/api/products/'],
      ['GET', '/api/auth/me/'],
    ]) {
      const styles: Record<string, string>[] = [{ authorization: `Api-Key ${key}` }, { 'api-key': key }];
      for (const headers of styles) {
        const response = await call(server, method, path, { headers });
        assert.equal(response.status, 401, `${method} ${path} ${Object.keys(headers)[0]}`);
        assert.match(detail(response.body), /session/);
      }
    }
    // The key was not rotated by the refused call above.
    const list = await call<KeyRecord[]>(server, 'GET', KEYS, { token: merchant.token });
    assert.ok(list.body.some((record) => record.prefix === key.slice(0, 16) && record.status === 'active'));
  });
});

// The same rules checked where they live, so they are covered before any API-key route exists.
describe('key authentication rules (service level, on the real database)', () => {
  let server: TestServer;
  let merchant: Merchant;
  before(async () => {
    server = await startTestServer();
    merchant = await createTestMerchant(server, 'Rules Shop');
  });
  after(() => server.close());

  test('a valid key authenticates to its organization, environment and scopes, and records last use', async () => {
    const key = await createTestKey(server, merchant, { scopes: 'payments:read refunds:read' });
    const principal = await authenticateApiKey(server.ctx, key, 'production', ['payments:read']);
    assert.equal(principal.kind, 'api_key');
    assert.equal(principal.organizationId, merchant.organizationId);
    assert.equal(principal.environment, 'production');
    assert.deepEqual(principal.scopes, ['payments:read', 'refunds:read']);
    const list = await call<KeyRecord[]>(server, 'GET', KEYS, { token: merchant.token });
    assert.ok(list.body.every((record) => Date.parse(record.last_used_at ?? '') > 0));
  });

  test('a key is refused on the other environment base path, with a detail naming its own', async () => {
    const other = await createTestMerchant(server);
    const sandbox = await createTestKey(server, other, { environment: 'sandbox' });
    await assert.rejects(
      authenticateApiKey(server.ctx, sandbox, 'production', []),
      (error: unknown) => error instanceof UnauthorizedError && error.message.includes('/sandbox/api/'),
    );
    const live = await createTestKey(server, other, { environment: 'production' });
    await assert.rejects(
      authenticateApiKey(server.ctx, live, 'sandbox', []),
      (error: unknown) => error instanceof UnauthorizedError && /(?<!sandbox)\/api\//.test(error.message),
    );
  });

  test('a revoked, unknown or malformed key is unauthorized', async () => {
    const other = await createTestMerchant(server);
    const key = await createTestKey(server, other);
    const list = await call<KeyRecord[]>(server, 'GET', KEYS, { token: other.token });
    await call(server, 'POST', `${KEYS}${list.body[0].id}/revoke/`, { token: other.token });
    for (const raw of [key, `kassa_live_${'b'.repeat(40)}`, 'kassa_live_short', '']) {
      await assert.rejects(authenticateApiKey(server.ctx, raw, 'production', []), UnauthorizedError);
    }
  });

  test('a key lacking the scope is forbidden with a detail naming it; an empty scope list passes', async () => {
    const narrow = await createTestMerchant(server);
    const key = await createTestKey(server, narrow, { scopes: 'checkout:create' });
    await assert.rejects(
      authenticateApiKey(server.ctx, key, 'production', ['refunds:write', 'payments:write']),
      (error: unknown) =>
        error instanceof ForbiddenError && error.message.includes('refunds:write') && error.status === 403,
    );
    const open = await createTestMerchant(server);
    const all = await createTestKey(server, open, { scopes: '' });
    const principal = await authenticateApiKey(server.ctx, all, 'production', ['refunds:write']);
    assert.deepEqual(principal.scopes, []);
  });
});
