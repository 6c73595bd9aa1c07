// The payment-link page (/pay/{id}) in a real Chromium: the customer sees what the link sells, fills
// the short billing form, is sent on to the hosted checkout and pays; unknown and used-up links get
// clear pages. Screenshots go to test-artifacts/screenshots/pay-link-*.png.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { CARDS } from '../helpers/checkout.ts';
import {
  call,
  createTestMerchant,
  type Merchant,
  startTestServer,
  type TestServer,
} from '../helpers/server.ts';
import { assertAccessible } from './helpers/checks.ts';
import { launchChromium, type PageRecord, screenshot, type TestBrowser } from './helpers/chromium.ts';

interface Link {
  id: string;
  url: string;
}

const EXPIRY = `12 / ${String((new Date().getFullYear() + 3) % 100).padStart(2, '0')}`;

const startRequests = (record: PageRecord) =>
  record.requests.filter((request) => /\/api\/payment-links\/public\/[^/]+\/start\/$/.test(request.url));

function assertCleanConsole(record: PageRecord): void {
  assert.deepEqual(record.errors, []);
  const violations = record.console.filter((line) =>
    /Content Security Policy|Trusted Type|Refused to/i.test(line),
  );
  assert.deepEqual(violations, []);
}

describe('payment-link page in Chromium', () => {
  let server: TestServer;
  let browser: TestBrowser;
  let merchant: Merchant;
  let productId: string;

  async function createLink(body: Record<string, unknown> = {}): Promise<Link> {
    const response = await call<Link>(server, 'POST', '/api/payment-links/', {
      token: merchant.token,
      body: {
        name: 'Coffee subscription, first box',
        products: [{ product_id: productId, quantity: 2 }],
        ...body,
      },
    });
    assert.equal(response.status, 201, response.text);
    return response.body;
  }

  before(async () => {
    server = await startTestServer();
    merchant = await createTestMerchant(server, 'Acme Coffee Roasters');
    const product = await call<{ id: string }>(server, 'POST', '/api/products/', {
      token: merchant.token,
      body: { name: 'Espresso beans, 1 kg', unit_price: '19.90', currency: 'USD' },
    });
    assert.equal(product.status, 201, product.text);
    productId = product.body.id;
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  test('the customer fills the billing form, goes on to checkout and pays', async () => {
    const link = await createLink();
    assert.equal(link.url, `${server.url}/pay/${link.id}`);
    const { page, record } = await browser.newPage();
    await page.goto(link.url);
    await page.getByRole('heading', { name: 'Acme Coffee Roasters' }).waitFor();
    // The link's name is the merchant's internal label: never on the customer's page.
    assert.ok(!((await page.content()) ?? '').includes('Coffee subscription, first box'));
    assert.match((await page.locator('#items').textContent()) ?? '', /Espresso beans, 1 kg × 2\$39\.80/);
    assert.equal(await page.locator('#total').textContent(), '$39.80');
    await screenshot(page, 'pay-link-01-preview');
    await assertAccessible(page, 'pay-link-preview');

    await page.getByRole('button', { name: 'Continue to payment' }).click();
    assert.equal(await page.locator('#billing_first_name-error').textContent(), 'Enter your first name.');
    await page.getByLabel('First name').fill('Ada');
    await page.getByLabel('Last name').fill('Lovelace');
    await page.getByLabel('Email').fill('ada@example');
    await page.getByLabel('Country code').fill('1');
    await page.getByRole('button', { name: 'Continue to payment' }).click();
    assert.equal(await page.locator('#billing_email-error').textContent(), 'Enter a valid email address.');
    assert.match((await page.locator('#billing_country-error').textContent()) ?? '', /two-letter code/);
    assert.equal(await page.getByLabel('Email').getAttribute('aria-invalid'), 'true');
    await screenshot(page, 'pay-link-02-validation');
    await assertAccessible(page, 'pay-link-validation');
    assert.deepEqual(startRequests(record), [], 'nothing was sent while the form was invalid');

    await page.getByLabel('Email').fill('ada@example.com');
    await page.getByLabel('Country code').fill('gb');
    await page.getByLabel('Postal code').fill('SW1A 1AA');
    await page.getByRole('button', { name: 'Continue to payment' }).click();
    await page.waitForURL(/\/checkout\/[A-Za-z0-9_-]+$/);
    const [start] = startRequests(record);
    assert.deepEqual(JSON.parse(start.body ?? '{}'), {
      billing_first_name: 'Ada',
      billing_last_name: 'Lovelace',
      billing_email: 'ada@example.com',
      billing_country: 'GB',
      billing_postal_code: 'SW1A 1AA',
    });

    await page.getByRole('button', { name: 'Pay $39.80' }).waitFor();
    await screenshot(page, 'pay-link-03-checkout');
    await page.getByLabel('Name on card').fill('Ada Lovelace');
    await page.getByLabel('Card number').fill(CARDS.success);
    await page.getByLabel('Expiry date').fill(EXPIRY);
    await page.getByLabel('Security code').fill('123');
    await page.getByRole('button', { name: 'Pay $39.80' }).click();
    await page.getByRole('heading', { name: 'Payment successful' }).waitFor();
    await screenshot(page, 'pay-link-04-success');

    const detail = await call<{ uses_count: number; stats: { payments_paid: number } }>(
      server,
      'GET',
      `/api/payment-links/${link.id}/`,
      { token: merchant.token },
    );
    assert.equal(detail.body.uses_count, 1);
    assertCleanConsole(record);
  });

  test('an unknown link and a used-up or deleted link each get a clear page', async () => {
    const { page, record } = await browser.newPage();
    const unknown = await page.goto(`${server.url}/pay/${randomUUID()}`);
    assert.equal(unknown?.status(), 200);
    await page.getByRole('heading', { name: 'Payment link not found' }).waitFor();
    await screenshot(page, 'pay-link-05-not-found');

    const malformed = await page.goto(`${server.url}/pay/not-a-uuid`);
    assert.equal(malformed?.status(), 404);
    await page.getByRole('heading', { name: 'Payment link not found' }).waitFor();

    const once = await createLink({ max_uses: 1 });
    const started = await call(server, 'POST', `/api/payment-links/public/${once.id}/start/`, {
      body: {
        billing_first_name: 'Ada',
        billing_last_name: 'Lovelace',
        billing_email: 'ada@example.com',
        billing_country: 'GB',
      },
    });
    assert.equal(started.status, 201, started.text);
    await page.goto(once.url);
    await page.getByRole('heading', { name: 'This payment link is no longer available' }).waitFor();
    assert.match((await page.locator('#result-message').textContent()) ?? '', /maximum number of uses/);
    await screenshot(page, 'pay-link-06-used-up');

    const deleted = await createLink();
    assert.equal(
      (await call(server, 'DELETE', `/api/payment-links/${deleted.id}/`, { token: merchant.token })).status,
      204,
    );
    await page.goto(deleted.url);
    await page.getByRole('heading', { name: 'This payment link is no longer available' }).waitFor();
    assertCleanConsole(record);
  });

  test('a link that runs out while the customer fills the form says so on submit', async () => {
    const link = await createLink({ max_uses: 1 });
    const { page } = await browser.newPage();
    await page.goto(link.url);
    await page.getByRole('button', { name: 'Continue to payment' }).waitFor();
    const other = await call(server, 'POST', `/api/payment-links/public/${link.id}/start/`, {
      body: {
        billing_first_name: 'B',
        billing_last_name: 'C',
        billing_email: 'b@example.com',
        billing_country: 'FR',
      },
    });
    assert.equal(other.status, 201, other.text);
    await page.getByLabel('First name').fill('Ada');
    await page.getByLabel('Last name').fill('Lovelace');
    await page.getByLabel('Email').fill('ada@example.com');
    await page.getByLabel('Country code').fill('GB');
    await page.getByRole('button', { name: 'Continue to payment' }).click();
    await page.getByRole('heading', { name: 'This payment link is no longer available' }).waitFor();
  });

  test('at phone width (375 px) the link page fits without sideways scrolling', async () => {
    const link = await createLink();
    const { page, record } = await browser.newPage({ width: 375, height: 812 });
    await page.goto(link.url);
    await page.getByRole('button', { name: 'Continue to payment' }).waitFor();
    const width = await page.evaluate<number>('document.documentElement.scrollWidth');
    assert.ok(width <= 375, `page is ${width} px wide`);
    await screenshot(page, 'pay-link-07-phone');
    assertCleanConsole(record);
  });

  test('the link page is small and sent with strict security headers', async (t) => {
    const link = await createLink();
    const sizes: Record<string, number> = {};
    for (const encoding of ['br', 'gzip', 'identity']) {
      const response = await fetch(link.url, { headers: { 'accept-encoding': encoding } });
      assert.equal(response.status, 200);
      await response.arrayBuffer();
      sizes[encoding] = Number(response.headers.get('content-length'));
      const csp = response.headers.get('content-security-policy') ?? '';
      assert.match(csp, /frame-ancestors 'none'/);
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
      assert.equal(response.headers.get('referrer-policy'), 'no-referrer');
    }
    t.diagnostic(`link page bytes: brotli ${sizes.br}, gzip ${sizes.gzip}, uncompressed ${sizes.identity}`);
    assert.ok(sizes.gzip < 10_000, `gzipped page is ${sizes.gzip} bytes`);
  });
});
