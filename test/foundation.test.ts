import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  call,
  createTestMerchant,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';

describe('the HTTP shell', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  test('health, readiness and metrics answer', async () => {
    assert.deepEqual((await call(server, 'GET', '/healthz')).body, { status: 'ok' });
    assert.deepEqual((await call(server, 'GET', '/readyz')).body, { status: 'ready' });
    const metrics = await call(server, 'GET', '/metrics');
    assert.equal(metrics.status, 200);
    assert.match(metrics.text, /kassa_http_request_duration_seconds/);
  });

  test('an unknown route is a 404 with a detail body and a request id', async () => {
    const response = await call(server, 'GET', '/api/nothing-here/');
    assert.equal(response.status, 404);
    assert.deepEqual(response.body, { detail: 'Not found.' });
    assert.ok(response.headers.get('x-request-id'));
  });

  test('a wrong method on a known path is a 405 with Allow', async () => {
    const response = await call(server, 'DELETE', '/api/auth/login/');
    assert.equal(response.status, 405);
    assert.equal(typeof (response.body as { detail: string }).detail, 'string');
    assert.match(response.headers.get('allow') ?? '', /POST/);
  });

  test('an incoming X-Request-Id is echoed back', async () => {
    const response = await call(server, 'GET', '/healthz', { headers: { 'x-request-id': 'req-123' } });
    assert.equal(response.headers.get('x-request-id'), 'req-123');
  });

  test('malformed JSON is a 400 naming the body', async () => {
    const response = await call(server, 'POST', '/api/auth/login/', { body: '{"email":' });
    assert.equal(response.status, 400);
    assert.deepEqual(response.body, { detail: 'body: malformed JSON.' });
  });

  test('a body that is not JSON is a 400 naming Content-Type, whatever the type (or none)', async () => {
    // text/plain is what fetch sends for a string body when the header is forgotten: it used to be
    // parsed as a string and answered "body: must be of type object.", while a form got a 415.
    const json = JSON.stringify({ email: 'a@b.test', password: 'x' });
    for (const [type, body] of [
      ['text/plain;charset=UTF-8', json],
      ['text/plain', json],
      ['application/x-www-form-urlencoded', 'email=a'],
      ['multipart/form-data; boundary=x', '--x--'],
      ['application/xml', '<a/>'],
    ]) {
      const response = await call(server, 'POST', '/api/auth/login/', {
        body,
        headers: { 'content-type': type },
      });
      assert.equal(response.status, 400, type);
      assert.deepEqual(response.body, { detail: `Content-Type: must be application/json, got "${type}".` });
    }
    const untyped = await fetch(`${server.url}/api/auth/login/`, { method: 'POST', body: Buffer.from(json) });
    assert.equal(untyped.status, 400);
    assert.deepEqual(await untyped.json(), { detail: 'Content-Type: must be application/json, got none.' });
    // The same from a fetch that forgets the header, and on an API-key route (before the key is checked).
    const forgotten = await fetch(`${server.url}/api/checkout/create/`, { method: 'POST', body: json });
    assert.equal(forgotten.status, 400);
    assert.deepEqual(await forgotten.json(), {
      detail: 'Content-Type: must be application/json, got "text/plain;charset=UTF-8".',
    });
  });

  test('an empty body of any content type is no body', async () => {
    for (const type of ['text/plain;charset=UTF-8', 'application/x-www-form-urlencoded']) {
      const merchant = await createTestMerchant(server);
      const response = await call(server, 'POST', '/api/auth/logout/', {
        token: merchant.token,
        body: '',
        headers: { 'content-type': type },
      });
      assert.ok(response.status < 300, `${type}: ${response.status} ${response.text}`);
    }
  });

  test('a body over the limit is a 413 with a detail', async () => {
    const response = await call(server, 'POST', '/api/auth/login/', {
      body: { email: 'x'.repeat(2 * 1024 * 1024) },
    });
    assert.equal(response.status, 413);
    assert.deepEqual(response.body, { detail: 'Request body is too large.' });
  });

  test('a field of the wrong type is a 400 naming the field', async () => {
    const response = await call(server, 'POST', '/api/auth/login/', {
      body: { email: 'a@b.test', password: 5 },
    });
    assert.equal(response.status, 400);
    assert.match((response.body as { detail: string }).detail, /^password: /);
  });

  test('paths work with and without the trailing slash', async () => {
    const merchant = await createTestMerchant(server);
    const withSlash = await call(server, 'GET', '/api/organization/', { token: merchant.token });
    const without = await call(server, 'GET', '/api/organization', { token: merchant.token });
    assert.equal(withSlash.status, 200);
    assert.deepEqual(without.body, withSlash.body);
  });
});

describe('dashboard sessions', () => {
  let server: TestServer;
  let merchant: Merchant;
  before(async () => {
    server = await startTestServer({ env: { KASSA_RATE_LIMIT_LOGIN_FAILURES: '3' } });
    merchant = await createTestMerchant(server, 'Session Shop');
  });
  after(() => server.close());

  test('login returns the token, its expiry, the user and organization, and sets the session cookie', async () => {
    const response = await call<Record<string, unknown>>(server, 'POST', '/api/auth/login/', {
      body: { email: merchant.email, password: merchant.password },
    });
    assert.equal(response.status, 200);
    assert.equal(typeof response.body.token, 'string');
    assert.ok((response.body.token as string).length >= 43);
    assert.ok(Date.parse(response.body.expires_at as string) > Date.now());
    assert.deepEqual(response.body.user, {
      id: (response.body.user as { id: number }).id,
      email: merchant.email,
      name: '',
    });
    assert.deepEqual(response.body.organization, {
      id: merchant.organizationId,
      slug: merchant.slug,
      name: 'Session Shop',
    });
    const cookie = response.headers.get('set-cookie') ?? '';
    assert.match(cookie, new RegExp(`^kassa_session=${response.body.token};`));
    assert.match(cookie, /HttpOnly/);
    assert.match(cookie, /SameSite=Lax/);
  });

  test('wrong credentials are a 401 with the exact message, for a wrong password and an unknown email', async () => {
    for (const body of [
      { email: merchant.email, password: 'wrong password!' },
      { email: 'nobody@nowhere.test', password: 'whatever12345' },
    ]) {
      const response = await call(server, 'POST', '/api/auth/login/', { body });
      assert.equal(response.status, 401);
      assert.deepEqual(response.body, { detail: 'Invalid email or password.' });
    }
  });

  test('repeated failures for one account are rate limited with 429 and Retry-After', async () => {
    const other = await createTestMerchant(server, 'Limited');
    for (let i = 0; i < 3; i += 1) {
      const response = await call(server, 'POST', '/api/auth/login/', {
        body: { email: other.email, password: 'bad password' },
      });
      assert.equal(response.status, 401);
    }
    const blocked = await call(server, 'POST', '/api/auth/login/', {
      body: { email: other.email, password: other.password },
    });
    assert.equal(blocked.status, 429);
    assert.ok(Number(blocked.headers.get('retry-after')) > 0);
    assert.equal(blocked.headers.get('ratelimit-limit'), '3');
    assert.equal(typeof (blocked.body as { detail: string }).detail, 'string');
  });

  test('me returns the login body without the token', async () => {
    const response = await call<Record<string, unknown>>(server, 'GET', '/api/auth/me/', {
      token: merchant.token,
    });
    assert.equal(response.status, 200);
    assert.equal(response.body.token, undefined);
    assert.equal((response.body.user as { email: string }).email, merchant.email);
  });

  test('the cookie authenticates reads, and writes only with X-Requested-With', async () => {
    const cookie = `kassa_session=${merchant.token}`;
    const read = await call(server, 'GET', '/api/organization/', { headers: { cookie } });
    assert.equal(read.status, 200);
    const write = await call(server, 'PATCH', '/api/organization/', {
      headers: { cookie },
      body: { telegram: '@acme' },
    });
    assert.equal(write.status, 403);
    const allowed = await call(server, 'PATCH', '/api/organization/', {
      headers: { cookie, 'x-requested-with': 'XMLHttpRequest' },
      body: { telegram: '@acme' },
    });
    assert.equal(allowed.status, 200);
  });

  test('logout ends the session at once', async () => {
    const login = await call<{ token: string }>(server, 'POST', '/api/auth/login/', {
      body: { email: merchant.email, password: merchant.password },
    });
    const token = login.body.token;
    assert.equal((await call(server, 'GET', '/api/auth/me/', { token })).status, 200);
    const logout = await call(server, 'POST', '/api/auth/logout/', { token });
    assert.equal(logout.status, 204);
    const after = await call(server, 'GET', '/api/auth/me/', { token });
    assert.equal(after.status, 401);
    assert.equal(typeof (after.body as { detail: string }).detail, 'string');
  });

  test('a missing or invalid token is a 401', async () => {
    assert.equal((await call(server, 'GET', '/api/organization/')).status, 401);
    assert.equal((await call(server, 'GET', '/api/organization/', { token: 'x'.repeat(43) })).status, 401);
  });
});
