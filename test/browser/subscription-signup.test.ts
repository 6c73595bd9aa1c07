// A customer subscribes on the signup page (/subscribe/{plan id}) in a real Chromium, and the merchant
// runs the subscription from the dashboard: without a trial (the first period paid on the hosted
// checkout), with a trial and the 3-D Secure card (the card saved after the bank's challenge, nothing
// charged); the merchant finds the subscription, advances its sandbox test clock past the trial, sees
// the renewal payment, makes an update-card link, and cancels. Screenshots: test-artifacts/screenshots/
// subscribe-*.png; every page is checked with axe-core.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { buildDashboard } from '../../scripts/build-web.ts';
import { CARDS } from '../helpers/checkout.ts';
import {
  call,
  createTestMerchant,
  type Merchant,
  startTestServer,
  type TestServer,
} from '../helpers/server.ts';
import { assertAccessible, checkPage } from './helpers/checks.ts';
import { launchChromium, type PageRecord, screenshot, type TestBrowser } from './helpers/chromium.ts';

const EXPIRY = `12 / ${String((new Date().getFullYear() + 3) % 100).padStart(2, '0')}`;
/** 3-D Secure when the card is saved; later off-session charges go through. */
const THREE_DS_FIRST = '4000 0000 0000 3220';

async function ready(page: Page, title: string | RegExp): Promise<void> {
  await page.locator('#page-title').filter({ hasText: title }).waitFor({ state: 'visible' });
  await page.locator('main .loading').first().waitFor({ state: 'detached' });
}

function assertCleanConsole(record: PageRecord): void {
  assert.deepEqual(record.errors, []);
  assert.deepEqual(
    record.console.filter((line) => /Content Security Policy|Trusted Type|Refused to/i.test(line)),
    [],
  );
}

async function fillBilling(page: Page, email: string) {
  await page.getByLabel('First name').fill('Ada');
  await page.getByLabel('Last name').fill('Lovelace');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Country code').fill('gb');
}

async function fillCard(page: Page, number: string) {
  await page.getByLabel('Name on card').fill('Ada Lovelace');
  await page.getByLabel('Card number').fill(number);
  await page.getByLabel('Expiry date').fill(EXPIRY);
  await page.getByLabel('Security code').fill('123');
}

describe('subscription signup in Chromium', () => {
  let server: TestServer;
  let browser: TestBrowser;
  let merchant: Merchant;

  async function plan(body: Record<string, unknown>): Promise<{ id: string; signup_url: string }> {
    const response = await call<{ id: string; signup_url: string }>(
      server,
      'POST',
      '/api/subscriptions/plans/',
      {
        token: merchant.token,
        body,
      },
    );
    assert.equal(response.status, 201, response.text);
    return response.body;
  }

  before(async () => {
    const built = await buildDashboard({ ifStale: true });
    if (!built.built && !built.message.includes('up to date')) throw new Error(built.message);
    server = await startTestServer({ worker: false });
    merchant = await createTestMerchant(server, 'Coffee Club');
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  test('without a trial: the customer pays the first month and is subscribed; the merchant sees it', async () => {
    // Before anyone subscribes, production's empty list says where sandbox subscriptions are.
    const empty = await browser.newPage({ width: 1280, height: 900 });
    await empty.context.addCookies([{ name: 'kassa_session', value: merchant.token, url: server.url }]);
    await empty.page.goto(`${server.url}/dashboard/subscriptions`);
    await ready(empty.page, 'Subscriptions');
    await empty.page.getByText('Subscriptions to sandbox plans are listed in test mode.').waitFor();
    const monthly = await plan({ name: 'Beans every month', amount: '12.50', interval: 'month' });
    assert.equal(monthly.signup_url, `${server.url}/subscribe/${monthly.id}`);
    const { page, record } = await browser.newPage();
    await page.goto(monthly.signup_url);
    await page.getByRole('heading', { name: 'Coffee Club' }).waitFor();
    await page.getByRole('heading', { name: 'Beans every month' }).waitFor();
    assert.equal(await page.locator('#plan-price').textContent(), '$12.50');
    assert.equal(await page.locator('#plan-interval').textContent(), 'every month');
    await screenshot(page, 'subscribe-01-plan');
    await assertAccessible(page, 'subscribe-plan');
    await fillBilling(page, 'ada@example.com');
    await page.getByRole('button', { name: 'Continue to payment' }).click();
    await page.waitForURL(/\/checkout\/[A-Za-z0-9_-]+$/);
    await page.getByRole('button', { name: 'Subscribe and pay $12.50' }).waitFor();
    assert.match(
      (await page.locator('#subscription-terms').textContent()) ?? '',
      /Then \$12\.50 every month/,
    );
    await screenshot(page, 'subscribe-02-checkout');
    await assertAccessible(page, 'subscribe-checkout');
    await fillCard(page, CARDS.success);
    await page.getByRole('button', { name: 'Subscribe and pay $12.50' }).click();
    await page.getByRole('heading', { name: 'You are subscribed' }).waitFor();
    assert.match((await page.locator('#result-message').textContent()) ?? '', /subscription is active/);
    await screenshot(page, 'subscribe-03-subscribed');
    assertCleanConsole(record);

    const dashboard = await browser.newPage({ width: 1280, height: 900 });
    await dashboard.context.addCookies([{ name: 'kassa_session', value: merchant.token, url: server.url }]);
    await dashboard.page.goto(`${server.url}/dashboard/subscriptions`);
    await ready(dashboard.page, 'Subscriptions');
    const row = dashboard.page.getByRole('row', { name: /ada@example\.com/ });
    await row.waitFor();
    assert.match(await row.innerText(), /active/i);
    await row.getByRole('link').first().click();
    await ready(dashboard.page, /Subscription SU/);
    const periods = dashboard.page.getByRole('table', { name: 'Periods' });
    assert.match(await periods.innerText(), /12\.50.*paid/is);
    await checkPage(dashboard.page, 'subscribe-merchant-detail-1280');
  });

  test('with a trial and the 3-D Secure card: saved after the challenge; the merchant advances the clock, sees the renewal, cancels', async () => {
    const trial = await plan({
      name: 'Tasting box',
      amount: '9.00',
      interval: 'week',
      trial_days: 7,
      environment: 'sandbox',
    });
    const { page, record } = await browser.newPage();
    await page.goto(trial.signup_url);
    await page.getByText('Test mode').waitFor();
    assert.match((await page.locator('#plan-trial').textContent()) ?? '', /Free for 7 days/);
    await fillBilling(page, 'grace@example.com');
    await page.getByRole('button', { name: 'Continue to start your trial' }).click();
    await page.waitForURL(/\/checkout\/[A-Za-z0-9_-]+$/);
    await page.getByRole('button', { name: 'Start free trial' }).waitFor();
    assert.equal(await page.locator('#total').textContent(), '$0.00');
    assert.equal(await page.locator('#total-label').textContent(), 'Due today');
    await screenshot(page, 'subscribe-04-trial-checkout');
    await fillCard(page, THREE_DS_FIRST);
    await page.getByRole('button', { name: 'Start free trial' }).click();
    await page.getByRole('button', { name: 'Confirm the payment' }).click();
    await page.getByRole('heading', { name: 'You are subscribed' }).waitFor();
    assert.match((await page.locator('#result-message').textContent()) ?? '', /free trial has started/);
    await screenshot(page, 'subscribe-05-trial-started');
    assertCleanConsole(record);
    const subscription = await server.ctx.db
      .selectFrom('subscriptions')
      .select(['public_id', 'status'])
      .where('customer_email', '=', 'grace@example.com')
      .executeTakeFirstOrThrow();
    assert.equal(subscription.status, 'trialing');

    const dashboard = await browser.newPage({ width: 1280, height: 900 });
    await dashboard.context.addCookies([{ name: 'kassa_session', value: merchant.token, url: server.url }]);
    const merchantPage = dashboard.page;
    await merchantPage.goto(`${server.url}/dashboard/subscriptions/${subscription.public_id}`);
    await ready(merchantPage, `Subscription ${subscription.public_id}`);
    await merchantPage.getByText('No period billed yet.').waitFor();
    await merchantPage.getByLabel('Days').fill('8');
    await merchantPage.getByRole('button', { name: 'Advance clock' }).click();
    const periods = merchantPage.getByRole('table', { name: 'Periods' });
    await periods.waitFor();
    assert.match(await periods.innerText(), /9\.00.*paid/is);
    const payment = periods.getByRole('link', { name: /^TX/ });
    const transactionId = (await payment.textContent()) ?? '';
    await checkPage(merchantPage, 'subscribe-merchant-clock-1280');
    await merchantPage.getByRole('button', { name: 'Create update-card link' }).click();
    await merchantPage.getByText(/works once, until/).waitFor();
    await merchantPage.getByRole('button', { name: 'Cancel now' }).click();
    await merchantPage.getByRole('dialog').getByRole('button', { name: 'Cancel now' }).click();
    await merchantPage.getByText(/Canceled .*by the merchant/).waitFor();
    await payment.click();
    await merchantPage.waitForURL(new RegExp(`/dashboard/payments/${transactionId}$`));
    await merchantPage.getByText('9.00', { exact: false }).first().waitFor();
    await assertAccessible(merchantPage, 'subscribe-renewal-payment');
  });
});
