// #14 finding 11, the smaller items: long-polls on the events feed are capped per session; `merchant
// create` reads the password from stdin (not argv, which `ps` shows); a finished checkout's JSON no longer
// shows the customer; HSTS when the public URL is https; CSP and frame headers on /docs.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { createCheckout, type Json, pay } from '../helpers/checkout.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  startTestServer,
  type TestServer,
} from '../helpers/server.ts';

describe('security #11: smaller items', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ worker: false });
  });
  after(() => server.close());

  test('a session may hold at most 3 long-polls of the events feed; a 4th is a 429 at once', async () => {
    const merchant = await createTestMerchant(server);
    const poll = () =>
      call(server, 'GET', '/api/organization/events/?wait=3&after=999999999', { token: merchant.token });
    const waiting = [poll(), poll(), poll()];
    await new Promise((resolve) => setTimeout(resolve, 300));
    const started = Date.now();
    const fourth = await poll();
    assert.equal(fourth.status, 429, fourth.text);
    assert.ok(Date.now() - started < 1000, 'the refused poll answered at once');
    assert.ok(Number(fourth.headers.get('retry-after')) >= 1);
    assert.deepEqual(
      (await Promise.all(waiting)).map((response) => response.status),
      [200, 200, 200],
    );
    // A poll without `wait` is not a long-poll and is never refused.
    assert.equal(
      (await call(server, 'GET', '/api/organization/events/', { token: merchant.token })).status,
      200,
    );
  });

  test('merchant create --password - reads the password from stdin', async () => {
    const password = 'from stdin, not argv 42';
    const cli = spawnSync(
      process.execPath,
      [
        '--disable-warning=ExperimentalWarning',
        'src/cli/main.ts',
        'merchant',
        'create',
        '--org',
        'Stdin Shop',
        '--email',
        'stdin@shop.test',
        '--password',
        '-',
      ],
      { env: { ...process.env, ...server.env }, input: `${password}\n`, encoding: 'utf8', timeout: 90_000 },
    );
    assert.equal(cli.status, 0, cli.stderr);
    assert.ok(!cli.stdout.includes(password), 'the password is not printed back');
    const login = await call(server, 'POST', '/api/auth/login/', {
      body: { email: 'stdin@shop.test', password },
    });
    assert.equal(login.status, 200, login.text);
  });

  test("a finished checkout's hosted JSON no longer shows the customer's name and email", async () => {
    const apiKey = await createTestKey(server, await createTestMerchant(server));
    const checkout = await createCheckout(server, apiKey);
    const open = await call<Json>(server, 'GET', `/api/checkout/${checkout.token}/`);
    assert.equal((open.body.customer as Json).email, 'ada@example.com');
    assert.equal((await pay(server, checkout.token)).body.payment_status, 'paid');
    const finished = await call<Json>(server, 'GET', `/api/checkout/${checkout.token}/`);
    assert.equal(finished.status, 200);
    assert.equal(finished.body.customer, null);
    assert.ok(!finished.text.includes('ada@example.com'));
    assert.ok(!finished.text.includes('Lovelace'));
  });

  test('HSTS is sent when the public URL is https, and only then', async () => {
    const plain = await fetch(`${server.url}/healthz`);
    assert.equal(plain.headers.get('strict-transport-security'), null);
    const original = server.ctx.config.publicUrl;
    server.ctx.config.publicUrl = 'https://pay.example.com';
    try {
      for (const path of ['/healthz', '/api/openapi.json', '/docs']) {
        const response = await fetch(`${server.url}${path}`);
        assert.match(response.headers.get('strict-transport-security') ?? '', /max-age=\d{7,}/, path);
      }
    } finally {
      server.ctx.config.publicUrl = original;
    }
  });

  test('/docs is served with a content security policy and may not be framed', async () => {
    for (const path of ['/docs', '/docs/security', '/docs/api']) {
      const response = await fetch(`${server.url}${path}`);
      assert.equal(response.status, 200, path);
      const csp = response.headers.get('content-security-policy') ?? '';
      // The docs site (src/modules/docs-site) allows nothing by default and names each source it uses.
      assert.match(csp, /(^|; )default-src '(none|self)'(;|$)/, path);
      assert.doesNotMatch(csp, /unsafe-eval|script-src[^;]*unsafe-inline/, path);
      assert.match(csp, /frame-ancestors 'none'/, path);
      assert.equal(response.headers.get('x-frame-options'), 'DENY', path);
    }
  });
});
