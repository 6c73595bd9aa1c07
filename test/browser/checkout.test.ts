// The hosted checkout page in a real Chromium against a real server: a merchant creates a checkout
// with its API key, and the customer's browser opens checkout_url and pays, is declined and retries,
// cancels, or types a bad number. Screenshots of each step go to test-artifacts/screenshots/.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { GENERIC_DECLINE } from '../../src/modules/checkout/card-testing.ts';
import { CARDS, createCheckout, pay } from '../helpers/checkout.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  startTestServer,
  type TestServer,
} from '../helpers/server.ts';
import { assertCleanConsole, fillCard } from './helpers/checkout-page.ts';
import { assertAccessible } from './helpers/checks.ts';
import {
  launchChromium,
  type MerchantSite,
  type PageRecord,
  screenshot,
  startMerchantSite,
  type TestBrowser,
} from './helpers/chromium.ts';

const PRODUCTS = [
  { name: 'Espresso beans, 1 kg', unit_price: '19.90', quantity: 2 },
  { name: 'Shipping', unit_price: '5.00', quantity: 1 },
];
/** Card data went only into the body of POST /pay/: never a URL, storage, a cookie or the console. */
async function assertNoCardLeak(page: Page, record: PageRecord, numbers: string[]): Promise<void> {
  const forms = numbers.flatMap((number) => {
    const groups = number.replace(/\s/g, '').match(/.{1,4}/g) ?? [];
    return ['', ' ', '%20', '+', '-'].map((separator) => groups.join(separator));
  });
  const leaks = (text: string) => forms.some((form) => text.includes(form));
  for (const request of record.requests) {
    assert.ok(!leaks(request.url), `card number in a URL: ${request.method} ${request.url}`);
    if (request.body && leaks(request.body)) {
      assert.match(request.url, /\/api\/checkout\/[^/]+\/pay\/$/, `card number sent to ${request.url}`);
      assert.equal(request.method, 'POST');
    }
  }
  for (const line of record.console) assert.ok(!leaks(line), `card number in the console: ${line}`);
  if (page.url().startsWith('http')) {
    const stored = await page.evaluate<{ local: number; session: number; cookie: string }>(
      '({ local: localStorage.length, session: sessionStorage.length, cookie: document.cookie })',
    );
    assert.deepEqual(stored, { local: 0, session: 0, cookie: '' });
  }
}

const payRequests = (record: PageRecord) =>
  record.requests.filter((request) => /\/api\/checkout\/[^/]+\/pay\/$/.test(request.url));

describe('hosted checkout page in Chromium', () => {
  let server: TestServer;
  let browser: TestBrowser;
  let site: MerchantSite;
  let apiKey: string;
  let sandboxKey: string;
  let clockOffsetMs = 0;

  before(async () => {
    server = await startTestServer({ clock: () => new Date(Date.now() + clockOffsetMs) });
    const merchant = await createTestMerchant(server, 'Acme Coffee Roasters');
    apiKey = await createTestKey(server, merchant);
    sandboxKey = await createTestKey(server, merchant, { environment: 'sandbox' });
    [browser, site] = await Promise.all([launchChromium(), startMerchantSite()]);
  });
  after(async () => {
    await browser?.close();
    await site?.close();
    await server?.close();
  });

  const returnUrls = (order: string) => ({
    successUrl: `${site.url}/return/success?order=${order}`,
    failedUrl: `${site.url}/return/failed?order=${order}`,
    cancelUrl: `${site.url}/return/cancel?order=${order}`,
  });

  test('paying with 4242… shows the success screen and returns the customer to the successUrl', async () => {
    const checkout = await createCheckout(server, apiKey, {
      currency: 'EUR',
      products: PRODUCTS,
      ...returnUrls('1001'),
    });
    const { page, record } = await browser.newPage();
    await page.goto(checkout.checkout_url);
    await page.getByRole('heading', { name: 'Acme Coffee Roasters' }).waitFor();
    assert.equal(await page.locator('#total').textContent(), '€44.80');
    assert.match((await page.locator('#items').textContent()) ?? '', /Espresso beans, 1 kg × 2/);
    assert.equal(await page.getByRole('button', { name: 'Pay €44.80' }).isVisible(), true);
    assert.equal(await page.locator('#test-mode').isVisible(), false);
    await screenshot(page, 'checkout-01-summary');
    await assertAccessible(page, 'checkout-summary');

    await fillCard(page, CARDS.success);
    assert.equal(await page.getByLabel('Card number').inputValue(), '4242 4242 4242 4242');
    await screenshot(page, 'checkout-02-card-filled');
    await page.getByRole('button', { name: 'Pay €44.80' }).click();
    await page.getByRole('heading', { name: 'Payment successful' }).waitFor();
    assert.match(
      (await page.locator('#result-redirect').textContent()) ?? '',
      /Returning you to 127\.0\.0\.1/,
    );
    await screenshot(page, 'checkout-03-success');
    await assertAccessible(page, 'checkout-success');
    await assertNoCardLeak(page, record, [CARDS.success]);

    await page.waitForURL(`${site.url}/return/success?order=1001`);
    await screenshot(page, 'checkout-04-back-at-merchant');
    const hit = site.hits.find((h) => h.path === '/return/success?order=1001');
    assert.ok(hit, 'the merchant site was reached');
    assert.equal(hit.headers.referer, undefined, 'the checkout token does not leak through Referer');

    const state = await call(server, 'GET', `/api/checkout/${checkout.token}/`);
    assert.equal(state.body.status, 'paid');
    assert.equal(payRequests(record).length, 1);
    assertCleanConsole(record);
  });

  test('a declined card shows the decline message, and a retry with 4242… succeeds', async () => {
    const checkout = await createCheckout(server, apiKey, { products: PRODUCTS });
    const { page, record } = await browser.newPage();
    await page.goto(checkout.checkout_url);
    await fillCard(page, CARDS.declined);
    await page.getByRole('button', { name: /^Pay / }).click();
    const alert = page.getByRole('alert');
    await alert.filter({ hasText: 'Your card was declined.' }).waitFor();
    assert.equal(await page.getByLabel('Security code').inputValue(), '', 'the CVC is cleared for the retry');
    await screenshot(page, 'checkout-05-declined');

    await page.getByLabel('Card number').fill(CARDS.success);
    await page.getByLabel('Security code').fill('123');
    await page.getByRole('button', { name: /^Pay / }).click();
    await page.getByRole('heading', { name: 'Payment successful' }).waitFor();
    assert.equal(await page.locator('#result-continue').isVisible(), false, 'no successUrl, no redirect');
    await screenshot(page, 'checkout-06-retry-success');

    const state = await call<{ status: string; attempts: unknown[] }>(
      server,
      'GET',
      `/api/checkout/${checkout.token}/`,
    );
    assert.equal(state.body.status, 'paid');
    assert.equal(state.body.attempts.length, 2);
    assert.equal(payRequests(record).length, 2);
    await assertNoCardLeak(page, record, [CARDS.declined, CARDS.success]);
    assertCleanConsole(record);
  });

  test('canceling shows the canceled screen and returns the customer to the cancelUrl', async () => {
    const checkout = await createCheckout(server, apiKey, { products: PRODUCTS, ...returnUrls('1002') });
    const { page, record } = await browser.newPage();
    await page.goto(checkout.checkout_url);
    await page.getByRole('button', { name: 'Cancel and return to the merchant' }).click();
    await page.getByRole('heading', { name: 'Payment canceled' }).waitFor();
    await screenshot(page, 'checkout-07-canceled');
    await page.waitForURL(`${site.url}/return/cancel?order=1002`);
    const state = await call(server, 'GET', `/api/checkout/${checkout.token}/`);
    assert.equal(state.body.status, 'canceled');
    assertCleanConsole(record);
  });

  test('a number that fails the Luhn check, a past expiry and a short CVC are refused in the browser; nothing is sent', async () => {
    const checkout = await createCheckout(server, apiKey, { products: PRODUCTS });
    const { page, record } = await browser.newPage();
    await page.goto(checkout.checkout_url);
    await fillCard(page, CARDS.notLuhn);
    await page.getByLabel('Expiry date').fill('01 / 20');
    await page.getByLabel('Security code').fill('12');
    await page.getByRole('button', { name: /^Pay / }).click();

    const number = page.getByLabel('Card number');
    await page.getByText('Your card number is not valid.').waitFor();
    assert.equal(await number.getAttribute('aria-invalid'), 'true');
    assert.equal(await number.getAttribute('aria-describedby'), 'card_number-error');
    assert.equal(await page.locator('#card_number-error').textContent(), 'Your card number is not valid.');
    assert.equal(await page.locator('#card_expiry-error').textContent(), 'Your card has expired.');
    assert.match((await page.locator('#card_cvc-error').textContent()) ?? '', /3 or 4 digits/);
    assert.equal(
      await page.evaluate<string>('document.activeElement.id'),
      'card_number',
      'focus on the first problem',
    );
    await screenshot(page, 'checkout-08-client-checks');

    await page.getByLabel('Expiry date').fill('13 / 30');
    await page.getByRole('button', { name: /^Pay / }).click();
    assert.equal(await page.locator('#card_expiry-error').textContent(), 'Enter the expiry date as MM / YY.');

    await page.waitForTimeout(300);
    assert.deepEqual(payRequests(record), [], 'no pay request left the browser');
    const state = await call<{ status: string; attempts: unknown[] }>(
      server,
      'GET',
      `/api/checkout/${checkout.token}/`,
    );
    assert.equal(state.body.status, 'open');
    assert.equal(state.body.attempts.length, 0);
    await assertNoCardLeak(page, record, [CARDS.notLuhn]);
    assertCleanConsole(record);
  });

  test('a sandbox checkout whose bank is still deciding shows the pending screen until it succeeds', async () => {
    const checkout = await createCheckout(
      server,
      sandboxKey,
      { products: PRODUCTS, sandbox_simulate: 'checkout_pending' },
      '/sandbox/api',
    );
    const { page, record } = await browser.newPage();
    await page.goto(checkout.checkout_url);
    await page.locator('#test-mode').waitFor();
    await fillCard(page, CARDS.success);
    await page.getByRole('button', { name: /^Pay / }).click();
    await page.getByRole('heading', { name: 'Confirming your payment…' }).waitFor();
    await screenshot(page, 'checkout-09-pending');
    await page.getByRole('heading', { name: 'Payment successful' }).waitFor({ timeout: 20_000 });
    const syncs = record.requests.filter((request) => request.url.endsWith('/api/checkout/sync-status/'));
    assert.ok(syncs.length >= 2, `the page kept asking (${syncs.length} sync calls)`);
    for (const sync of syncs) assert.deepEqual(JSON.parse(sync.body ?? '{}'), { token: checkout.token });
    await assertNoCardLeak(page, record, [CARDS.success]);
    assertCleanConsole(record);
  });

  test('at phone width (375 px) the page fits without sideways scrolling', async (t) => {
    const checkout = await createCheckout(server, apiKey, {
      currency: 'EUR',
      products: [
        {
          name: 'A product with a rather long name that has to wrap on a small screen',
          unit_price: '1234.50',
        },
        ...PRODUCTS,
      ],
    });
    const { page, record } = await browser.newPage({ width: 375, height: 812 });
    const started = performance.now();
    await page.goto(checkout.checkout_url);
    await page.getByRole('button', { name: /^Pay / }).waitFor();
    t.diagnostic(`from navigation to a payable form: ${Math.round(performance.now() - started)} ms`);
    const width = await page.evaluate<number>('document.documentElement.scrollWidth');
    assert.ok(width <= 375, `page is ${width} px wide`);
    await screenshot(page, 'checkout-10-phone');
    await fillCard(page, CARDS.declined);
    await page.getByRole('button', { name: /^Pay / }).click();
    await page.getByRole('alert').filter({ hasText: 'declined' }).waitFor();
    await screenshot(page, 'checkout-11-phone-declined');
    assert.ok((await page.evaluate<number>('document.documentElement.scrollWidth')) <= 375);
    assertCleanConsole(record);
  });

  test('an unknown token, a finished checkout and an expired one each get their own screen', async () => {
    const { page } = await browser.newPage();
    const unknown = await page.goto(`${server.url}/checkout/${'x'.repeat(43)}`);
    assert.equal(unknown?.status(), 200, 'a well-formed token gets the page; the API says it is unknown');
    await page.getByRole('heading', { name: 'Checkout not found' }).waitFor();
    await screenshot(page, 'checkout-12-not-found');

    const malformed = await page.goto(`${server.url}/checkout/not*a*token`);
    assert.equal(malformed?.status(), 404);
    await page.getByRole('heading', { name: 'Checkout not found' }).waitFor();

    const paid = await createCheckout(server, apiKey, { products: PRODUCTS });
    assert.equal((await pay(server, paid.token, CARDS.success)).status, 200);
    await page.goto(paid.checkout_url);
    await page.getByRole('heading', { name: 'Payment successful' }).waitFor();
    assert.equal(await page.getByLabel('Card number').isVisible(), false);

    const failed = await createCheckout(server, apiKey, { products: PRODUCTS, ...returnUrls('1003') });
    assert.equal((await pay(server, failed.token, CARDS.error)).status, 200);
    await page.goto(failed.checkout_url);
    await page.getByRole('heading', { name: 'Payment failed' }).waitFor();
    // The processor's error is the merchant's to read; the customer gets the one generic decline (card testing).
    assert.equal(
      await page.locator('#result-message').textContent(),
      `${GENERIC_DECLINE} Your payment could not be completed.`,
    );
    await screenshot(page, 'checkout-13-failed');
    await page.waitForURL(`${site.url}/return/failed?order=1003`);

    const expiring = await createCheckout(server, apiKey, { products: PRODUCTS });
    clockOffsetMs = 2 * 86_400_000;
    try {
      await page.goto(expiring.checkout_url);
      await page.getByRole('heading', { name: 'This checkout is no longer available' }).waitFor();
      assert.match((await page.locator('#result-message').textContent()) ?? '', /expired/);
      await screenshot(page, 'checkout-14-expired');
    } finally {
      clockOffsetMs = 0;
    }
  });

  test('the page is small, compressed and sent with strict security headers', async (t) => {
    const checkout = await createCheckout(server, apiKey, { products: PRODUCTS });
    const sizes: Record<string, number> = {};
    for (const encoding of ['br', 'gzip', 'identity']) {
      const response = await fetch(checkout.checkout_url, { headers: { 'accept-encoding': encoding } });
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('content-encoding') ?? 'identity', encoding);
      sizes[encoding] = Number(response.headers.get('content-length'));
      if (encoding === 'identity') {
        const html = await response.text();
        assert.doesNotMatch(
          html,
          /<script src=|<link rel="stylesheet"/,
          'one request: nothing else to fetch',
        );
        assert.equal(Buffer.byteLength(html), sizes.identity);
      } else {
        await response.arrayBuffer();
      }
      const csp = response.headers.get('content-security-policy') ?? '';
      assert.match(csp, /default-src 'none'/);
      assert.match(csp, /script-src 'sha256-[A-Za-z0-9+/=]+'(;|$)/);
      assert.match(csp, /frame-ancestors 'none'/);
      assert.match(csp, /form-action 'none'/);
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
      assert.equal(response.headers.get('referrer-policy'), 'no-referrer');
      assert.equal(response.headers.get('x-frame-options'), 'DENY');
      assert.equal(response.headers.get('cache-control'), 'no-store');
      assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
    }
    t.diagnostic(
      `checkout page bytes: brotli ${sizes.br}, gzip ${sizes.gzip}, uncompressed ${sizes.identity}`,
    );
    assert.ok(sizes.gzip < 10_000, `gzipped page is ${sizes.gzip} bytes`);
    assert.ok(sizes.br < sizes.gzip);
  });
});
