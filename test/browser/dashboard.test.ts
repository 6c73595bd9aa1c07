// A merchant's day in the dashboard, in a real Chromium against the real server: log in, add a product
// and a payment link, pay it on the hosted pages (a declined card, then a good one), find the payment
// and its attempts, refund part of it with the code read on the Mail page (the server runs in
// development without SMTP), try everything again in test mode with a sandbox link, export the
// payments as CSV, manage API keys, point the webhook at the test receiver and watch deliveries arrive,
// add a bank account and request a payout to it, edit the profile, use it at phone width, and be sent
// back to the login page when the session ends. Screenshots go to
// test-artifacts/screenshots/dashboard-*.png; per-page timings and the bundle size are printed.
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { buildDashboard, DASHBOARD_OUT } from '../../scripts/build-web.ts';
import {
  call,
  createTestMerchant,
  type Merchant,
  startTestServer,
  type TestServer,
} from '../helpers/server.ts';
import { assertNoSidewaysScroll } from './helpers/checks.ts';
import { launchChromium, screenshot, type TestBrowser, type TestPage } from './helpers/chromium.ts';

const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/', import.meta.url));

interface Timing {
  page: string;
  kind: 'full load' | 'in-app';
  headingMs: number;
  readyMs: number;
}

const timings: Timing[] = [];

/** Waits until the page's h1 reads `title` and nothing in <main> is loading; returns both instants. */
async function whenUsable(page: Page, title: string | RegExp): Promise<{ heading: number; ready: number }> {
  const heading = page.locator('#page-title');
  await heading.filter({ hasText: title }).waitFor({ state: 'visible' });
  const headingAt = await page.evaluate(() => performance.now());
  // (Locators, never waitForFunction with a string: that is eval'd in the page, which its CSP forbids.)
  await page.locator('main .loading').first().waitFor({ state: 'detached' });
  const readyAt = await page.evaluate(() => performance.now());
  return { heading: headingAt, ready: readyAt };
}

/** Full page load of a dashboard URL, timed from navigation start (performance.timeOrigin). */
async function load(page: Page, url: string, name: string, title: string | RegExp) {
  await page.goto(url, { waitUntil: 'commit' });
  const at = await whenUsable(page, title);
  timings.push({ page: name, kind: 'full load', headingMs: at.heading, readyMs: at.ready });
}

/**
 * Clicks the element `find` (a JS expression) inside the page and times, there, the new heading and the
 * end of loading (polled every 5 ms), so no DevTools round trip is counted.
 */
async function timedClick(page: Page, name: string, find: string, title: string) {
  const measured = await page.evaluate<{ heading: number; ready: number }>(`(async () => {
    const target = ${find};
    const tick = () => new Promise((resolve) => setTimeout(resolve, 5));
    const start = performance.now();
    target.click();
    while (document.querySelector('#page-title')?.textContent !== ${JSON.stringify(title)}) await tick();
    const heading = performance.now() - start;
    while (document.querySelector('main .loading')) await tick();
    return { heading, ready: performance.now() - start };
  })()`);
  timings.push({ page: name, kind: 'in-app', headingMs: measured.heading, readyMs: measured.ready });
  await whenUsable(page, title);
}

/** In-app navigation through the main menu. */
async function visit(page: Page, label: string, title: string = label) {
  await page
    .getByRole('navigation', { name: 'Main' })
    .getByRole('link', { name: label, exact: true })
    .waitFor();
  const find = `[...document.querySelectorAll('nav[aria-label="Main"] a')].find((a) => a.textContent === ${JSON.stringify(label)})`;
  await timedClick(page, label, find, title);
}

async function until<T>(
  what: string,
  probe: () => Promise<T | undefined | null | false>,
  timeoutMs = 15_000,
) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('merchant dashboard', () => {
  let server: TestServer;
  let merchant: Merchant;
  let chromium: TestBrowser;
  let tab: TestPage;
  let page: Page;
  let base: string;
  let linkUrl = '';
  let paymentId = '';

  before(async () => {
    const built = await buildDashboard({ ifStale: true });
    if (!built.built && !built.message.includes('up to date')) throw new Error(built.message);
    // Development without SMTP: mail lands in the development mailbox, which the Mail page shows.
    server = await startTestServer({ env: { KASSA_ENV: 'development', KASSA_SIM_REFUND_DELAY_MS: '300' } });
    merchant = await createTestMerchant(server, 'Sunny Shop');
    base = `${server.url}/dashboard/`;
    chromium = await launchChromium();
    tab = await chromium.newPage({ width: 1280, height: 900 });
    page = tab.page;
  });

  after(async () => {
    await chromium?.close();
    await server?.close();
    if (timings.length) {
      mkdirSync(ARTIFACTS, { recursive: true });
      writeFileSync(join(ARTIFACTS, 'dashboard-timings.json'), `${JSON.stringify(timings, null, 2)}\n`);
      console.log('\nDashboard: time to usable (heading visible / data loaded), ms');
      for (const t of timings) {
        console.log(
          `  ${t.kind.padEnd(9)} ${t.page.padEnd(28)} ${t.headingMs.toFixed(0).padStart(5)} ${t.readyMs.toFixed(0).padStart(5)}`,
        );
      }
    }
  });

  test('the built bundle is small: React plus the app', () => {
    const assets = join(DASHBOARD_OUT, 'assets');
    const js = readdirSync(assets).filter((name) => name.endsWith('.js'));
    const gzip = js.reduce((sum, name) => sum + statSync(join(assets, `${name}.gz`)).size, 0);
    const brotli = js.reduce((sum, name) => sum + statSync(join(assets, `${name}.br`)).size, 0);
    console.log(
      `Dashboard JS: ${js.length} file(s), ${(gzip / 1024).toFixed(1)} KiB gzip, ${(brotli / 1024).toFixed(1)} KiB brotli`,
    );
    assert.ok(gzip < 120 * 1024, `dashboard JS is ${gzip} bytes gzipped`);
  });

  test('an anonymous visit lands on the login page; a wrong password shows the server detail', async () => {
    await load(page, `${base}payments`, 'Login', 'Log in to your dashboard');
    assert.match(page.url(), /\/dashboard\/login\?next=payments$/);
    await page.getByLabel('Email').fill(merchant.email);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('alert').filter({ hasText: 'Invalid email or password.' }).waitFor();
    await screenshot(page, 'dashboard-login');
  });

  test('logging in opens the page the merchant asked for, then the overview', async () => {
    await page.getByLabel('Password').fill(merchant.password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await whenUsable(page, 'Payments');
    assert.match(page.url(), /\/dashboard\/payments$/);
    await page.getByText('No payments yet.').waitFor();
    await visit(page, 'Overview');
    await page.getByRole('heading', { name: 'Wallet (USD)' }).waitFor();
    await load(page, base, 'Overview', 'Overview');
    await screenshot(page, 'dashboard-overview-empty');
  });

  test('a product is added to the catalog', async () => {
    await visit(page, 'Products');
    const form = page.locator('form').filter({ has: page.getByRole('button', { name: 'Add product' }) });
    await form.getByLabel('Name').fill('Sunglasses');
    await form.getByLabel('Description (optional)').fill('Polarised, with a case');
    await form.getByLabel('Unit price').fill('25.00');
    await form.getByRole('button', { name: 'Add product' }).click();
    await page.getByText('Product Sunglasses was added to the catalog.').waitFor();
    await page.getByRole('region', { name: 'Products' }).getByText('Sunglasses').first().waitFor();
    // A server-side refusal is shown as the API's detail.
    await form.getByLabel('Name').fill('Free thing');
    await form.getByLabel('Unit price').fill('0');
    await form.getByRole('button', { name: 'Add product' }).click();
    await page.getByRole('alert').filter({ hasText: 'Unit price:' }).waitFor();
    await form.getByLabel('Name').fill('');
    await form.getByLabel('Unit price').fill('');
    await load(page, `${base}products`, 'Products', 'Products');
    await screenshot(page, 'dashboard-products');
  });

  test('a payment link is created from the product, with its URL to copy', async () => {
    await visit(page, 'Payment links');
    await page.getByRole('button', { name: 'New payment link' }).click();
    await page.getByLabel('Name (only you see it)').fill('Summer sale');
    await page.getByLabel('Quantity').fill('1');
    await page.getByRole('button', { name: 'Create link' }).click();
    const ready = page.getByRole('status').filter({ hasText: 'Payment link Summer sale is ready' });
    await ready.waitFor();
    linkUrl = (await ready.getByRole('link').getAttribute('href')) ?? '';
    assert.match(linkUrl, /\/pay\/[0-9a-f-]{36}$/);
    await page
      .getByRole('region', { name: 'Payment links' })
      .getByRole('link', { name: 'Summer sale', exact: true })
      .waitFor();
    await screenshot(page, 'dashboard-links');
  });

  test('the customer pays on the hosted pages: one declined card, then a good one', async () => {
    const customer = await chromium.newPage({ width: 420, height: 900 });
    const pay = customer.page;
    assert.ok(linkUrl, 'the link step produced a link URL');
    await pay.goto(linkUrl);
    await pay.locator('#billing_first_name').fill('Ada');
    await pay.locator('#billing_last_name').fill('Lovelace');
    await pay.locator('#billing_email').fill('ada@example.com');
    await pay.locator('#billing_country').fill('GB');
    await pay.locator('#start-button').click();
    await pay.waitForURL(/\/checkout\//);
    await pay.locator('#cardholder_name').fill('Ada Lovelace');
    await pay.locator('#card_number').fill('4000 0000 0000 0002');
    await pay.locator('#card_expiry').fill('12 / 34');
    await pay.locator('#card_cvc').fill('123');
    await pay.locator('#pay-button').click();
    await pay.locator('#pay-error').filter({ hasText: 'declined' }).waitFor();
    await pay.locator('#card_number').fill('4242 4242 4242 4242');
    await pay.locator('#card_cvc').fill('123');
    await pay.locator('#pay-button').click();
    await pay.locator('#result-title').filter({ hasText: /\S/ }).waitFor();
    await customer.context.close();
    const payments = await call<{ results: { id: string; status: string }[] }>(
      server,
      'GET',
      '/api/payments/',
      {
        token: merchant.token,
      },
    );
    paymentId = payments.body.results[0]?.id ?? '';
    assert.match(paymentId, /^TX/);
    assert.equal(payments.body.results[0].status, 'paid');
    // Settlement credits the wallet once the deposit succeeded (the worker runs in the test server).
    await until('the wallet to be credited', async () => {
      const wallet = await call<{ available: string }>(server, 'GET', '/api/wallet/', {
        token: merchant.token,
      });
      return Number(wallet.body.available) > 0;
    });
  });

  test('the payment is listed, searchable, and shows its card attempts', async () => {
    assert.ok(paymentId, 'the payment step made a payment');
    await visit(page, 'Payments');
    const table = page.getByRole('region', { name: 'Payments' });
    await table.getByRole('link', { name: paymentId }).waitFor();
    await page.getByLabel('Search', { exact: true }).fill(paymentId.slice(0, 10));
    await page.getByLabel('Status').selectOption('paid');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL(/status=paid/);
    await whenUsable(page, 'Payments');
    await table.getByRole('link', { name: paymentId }).waitFor();
    await screenshot(page, 'dashboard-payments');
    await page.getByLabel('Status').selectOption('failed');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByText('No payments match these filters.').waitFor();
    await load(page, `${base}payments`, 'Payments', 'Payments');

    await timedClick(
      page,
      'Payment detail',
      `document.querySelector('a[href="/dashboard/payments/${paymentId}"]')`,
      `Payment ${paymentId}`,
    );
    const attempts = page.getByRole('list', { name: 'Card attempts, newest first' }).getByRole('listitem');
    assert.equal(await attempts.count(), 2);
    await attempts.first().getByText('Succeeded').waitFor();
    await attempts.nth(1).getByText('Your card was declined.').waitFor();
    await page.getByText('Net in USD').waitFor();
    await page
      .getByRole('region', { name: 'Events for this payment' })
      .getByText('transaction.status_changed')
      .first()
      .waitFor();
    await screenshot(page, 'dashboard-payment-detail');
  });

  test('part of the payment is refunded with the code read on the Mail page', async () => {
    assert.ok(paymentId, 'the payment step made a payment');
    await page.getByRole('button', { name: 'Refund', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: `Refund ${paymentId}` });
    await dialog.getByRole('button', { name: 'Email me a code' }).click();
    await dialog.getByText('A verification code was sent to').waitFor();
    // Where the code went is said: no SMTP here, so the development mailbox.
    await dialog.getByText('open Mail in the dashboard to read it').waitFor();
    const mailTab = await tab.context.newPage();
    await mailTab.goto(`${base}mail`);
    await whenUsable(mailTab, 'Mail');
    await mailTab
      .getByRole('list', { name: 'Messages, newest first' })
      .getByRole('link', { name: 'Your Kassa refund verification code' })
      .first()
      .click();
    const message = mailTab
      .getByRole('article')
      .getByText(/refund verification code for Sunny Shop is \d{6}\./);
    await message.waitFor();
    const code = /is (\d{6})\./.exec((await message.textContent()) ?? '')?.[1] ?? '';
    assert.match(code, /^\d{6}$/);
    await screenshot(mailTab, 'dashboard-mail');
    await mailTab.close();
    await dialog.getByLabel(/^Amount/).fill('10.00');
    await dialog.getByLabel(/^Reason/).fill('One lens was scratched');
    // A wrong code first: the server's detail is shown and the dialog stays open.
    await dialog.getByLabel('Verification code').fill(code === '000000' ? '111111' : '000000');
    await dialog.getByRole('button', { name: 'Refund payment' }).click();
    await dialog
      .getByRole('alert')
      .filter({ hasText: 'Verification code: the code is incorrect.' })
      .waitFor();
    await screenshot(page, 'dashboard-refund-dialog');
    await dialog.getByLabel('Verification code').fill(code);
    await dialog.getByRole('button', { name: 'Refund payment' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /Refund RF\w+ of .*10\.00 is processing/ })
      .waitFor();
    // The simulator completes the refund shortly; the payment, having a remainder, returns to paid.
    await until('the refund to complete', async () => {
      const payment = await call<{ status: string; refunded_amount: string }>(
        server,
        'GET',
        `/api/payments/${paymentId}/`,
        {
          token: merchant.token,
        },
      );
      return payment.body.refunded_amount === '10.00' && payment.body.status === 'paid';
    });
    await page.reload();
    await whenUsable(page, `Payment ${paymentId}`);
    const refunds = page.getByRole('region', { name: 'Refunds of this payment' });
    await refunds
      .getByRole('row')
      .filter({ hasText: 'One lens was scratched' })
      .getByText('Completed')
      .waitFor();
    await screenshot(page, 'dashboard-payment-refunded');
  });

  test('the refunds page lists refunds with the API filters', async () => {
    await visit(page, 'Refunds');
    if (paymentId)
      await page.getByRole('region', { name: 'Refunds' }).getByText('One lens was scratched').waitFor();
    await screenshot(page, 'dashboard-refunds');
  });

  test('test mode: a sandbox link paid with a test card shows only in test mode, under a band', async () => {
    await visit(page, 'Payment links');
    const toggle = page.getByRole('switch', { name: 'Test mode' });
    await toggle.click();
    await page.getByText('You are looking at sandbox data').waitFor();
    await page.getByText('No payment links yet.').waitFor();
    await page.getByRole('button', { name: 'New payment link' }).click();
    await page.getByLabel('Name (only you see it)').fill('Test sale');
    await page.getByRole('button', { name: 'Create link' }).click();
    const created = page.getByRole('status').filter({ hasText: 'Payment link Test sale is ready' });
    const testLink = (await created.getByRole('link').getAttribute('href')) ?? '';
    const customer = await chromium.newPage({ width: 420, height: 900 });
    await customer.page.goto(testLink);
    await customer.page.locator('#billing_first_name').fill('Test');
    await customer.page.locator('#billing_last_name').fill('Customer');
    await customer.page.locator('#billing_email').fill('tester@example.com');
    await customer.page.locator('#billing_country').fill('FR');
    await customer.page.locator('#start-button').click();
    await customer.page.waitForURL(/\/checkout\//);
    await customer.page.locator('#test-mode').waitFor();
    await customer.page.locator('#cardholder_name').fill('Test Customer');
    await customer.page.locator('#card_number').fill('4242 4242 4242 4242');
    await customer.page.locator('#card_expiry').fill('12 / 34');
    await customer.page.locator('#card_cvc').fill('123');
    await customer.page.locator('#pay-button').click();
    await customer.page.locator('#result-title').filter({ hasText: /\S/ }).waitFor();
    await customer.context.close();

    await visit(page, 'Payments');
    const table = page.getByRole('region', { name: 'Payments' });
    await until('the test payment', async () => {
      await page.reload();
      await whenUsable(page, 'Payments');
      return (await table.getByText('tester@example.com').count()) > 0;
    });
    assert.equal(await table.getByRole('link', { name: paymentId }).count(), 0);
    await screenshot(page, 'dashboard-test-mode-payments');
    await visit(page, 'Overview');
    const payments = page
      .getByRole('list', { name: 'Statistics' })
      .locator('li')
      .filter({ has: page.getByText('Payments', { exact: true }) });
    await payments.locator('.stat-value').filter({ hasText: /^1$/ }).waitFor();
    await screenshot(page, 'dashboard-test-mode-overview');
    await toggle.click();
    await page.getByText('You are looking at sandbox data').waitFor({ state: 'detached' });
    await visit(page, 'Payments');
    await table.getByRole('link', { name: paymentId }).waitFor();
    assert.equal(await table.getByText('tester@example.com').count(), 0);
  });

  test('an export: the filtered payments list is downloaded as CSV', async () => {
    await page.getByLabel('Status').selectOption('paid');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL(/status=paid/);
    await whenUsable(page, 'Payments');
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: /Export CSV/ }).click(),
    ]);
    const csv = readFileSync(await download.path(), 'utf8')
      .trim()
      .split('\r\n');
    assert.match(csv[0], /^id,created_at,/);
    assert.deepEqual(
      csv.slice(1).map((row) => row.split(',')[0]),
      [paymentId],
    );
    assert.match(csv[1], /,paid,USD,25\.00,/);
  });

  test('API keys: create one, see the raw key once, rotate it', async () => {
    await visit(page, 'Developers');
    await page.getByLabel('Name').fill('Shop backend');
    await page.getByLabel('checkout:create').check();
    await page.getByLabel('payments:read').check();
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = page.getByTestId('one-time-secret');
    const first = (await secret.textContent()) ?? '';
    assert.match(first, /^kassa_live_[0-9A-Za-z]{40}$/);
    const keys = page.getByRole('region', { name: 'API keys' });
    await keys.getByText('checkout:create, payments:read').waitFor();
    // A second production key is refused with the API's message.
    await page.getByLabel('Name').fill('Second key');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('alert').filter({ hasText: 'An active API key already exists' }).waitFor();
    await page.getByRole('button', { name: 'I have saved it' }).click();

    await keys.getByRole('button', { name: 'Rotate' }).click();
    await page
      .getByRole('dialog', { name: 'Rotate the production key?' })
      .getByRole('button', { name: 'Rotate key' })
      .click();
    await until('the rotated key', async () => {
      const text = await secret.textContent().catch(() => '');
      return text && text !== first ? text : undefined;
    });
    await keys.getByText('Revoked').first().waitFor();
    const rows = keys.getByRole('row').filter({ hasText: 'Shop backend' });
    assert.equal(await rows.count(), 2);
    assert.equal(await rows.filter({ hasText: 'Active' }).count(), 1);
    await screenshot(page, 'dashboard-developers-keys');
    await page.getByRole('button', { name: 'I have saved it' }).click();
    await load(page, `${base}developers`, 'Developers', 'Developers');
  });

  test('the webhook endpoint is set to the test receiver and deliveries arrive there', async () => {
    await page
      .getByRole('navigation', { name: 'Developer sections' })
      .getByRole('link', { name: 'Webhook' })
      .click();
    await page.getByRole('button', { name: 'Use the built-in test receiver' }).click();
    assert.equal(
      await page.getByLabel('Endpoint URL').inputValue(),
      `${server.url}/api/v1/webhooks/${merchant.slug}/`,
    );
    await page.getByRole('button', { name: 'Save endpoint' }).click();
    await page.getByText('The webhook endpoint was saved.').waitFor();
    const secret = (await page.getByTestId('one-time-secret').textContent()) ?? '';
    assert.match(secret, /^whsec_/);
    await page.getByRole('button', { name: 'I have saved it' }).click();
    await page.getByText(`Current secret: whsec_…${secret.slice(-4)}`).waitFor();
    await page.getByRole('button', { name: 'Send webhook.test' }).click();
    await page.getByText('A webhook.test event was queued.').waitFor();
    if (paymentId) {
      await page.getByLabel('Payment ID (empty: the latest payment)').fill(paymentId);
      await page.getByRole('button', { name: 'Resend payment event' }).click();
      await page.getByText(`transaction.status_changed for ${paymentId} was queued.`).waitFor();
    }
    await screenshot(page, 'dashboard-developers-webhook');

    await page
      .getByRole('navigation', { name: 'Developer sections' })
      .getByRole('link', { name: 'Deliveries' })
      .click();
    const deliveries = page.getByRole('region', { name: 'Webhook deliveries' });
    await until('a delivered webhook', async () => {
      await page.getByRole('button', { name: 'Refresh' }).first().click();
      await page.locator('[aria-busy="true"]').first().waitFor({ state: 'detached' });
      return (await deliveries.getByText('Delivered').count()) > 0;
    });
    const testRow = deliveries.getByRole('row').filter({ hasText: 'webhook.test' });
    await testRow.getByRole('button', { name: /Show/ }).click();
    const attempts = page.getByRole('region', { name: 'Delivery attempts' });
    await attempts.getByRole('cell', { name: '200' }).waitFor();
    await page.getByRole('button', { name: 'Redeliver' }).click();
    await page.getByText(/Redelivery .* was queued/).waitFor();
    await screenshot(page, 'dashboard-developers-deliveries');

    await page
      .getByRole('navigation', { name: 'Developer sections' })
      .getByRole('link', { name: 'Test receiver' })
      .click();
    const received = page.getByRole('list', { name: 'Received requests' });
    await received.getByText('webhook.test').first().waitFor();
    assert.ok((await received.getByText('Signature valid').count()) > 0);
    await screenshot(page, 'dashboard-developers-receiver');
  });

  test('a bank account is added, shown masked, and a payout to it is listed as pending', async () => {
    await visit(page, 'Payouts');
    await page.getByRole('heading', { name: 'Request a payout' }).waitFor();
    const account = page.getByRole('form', { name: 'Bank account' });
    await account.getByLabel('Account holder').fill('Sunny Shop Ltd');
    await account.getByRole('textbox', { name: 'IBAN' }).fill('GB29 NWBK 6016 1331 9268 19');
    await account.getByRole('button', { name: 'Save bank account' }).click();
    await page.getByRole('region', { name: 'Bank account' }).getByText('GB IBAN •••• 6819').waitFor();
    if (paymentId) {
      await page.getByLabel('Amount (USD)').fill('5.00');
      await page.getByRole('button', { name: 'Request payout' }).click();
      await page.getByText(/Payout PO\w+ of .*5\.00 is pending to GB IBAN •••• 6819/).waitFor();
      const row = page
        .getByRole('region', { name: 'Payouts' })
        .getByRole('row')
        .filter({ hasText: 'Pending' });
      await row.getByText('GB IBAN •••• 6819').waitFor();
    }
    await page.getByLabel('Amount (USD)').fill('999999.00');
    await page.getByRole('button', { name: 'Request payout' }).click();
    await page.locator('.form-error').waitFor();
    await screenshot(page, 'dashboard-payouts');
  });

  test('the overview shows the wallet, the paid volume chart and the activity', async () => {
    await visit(page, 'Overview');
    if (paymentId) {
      await page.getByRole('img', { name: /Paid volume in USD/ }).waitFor();
      await page
        .getByRole('region', { name: 'Recent wallet activity' })
        .getByText(paymentId)
        .first()
        .waitFor();
    }
    await screenshot(page, 'dashboard-overview');
  });

  test('settings: the editable profile is saved, the operator settings are read-only', async () => {
    await visit(page, 'Settings');
    await page.getByLabel('Telegram').fill('@sunnyshop');
    await page.getByLabel('Website').fill('https://sunny.example');
    await page.getByLabel('Excluding tax (HT)').check();
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('Your changes were saved.').waitFor();
    const organization = await call<{ telegram: string; price_mode: string }>(
      server,
      'GET',
      '/api/organization/',
      {
        token: merchant.token,
      },
    );
    assert.equal(organization.body.telegram, '@sunnyshop');
    assert.equal(organization.body.price_mode, 'HT');
    await page.getByLabel('Website').fill('not a url');
    // Past the browser's own URL check, to see the server's refusal.
    await page.evaluate(`document.querySelector('input[name="website"]').type = 'text'`);
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('alert').filter({ hasText: 'Website: must be a valid URL.' }).waitFor();
    await page.getByRole('heading', { name: 'Commercial settings' }).waitFor();
    await page.getByText('2.90 %').waitFor();
    await screenshot(page, 'dashboard-settings');
  });

  test('at phone width the menu collapses behind a button and pages still work', async () => {
    const phone = await chromium.newPage({ width: 390, height: 844 });
    await phone.context.addCookies(await tab.context.cookies());
    const p = phone.page;
    await load(p, base, 'Overview (phone)', 'Overview');
    const menu = p.getByRole('button', { name: 'Menu' });
    assert.equal(await menu.getAttribute('aria-expanded'), 'false');
    assert.equal(await p.getByRole('navigation', { name: 'Main' }).isVisible(), false);
    await screenshot(p, 'dashboard-phone-overview');
    await menu.click();
    assert.equal(await menu.getAttribute('aria-expanded'), 'true');
    await screenshot(p, 'dashboard-phone-menu');
    await p.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Payments' }).click();
    await whenUsable(p, 'Payments');
    assert.equal(await p.getByRole('navigation', { name: 'Main' }).isVisible(), false);
    const overflow = await p.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
    assert.ok(overflow <= 1, `the page scrolls sideways by ${overflow}px`);
    await screenshot(p, 'dashboard-phone-payments');
    if (paymentId) {
      await p.goto(`${base}payments/${paymentId}`);
      await whenUsable(p, `Payment ${paymentId}`);
      await assertNoSidewaysScroll(p, 'the payment detail at 390 px');
      await screenshot(p, 'dashboard-phone-payment-detail');
    }
    await phone.context.close();
  });

  test('the keyboard reaches the menu and the main content', async () => {
    await load(page, base, 'Overview', 'Overview');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate<string>('document.activeElement?.textContent'), 'Skip to content');
    await page.keyboard.press('Enter');
    assert.equal(await page.evaluate<string>('document.activeElement?.id'), 'main');
    // After an in-app navigation, focus moves to the new page's heading for screen readers.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Payments' }).focus();
    await page.keyboard.press('Enter');
    await whenUsable(page, 'Payments');
    assert.equal(await page.evaluate<string>('document.activeElement?.id'), 'page-title');
  });

  test('when the session ends, the next action leads to the login page', async () => {
    const cookie = (await tab.context.cookies()).find((c) => c.name === 'kassa_session');
    assert.ok(cookie);
    const logout = await call(server, 'POST', '/api/auth/logout/', { token: cookie.value });
    assert.equal(logout.status, 204);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Settings' }).click();
    await page.getByText('Your session has ended. Log in again to continue.').waitFor();
    assert.match(page.url(), /\/dashboard\/login\?next=settings$/);
    await page.getByLabel('Email').fill(merchant.email);
    await page.getByLabel('Password').fill(merchant.password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await whenUsable(page, 'Settings');
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('heading', { name: 'Log in to your dashboard' }).waitFor();
    const me = await page.evaluate(async () => (await fetch('/api/auth/me/')).status);
    assert.equal(me, 401);
    assert.deepEqual(tab.record.errors, []);
  });
});
