// The docs site in a real browser: the API reference (Redoc, self-hosted) renders the OpenAPI document
// under its strict CSP with no violation and no request to another origin, and the guides render
// with no script at all.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { launchChromium, screenshot, type TestBrowser } from './helpers/chromium.ts';

describe('the docs site in Chromium', () => {
  let server: TestServer;
  let browser: TestBrowser;

  before(async () => {
    server = await startTestServer();
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  const violations = (lines: string[]) =>
    lines.filter((line) => /Content Security Policy|Refused to/i.test(line));
  /** Redoc always shows a "powered by" logo from Redocly's CDN; the CSP refuses it, as it should. */
  const REDOC_LOGO = /Loading the image 'https:\/\/cdn\.redoc\.ly\/redoc\/logo-mini(-full)?\.svg' violates/;

  test('/docs/api renders every operation of the OpenAPI document with Redoc, within its CSP and origin', async () => {
    const { page, record } = await browser.newPage({ width: 1280, height: 900 });
    const answered: string[] = [];
    page.on('response', (answer) => answered.push(answer.url()));
    const response = await page.goto(`${server.url}/docs/api`);
    assert.equal(response?.status(), 200);
    assert.match(response?.headers()['content-security-policy'] ?? '', /script-src 'self'/);
    await page.getByText('/checkout/create/', { exact: false }).first().waitFor({ timeout: 30_000 });
    await page.getByText('Kassa API', { exact: false }).first().waitFor();
    await screenshot(page, 'docs-api-reference');
    assert.deepEqual(
      violations(record.console).filter((line) => !REDOC_LOGO.test(line)),
      [],
    );
    assert.deepEqual(record.errors, []);
    // The only foreign request attempted is that logo, and it never got an answer: nothing else left.
    const foreign = (urls: string[]) =>
      urls.filter((url) => !url.startsWith(`${server.url}/`) && !url.startsWith('data:'));
    assert.deepEqual(foreign(answered), []);
    assert.deepEqual(
      foreign(record.requests.map((request) => request.url)).filter(
        (url) => !/^https:\/\/cdn\.redoc\.ly\/redoc\/logo-mini/.test(url),
      ),
      [],
    );
    assert.ok(record.requests.some((request) => request.url.endsWith('/api/openapi.json')));
  });

  test('/docs shows the quickstart with the guides menu, and runs no script', async () => {
    const { page, record } = await browser.newPage();
    const response = await page.goto(`${server.url}/docs`);
    assert.equal(response?.status(), 200);
    await page.getByRole('heading', { level: 1, name: /Quickstart/ }).waitFor();
    const menu = page.getByRole('navigation', { name: 'Documentation' });
    await menu.getByRole('link', { name: 'API reference' }).waitFor();
    await menu.getByRole('link', { name: /Operating Kassa/ }).click();
    await page.getByRole('heading', { level: 1, name: 'Operating Kassa' }).waitFor();
    assert.equal(new URL(page.url()).pathname, '/docs/operations');
    await screenshot(page, 'docs-guide');
    assert.deepEqual(violations(record.console), []);
    assert.ok(
      record.requests.every((request) => !request.url.endsWith('.js')),
      'a guide page loads no script',
    );
  });
});
