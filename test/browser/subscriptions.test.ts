// The dashboard's subscription pages (#15) in a real Chromium, at 1280 px and 390 px: a merchant creates
// a plan, copies its signup link and opens its QR code, stops its signups; then finds a subscription
// (made in the database: the customer's signup is not built yet), reads its periods and cancels it.
// Each page is checked for sideways scrolling and with axe-core (no serious or critical violation).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { buildDashboard } from '../../scripts/build-web.ts';
import { createTestMerchant, type Merchant, startTestServer, type TestServer } from '../helpers/server.ts';
import { insertCycle, insertSubscription } from '../helpers/subscriptions.ts';
import { assertAccessible, assertNoSidewaysScroll, checkPage } from './helpers/checks.ts';
import { launchChromium, type TestBrowser, type TestPage } from './helpers/chromium.ts';

const DAY = 86_400_000;

async function ready(page: Page, title: string | RegExp): Promise<void> {
  await page.locator('#page-title').filter({ hasText: title }).waitFor({ state: 'visible' });
  await page.locator('main .loading').first().waitFor({ state: 'detached' });
}

describe('dashboard: plans and subscriptions', () => {
  let server: TestServer;
  let merchant: Merchant;
  let chromium: TestBrowser;
  let tab: TestPage;

  before(async () => {
    const built = await buildDashboard({ ifStale: true });
    if (!built.built && !built.message.includes('up to date')) throw new Error(built.message);
    server = await startTestServer({ worker: false });
    merchant = await createTestMerchant(server, 'Coffee Club');
    chromium = await launchChromium();
    tab = await chromium.newPage({ width: 1280, height: 900 });
    await tab.context.addCookies([{ name: 'kassa_session', value: merchant.token, url: server.url }]);
  });
  after(async () => {
    await chromium?.close();
    await server?.close();
  });

  test('a plan is created, its signup link copied and shown as a QR code, and its signups stopped', async () => {
    const page = tab.page;
    await page.goto(`${server.url}/dashboard/plans`);
    await ready(page, 'Plans');
    await page.getByText('No plans yet').waitFor();
    await page.getByLabel('Name').fill('Beans every month');
    await page.getByLabel('Price per period').fill('12.50');
    await page.getByLabel('Trial days').fill('7');
    await page.getByRole('button', { name: 'Create plan' }).click();
    await page.getByText('Plan Beans every month was created').waitFor();
    const row = page.getByRole('row', { name: /Beans every month/ });
    await row.waitFor();
    assert.match(await row.innerText(), /12\.50.*every month/s);
    assert.match(await row.innerText(), /7-day trial/);
    const plan = await server.ctx.db
      .selectFrom('subscription_plans')
      .select(['public_id', 'is_active'])
      .where('organization_id', '=', merchant.organizationId)
      .executeTakeFirstOrThrow();
    await row.getByRole('button', { name: /QR code/ }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('img', { name: /QR code of the signup link/ }).waitFor();
    assert.ok((await dialog.innerText()).includes(`${server.url}/subscribe/${plan.public_id}`));
    await assertAccessible(page, 'subscriptions-plans-qr-1280');
    await page.keyboard.press('Escape');
    await row.getByRole('button', { name: /Deactivate/ }).click();
    await row.getByText('inactive', { exact: false }).waitFor();
    const after = await server.ctx.db
      .selectFrom('subscription_plans')
      .select('is_active')
      .where('public_id', '=', plan.public_id)
      .executeTakeFirstOrThrow();
    assert.equal(after.is_active, 0);
    await checkPage(page, 'subscriptions-plans-1280');
  });

  test('a subscription is found by its customer, its periods read, and canceled now', async () => {
    const page = tab.page;
    const plan = await server.ctx.db
      .selectFrom('subscription_plans')
      .select('public_id')
      .where('organization_id', '=', merchant.organizationId)
      .executeTakeFirstOrThrow();
    const anchor = new Date(Date.now() - 10 * DAY);
    const subscription = await insertSubscription(server, {
      organizationId: merchant.organizationId,
      planPublicId: plan.public_id,
      status: 'active',
      email: 'ada@lovelace.test',
      name: 'Ada Lovelace',
      anchorAt: anchor.toISOString(),
    });
    await insertSubscription(server, {
      organizationId: merchant.organizationId,
      planPublicId: plan.public_id,
      status: 'trialing',
      email: 'grace@hopper.test',
      name: 'Grace Hopper',
    });
    await insertCycle(server, subscription, {
      organizationId: merchant.organizationId,
      periodIndex: 0,
      start: anchor.toISOString(),
      end: new Date(anchor.getTime() + 31 * DAY).toISOString(),
      amount: 1250,
      status: 'paid',
    });

    await page.goto(`${server.url}/dashboard/subscriptions`);
    await ready(page, 'Subscriptions');
    await page.getByRole('row', { name: /Grace Hopper/ }).waitFor();
    await page.getByRole('main').getByLabel('Search').fill('lovelace');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByRole('row', { name: /Grace Hopper/ }).waitFor({ state: 'detached' });
    await checkPage(page, 'subscriptions-list-1280');
    await page.getByRole('link', { name: subscription.publicId }).click();
    await ready(page, `Subscription ${subscription.publicId}`);
    const periods = page.getByRole('table', { name: 'Periods' });
    assert.match(await periods.innerText(), /12\.50/);
    await checkPage(page, 'subscriptions-detail-1280');
    await page.getByRole('button', { name: 'Cancel now' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel now' }).click();
    await page.getByText(/Canceled .*by the merchant/).waitFor();
    const row = await server.ctx.db
      .selectFrom('subscriptions')
      .select(['status', 'cancel_reason'])
      .where('public_id', '=', subscription.publicId)
      .executeTakeFirstOrThrow();
    assert.deepEqual({ ...row }, { status: 'canceled', cancel_reason: 'merchant' });
    await assertNoSidewaysScroll(page, 'subscriptions-detail-canceled-1280');
  });

  test('the pages fit a 390 px phone and pass axe', async () => {
    const phone = await chromium.newPage({ width: 390, height: 844 });
    await phone.context.addCookies([{ name: 'kassa_session', value: merchant.token, url: server.url }]);
    for (const [path, title] of [
      ['plans', 'Plans'],
      ['subscriptions', 'Subscriptions'],
    ] as const) {
      await phone.page.goto(`${server.url}/dashboard/${path}`);
      await ready(phone.page, title);
      await checkPage(phone.page, `subscriptions-${path}-390`);
    }
    await phone.context.close();
  });
});
