import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import Fastify from 'fastify';
import type { AppContext } from '../../context.ts';
import { registerErrorHandling } from '../../http/errors.ts';
import type { App } from '../../http/types.ts';
import { createDashboardWebRoutes } from './routes.ts';
import { negotiateEncoding, resolveInside } from './static-files.ts';

const INDEX =
  '<!doctype html><html><body><div id="root"></div><script src="/dashboard/assets/app-abc123.js"></script></body></html>';
const SCRIPT = `console.log(${JSON.stringify('x'.repeat(4000))});`;

let root: string;
let app: App;

async function build(dir: string): Promise<App> {
  const instance = Fastify({
    routerOptions: { ignoreTrailingSlash: true, ignoreDuplicateSlashes: true },
  }) as unknown as App;
  registerErrorHandling(instance);
  await instance.register(createDashboardWebRoutes(dir), { ctx: {} as AppContext });
  return instance;
}

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'kassa-dashboard-'));
  mkdirSync(join(root, 'assets'));
  writeFileSync(join(root, 'index.html'), INDEX);
  writeFileSync(join(root, 'assets', 'app-abc123.js'), SCRIPT);
  writeFileSync(join(root, '.build-stamp'), 'secret-ish');
  app = await build(root);
});

after(async () => {
  await app.close();
  rmSync(root, { recursive: true, force: true });
});

test('the dashboard root serves index.html, revalidated on every load, with a content security policy', async () => {
  const response = await app.inject({ url: '/dashboard/' });
  assert.equal(response.statusCode, 200);
  assert.match(String(response.headers['content-type']), /^text\/html/);
  assert.equal(response.headers['cache-control'], 'no-cache');
  assert.match(String(response.headers['content-security-policy']), /script-src 'self'/);
  assert.equal(response.body, INDEX);
});

test('/dashboard without the slash redirects to /dashboard/', async () => {
  const response = await app.inject({ url: '/dashboard?x=1' });
  assert.equal(response.statusCode, 301);
  assert.equal(response.headers.location, '/dashboard/?x=1');
});

test('client routes fall back to index.html', async () => {
  for (const url of [
    '/dashboard/payments',
    '/dashboard/payments/TX123',
    '/dashboard/developers/webhook?x=1',
  ]) {
    const response = await app.inject({ url });
    assert.equal(response.statusCode, 200, url);
    assert.equal(response.body, INDEX, url);
  }
});

test('hashed assets are cached immutably and compressed as the client accepts', async () => {
  const plain = await app.inject({ url: '/dashboard/assets/app-abc123.js' });
  assert.equal(plain.statusCode, 200);
  assert.equal(plain.headers['cache-control'], 'public, max-age=31536000, immutable');
  assert.match(String(plain.headers['content-type']), /^text\/javascript/);
  assert.equal(plain.headers['content-encoding'], undefined);
  assert.equal(plain.body, SCRIPT);

  const br = await app.inject({
    url: '/dashboard/assets/app-abc123.js',
    headers: { 'accept-encoding': 'gzip, br' },
  });
  assert.equal(br.headers['content-encoding'], 'br');
  assert.equal(br.headers.vary, 'Accept-Encoding');
  assert.equal(brotliDecompressSync(br.rawPayload).toString(), SCRIPT);
  assert.ok(br.rawPayload.length < SCRIPT.length / 10);

  const gzip = await app.inject({
    url: '/dashboard/assets/app-abc123.js',
    headers: { 'accept-encoding': 'gzip;q=1, br;q=0' },
  });
  assert.equal(gzip.headers['content-encoding'], 'gzip');
  assert.equal(gunzipSync(gzip.rawPayload).toString(), SCRIPT);
});

test('a matching ETag answers 304', async () => {
  const first = await app.inject({ url: '/dashboard/assets/app-abc123.js' });
  const etag = String(first.headers.etag);
  const second = await app.inject({
    url: '/dashboard/assets/app-abc123.js',
    headers: { 'if-none-match': etag },
  });
  assert.equal(second.statusCode, 304);
  assert.equal(second.body, '');
});

test('missing assets, hidden files, compressed siblings and traversal are 404s', async () => {
  for (const url of [
    '/dashboard/assets/missing-123.js',
    '/dashboard/.build-stamp',
    '/dashboard/assets/app-abc123.js.br',
    '/dashboard/..%2f..%2fetc%2fpasswd',
    '/dashboard/%2e%2e/%2e%2e/etc/passwd.txt',
  ]) {
    const response = await app.inject({ url });
    assert.equal(response.statusCode, 404, url);
    assert.deepEqual(JSON.parse(response.body), { detail: 'Not found.' }, url);
  }
});

test('without a build, the dashboard explains how to build it', async () => {
  const empty = mkdtempSync(join(tmpdir(), 'kassa-dashboard-empty-'));
  const bare = await build(join(empty, 'missing'));
  try {
    const response = await bare.inject({ url: '/dashboard/payments' });
    assert.equal(response.statusCode, 503);
    assert.match(response.body, /npm run build/);
  } finally {
    await bare.close();
    rmSync(empty, { recursive: true, force: true });
  }
});

test('a rebuilt file is served without a restart', async () => {
  writeFileSync(join(root, 'index.html'), `${INDEX}<!-- v2 -->`);
  const response = await app.inject({ url: '/dashboard/' });
  assert.match(response.body, /v2/);
});

test('encoding negotiation prefers brotli and honours q=0', () => {
  assert.equal(negotiateEncoding('gzip, deflate, br'), 'br');
  assert.equal(negotiateEncoding('gzip'), 'gzip');
  assert.equal(negotiateEncoding('br;q=0, gzip'), 'gzip');
  assert.equal(negotiateEncoding('identity'), null);
  assert.equal(negotiateEncoding('*'), 'br');
  assert.equal(negotiateEncoding(undefined), null);
});

test('paths resolve only inside the root', () => {
  assert.equal(resolveInside('/srv/app', 'assets/a.js'), '/srv/app/assets/a.js');
  assert.equal(resolveInside('/srv/app', '../secret'), null);
  assert.equal(resolveInside('/srv/app', '%2e%2e/secret'), null);
  assert.equal(resolveInside('/srv/app', 'a\\..\\b'), null);
  assert.equal(resolveInside('/srv/app', '%zz'), null);
});
