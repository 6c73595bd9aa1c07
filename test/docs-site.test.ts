// The docs site: /docs is the quickstart, every guide in docs/ (and the READMEs) is a page, every link
// between them resolves to a served page and an existing anchor, pages carry their strict CSP, and /
// sends visitors to the dashboard.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startTestServer, type TestServer } from './helpers/server.ts';

const DOCS = join(import.meta.dirname, '..', 'docs');

describe('the docs site', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  const page = async (path: string) => {
    const response = await fetch(server.url + path, { redirect: 'manual' });
    return { response, text: await response.text() };
  };

  test('/ redirects to the dashboard; /docs is the quickstart', async () => {
    const root = await page('/');
    assert.equal(root.response.status, 302);
    assert.equal(root.response.headers.get('location'), '/dashboard/');
    const landing = await page('/docs');
    assert.equal(landing.response.status, 200);
    assert.match(landing.text, /<h1 id="quickstart[^"]*">Quickstart/);
    assert.equal((await page('/docs/')).response.status, 200);
  });

  test('every guide page, with every internal link resolving to a served page and an existing anchor', async () => {
    const names = readdirSync(DOCS)
      .filter((file) => file.endsWith('.md'))
      .map((file) => file.replace(/\.md$/, ''));
    const pages = ['/docs', ...[...names, 'readme', 'sdk', 'sdk-changelog'].map((name) => `/docs/${name}`)];
    const bodies = new Map<string, string>();
    for (const path of pages) {
      const { response, text } = await page(path);
      assert.equal(response.status, 200, path);
      assert.equal(
        response.headers.get('content-security-policy'),
        "default-src 'none'; style-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; script-src 'none'",
      );
      assert.doesNotMatch(text, /<script/i, `${path} has no script`);
      bodies.set(path, text);
    }
    const broken: string[] = [];
    for (const [path, text] of bodies) {
      for (const [, href] of text.matchAll(/href="([^"]+)"/g)) {
        const target = href.replace(/&amp;/g, '&');
        if (/^(https?:|mailto:)/.test(target)) continue;
        if (!target.startsWith('/') && !target.startsWith('#')) {
          broken.push(`${path} → ${target} (a file the site does not serve)`);
          continue;
        }
        const [targetPath, anchor] = target.split('#', 2);
        const resolved = targetPath === '' ? path : targetPath;
        const body = bodies.get(resolved) ?? (await page(resolved)).text;
        const status = bodies.has(resolved) ? 200 : (await fetch(server.url + resolved)).status;
        if (status !== 200) broken.push(`${path} → ${target} (${status})`);
        else if (anchor && !body.includes(`id="${anchor}"`))
          broken.push(`${path} → ${target} (no such anchor)`);
      }
    }
    assert.deepEqual(broken, []);
  });

  test("the API reference page loads only this origin's scripts, and its assets are served", async () => {
    const reference = await page('/docs/api');
    assert.equal(reference.response.status, 200);
    const csp = reference.response.headers.get('content-security-policy') ?? '';
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.doesNotMatch(csp, /https?:|'unsafe-eval'/);
    assert.doesNotMatch(reference.text, /<script>|<script(?![^>]*\bsrc=)/, 'no inline script');
    for (const asset of [
      '/docs/assets/api-reference.js',
      '/docs/assets/redoc.standalone.js',
      '/docs/assets/docs.css',
    ]) {
      const response = await fetch(server.url + asset, { headers: { 'accept-encoding': 'gzip' } });
      assert.equal(response.status, 200, asset);
      await response.arrayBuffer();
    }
    const missing = await page('/docs/assets/nothing.js');
    assert.deepEqual([missing.response.status, JSON.parse(missing.text)], [404, { detail: 'Not found.' }]);
    const unknown = await page('/docs/no-such-guide');
    assert.deepEqual([unknown.response.status, JSON.parse(unknown.text)], [404, { detail: 'Not found.' }]);
  });
});
