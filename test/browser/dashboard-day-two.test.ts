// The dashboard's second day (#18), in a real Chromium at 1280 px and at 390 px: test mode, CSV
// exports, payouts to a bank account, the development mailbox, the rough edges a new merchant hit, and
// search everywhere. Every page is also checked at both widths for sideways scrolling and with axe-core
// (no serious or critical violation). Screenshots: test-artifacts/screenshots/day2-*.png; axe results:
// test-artifacts/axe/*.json.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { buildDashboard } from '../../scripts/build-web.ts';
import { billing, CARDS, card, createCheckout, pay } from '../helpers/checkout.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  type Merchant,
  startTestServer,
  type TestServer,
} from '../helpers/server.ts';
import { eventually } from '../helpers/wallet-fixtures.ts';
import { assertAccessible, assertFits, assertNoSidewaysScroll, checkPage } from './helpers/checks.ts';
import { launchChromium, screenshot, type TestBrowser, type TestPage } from './helpers/chromium.ts';

const WIDTHS = [
  ['desktop', 1280, 900],
  ['phone', 390, 844],
] as const;

/** Waits until the page's h1 reads `title` and nothing in <main> is loading. */
async function ready(page: Page, title: string | RegExp): Promise<void> {
  await page.locator('#page-title').filter({ hasText: title }).waitFor({ state: 'visible' });
  await page.locator('main .loading').first().waitFor({ state: 'detached' });
}

async function paid(server: TestServer, payment: string): Promise<string> {
  await eventually(async () => {
    const row = await server.ctx.db
      .selectFrom('payments')
      .select(['status', 'settled_at'])
      .where('public_id', '=', payment)
      .executeTakeFirst();
    return row?.status === 'paid' && row.settled_at ? true : undefined;
  });
  return payment;
}

describe('merchant dashboard, day two', () => {
  let server: TestServer;
  let merchant: Merchant;
  let chromium: TestBrowser;
  const tabs = new Map<string, TestPage>();
  let declinedThenPaid = '';
  let linkPayment = '';
  let sandboxPayment = '';
  let linkId = '';

  /** A page of the given width, logged in as the merchant (one per width, reused). */
  async function at(width: 'desktop' | 'phone'): Promise<Page> {
    let tab = tabs.get(width);
    if (!tab) {
      const [, w, h] = WIDTHS.find(([name]) => name === width) ?? WIDTHS[0];
      tab = await chromium.newPage({ width: w, height: h });
      await tab.context.addCookies([{ name: 'kassa_session', value: merchant.token, url: server.url }]);
      tabs.set(width, tab);
    }
    return tab.page;
  }

  async function open(page: Page, path: string, title: string | RegExp): Promise<void> {
    await page.goto(`${server.url}/dashboard/${path}`);
    await ready(page, title);
  }

  before(async () => {
    const built = await buildDashboard({ ifStale: true });
    if (!built.built && !built.message.includes('up to date')) throw new Error(built.message);
    // Development without SMTP: the dashboard has its Mail page.
    server = await startTestServer({ env: { KASSA_ENV: 'development', KASSA_SIM_REFUND_DELAY_MS: '300' } });
    merchant = await createTestMerchant(server, 'Sunny Shop');
    const key = await createTestKey(server, merchant);
    const sandboxKey = await createTestKey(server, merchant, { environment: 'sandbox' });
    const product = async (name: string, unit_price: string, currency: string) =>
      (
        await call<{ id: string }>(server, 'POST', '/api/products/', {
          token: merchant.token,
          body: { name, unit_price, currency },
        })
      ).body.id;
    const sunglasses = await product('Sunglasses', '25.00', 'USD');
    await product('Beach towel', '18.00', 'EUR');
    await product('Sun hat', '15.00', 'USD');

    // A payment whose first card was declined.
    const checkout = await createCheckout(server, key, billing({ billing_email: 'grace@hopper.test' }));
    await pay(server, checkout.token, CARDS.declined);
    const second = await pay(server, checkout.token, CARDS.success);
    declinedThenPaid = await paid(server, String(second.body.transaction_id));

    // A payment made through a payment link.
    const link = await call<{ id: string }>(server, 'POST', '/api/payment-links/', {
      token: merchant.token,
      body: { name: 'Summer sale', products: [{ product_id: sunglasses, quantity: 2 }] },
    });
    linkId = link.body.id;
    const started = await call<{ token: string }>(
      server,
      'POST',
      `/api/payment-links/public/${linkId}/start/`,
      {
        body: billing({ billing_email: 'alan@turing.test' }),
      },
    );
    const linkPaid = await call<{ transaction_id: string }>(
      server,
      'POST',
      `/api/checkout/${started.body.token}/pay/`,
      {
        body: card(CARDS.otherValid),
      },
    );
    linkPayment = await paid(server, linkPaid.body.transaction_id);

    // A sandbox payment, which only test mode shows.
    const sandboxCheckout = await createCheckout(
      server,
      sandboxKey,
      billing({ billing_email: 'tester@sandbox.test' }),
      '/sandbox/api',
    );
    const sandboxPaid = await pay(server, sandboxCheckout.token, CARDS.success);
    sandboxPayment = await paid(server, String(sandboxPaid.body.transaction_id));

    // Webhook deliveries for the delivery log, and a mail in the development mailbox.
    await call(server, 'PUT', '/api/organization/webhook/', {
      token: merchant.token,
      body: { endpoint_url: `${server.url}/api/v1/webhooks/${merchant.slug}/` },
    });
    await call(server, 'POST', '/api/organization/webhook/test/', { token: merchant.token });
    await call(server, 'POST', '/api/organization/webhook/test-transaction/', {
      token: merchant.token,
      body: { transaction_id: declinedThenPaid },
    });
    chromium = await launchChromium();
  });

  after(async () => {
    for (const tab of tabs.values()) assert.deepEqual(tab.record.errors, []);
    await chromium?.close();
    await server?.close();
  });

  test('1. test mode: the header switch moves every page to the sandbox, with a band; the choice is remembered', async () => {
    const page = await at('desktop');
    await open(page, '', 'Overview');
    const toggle = page.getByRole('switch', { name: 'Test mode' });
    assert.equal(await toggle.getAttribute('aria-checked'), 'false');
    const glance = page.getByRole('list', { name: 'Statistics' });
    const paymentsStat = glance.locator('li').filter({ has: page.getByText('Payments', { exact: true }) });
    assert.equal(await paymentsStat.locator('.stat-value').textContent(), '2');
    await toggle.click();
    await page.getByText('You are looking at sandbox data').waitFor();
    await paymentsStat.locator('.stat-value').filter({ hasText: /^1$/ }).waitFor();
    await checkPage(page, 'day2-test-mode-overview-1280');

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Payments' }).click();
    await ready(page, 'Payments');
    const table = page.getByRole('region', { name: 'Payments' });
    await table.getByRole('link', { name: sandboxPayment }).waitFor();
    assert.equal(await table.getByRole('link', { name: declinedThenPaid }).count(), 0);
    // Remembered across a reload.
    await page.reload();
    await ready(page, 'Payments');
    assert.equal(await page.getByRole('switch', { name: 'Test mode' }).getAttribute('aria-checked'), 'true');
    await table.getByRole('link', { name: sandboxPayment }).waitFor();

    const phone = await at('phone');
    await open(phone, 'wallet', 'Wallet');
    await phone.getByRole('switch', { name: 'Test mode' }).click();
    await phone.getByText('You are looking at sandbox data').waitFor();
    await phone.getByRole('region', { name: 'Wallet movements' }).getByText(sandboxPayment).waitFor();
    await checkPage(phone, 'day2-test-mode-wallet-390');
    await phone.getByRole('switch', { name: 'Test mode' }).click();
    await page.getByRole('switch', { name: 'Test mode' }).click();
    await page.getByText('You are looking at sandbox data').waitFor({ state: 'detached' });
  });

  test('1. the demo merchant (test mode by default) opens in test mode', async () => {
    const demo = await createTestMerchant(server, 'Demo Shop');
    await server.ctx.db
      .updateTable('organizations')
      .set({ test_mode_default: 1 })
      .where('id', '=', demo.organizationId)
      .execute();
    const tab = await chromium.newPage({ width: 390, height: 844 });
    await tab.context.addCookies([{ name: 'kassa_session', value: demo.token, url: server.url }]);
    await open(tab.page, '', 'Overview');
    assert.equal(
      await tab.page.getByRole('switch', { name: 'Test mode' }).getAttribute('aria-checked'),
      'true',
    );
    await tab.page.getByText('You are looking at sandbox data').waitFor();
    await checkPage(tab.page, 'day2-demo-opens-in-test-mode-390');
    assert.deepEqual(tab.record.errors, []);
    await tab.context.close();
  });

  test('2. exports: the payments CSV carries the current filters and the environment shown', async () => {
    for (const [width, name] of [
      ['desktop', 'day2-export-payments-1280'],
      ['phone', 'day2-export-payments-390'],
    ] as const) {
      const page = await at(width);
      await open(page, 'payments?status=paid&currency=USD', 'Payments');
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        page.getByRole('link', { name: /Export CSV/ }).click(),
      ]);
      assert.match(download.suggestedFilename(), /^kassa-payments-production-\d{4}-\d{2}-\d{2}\.csv$/);
      const csv = readFileSync(await download.path(), 'utf8');
      const [header, ...rows] = csv.trim().split('\r\n');
      assert.match(header, /^id,created_at,updated_at,environment,status,currency,amount,/);
      assert.deepEqual(rows.map((row) => row.split(',')[0]).sort(), [declinedThenPaid, linkPayment].sort());
      await checkPage(page, name);
    }
  });

  test('3. payouts to a bank account: a mistyped IBAN is refused readably; the saved one is masked; payouts show it', async () => {
    const page = await at('desktop');
    await open(page, 'payouts', 'Payouts');
    await page.getByText('Add a bank account above before requesting a payout.').waitFor();
    assert.ok(await page.getByRole('button', { name: 'Request payout' }).isDisabled());
    const form = page.getByRole('form', { name: 'Bank account' });
    await form.getByLabel('Account holder').fill('Sunny Shop GmbH');
    await form.getByRole('textbox', { name: 'IBAN' }).fill('DE89 3704 0044 0532 0130 01');
    await form.getByRole('button', { name: 'Save bank account' }).click();
    await form
      .getByRole('alert')
      .filter({ hasText: 'IBAN: the check digits do not match the number; look for a typo.' })
      .waitFor();
    await screenshot(page, 'day2-payout-iban-refused-1280');
    await form.getByRole('textbox', { name: 'IBAN' }).fill('DE89 3704 0044 0532 0130 00');
    await form.getByRole('button', { name: 'Save bank account' }).click();
    await page.getByText('The bank account was saved.').waitFor();
    const card = page.getByRole('region', { name: 'Bank account' });
    await card.getByText('DE IBAN •••• 3000').waitFor();
    assert.equal(await page.getByText('0532 0130').count(), 0, 'the full IBAN is not shown again');
    // The one sentence that explains available vs payable.
    await page
      .getByText(
        /Available \(.*\) is your balance plus the rolling reserve minus held amounts; you can pay out/,
      )
      .first()
      .waitFor();
    await page.getByLabel('Amount (USD)').fill('5.00');
    await page.getByRole('button', { name: 'Request payout' }).click();
    await page.getByText(/Payout PO\w+ of .*5\.00 is pending to DE IBAN •••• 3000/).waitFor();
    const payouts = page.getByRole('region', { name: 'Payouts' });
    await payouts
      .getByRole('row')
      .filter({ hasText: 'DE IBAN •••• 3000' })
      .getByText('Sunny Shop GmbH')
      .waitFor();
    await checkPage(page, 'day2-payouts-bank-1280');

    const phone = await at('phone');
    await open(phone, 'payouts', 'Payouts');
    await phone.getByRole('button', { name: 'Change bank account' }).click();
    const phoneForm = phone.getByRole('form', { name: 'Bank account' });
    await phoneForm.getByLabel('US bank account').check();
    await phoneForm.getByLabel('Account holder').fill('Sunny Shop LLC');
    await phoneForm.getByLabel('Routing number').fill('110000000');
    await phoneForm.getByLabel('Account number').fill('000123456789');
    await checkPage(phone, 'day2-payouts-us-account-form-390');
    await phoneForm.getByRole('button', { name: 'Save bank account' }).click();
    await phone
      .getByRole('region', { name: 'Bank account' })
      .getByText('Routing 110000000 · Account •••• 6789')
      .waitFor();
    // The earlier payout keeps the account it was requested for.
    await phone.getByRole('region', { name: 'Payouts' }).getByText('DE IBAN •••• 3000').waitFor();
    await checkPage(phone, 'day2-payouts-bank-390');
  });

  test('4. development mail: the refund code says where it went, and the Mail page shows it', async () => {
    const page = await at('desktop');
    await open(page, `payments/${declinedThenPaid}`, `Payment ${declinedThenPaid}`);
    await page.getByRole('button', { name: 'Refund', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: `Refund ${declinedThenPaid}` });
    await dialog.getByRole('button', { name: 'Email me a code' }).click();
    await dialog.getByText('it is in the development mailbox: open Mail in the dashboard').waitFor();
    await dialog.getByText('Reason (for your records; the customer does not see it)').waitFor();
    await dialog.getByLabel('Verification code').fill('000000');
    await dialog.getByLabel(/^Reason/).fill('Test');
    await dialog.getByRole('button', { name: 'Refund payment' }).click();
    // The field is named the way the form names it, not verification_code.
    await dialog
      .getByRole('alert')
      .filter({ hasText: /^Verification code: / })
      .waitFor();
    await assertAccessible(page, 'day2-refund-dialog-1280');
    await screenshot(page, 'day2-refund-dialog-1280');
    await dialog.getByRole('button', { name: 'Close' }).click();

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Mail' }).click();
    await ready(page, 'Mail');
    const messages = page.getByRole('list', { name: 'Messages, newest first' });
    await messages.getByRole('link', { name: 'Your Kassa refund verification code' }).first().click();
    await page
      .getByRole('article')
      .getByText(/Your refund verification code for Sunny Shop is \d{6}\./)
      .waitFor();
    await checkPage(page, 'day2-mail-1280');
    const phone = await at('phone');
    await open(phone, 'mail', 'Mail');
    await phone
      .getByRole('list', { name: 'Messages, newest first' })
      .getByText(merchant.email)
      .first()
      .waitFor();
    await checkPage(phone, 'day2-mail-390');
  });

  test('5. rough edges: dialogs and tables fit, attempts show the card and "Declined", links have names', async () => {
    const page = await at('desktop');
    // The API-key and delivery tables fit at 1280 px; the rotate dialog shows its whole warning.
    await open(page, 'developers', 'Developers');
    await assertFits(page, 'section.table-scroll', 'the API keys table');
    await page
      .getByRole('region', { name: 'API keys' })
      .getByRole('button', { name: 'Rotate' })
      .first()
      .click();
    const rotate = page.getByRole('dialog', { name: /Rotate the (production|sandbox) key\?/ });
    await rotate.getByText('which stops working at once').waitFor();
    await assertFits(page, 'dialog[open]', 'the rotate-key dialog');
    await screenshot(page, 'day2-rotate-dialog-1280');
    await rotate.getByRole('button', { name: 'Cancel' }).click();
    await open(page, 'developers/deliveries', 'Developers');
    await page
      .getByRole('region', { name: 'Webhook deliveries' })
      .getByText('webhook.test')
      .first()
      .waitFor();
    await assertFits(page, 'section.table-scroll', 'the deliveries table');
    await checkPage(page, 'day2-deliveries-1280');

    // The payment detail: the card of each attempt, a decline called a decline, the link by name.
    for (const [width, name] of [
      ['desktop', 'day2-payment-detail-1280'],
      ['phone', 'day2-payment-detail-390'],
    ] as const) {
      const tab = await at(width);
      await open(tab, `payments/${declinedThenPaid}`, `Payment ${declinedThenPaid}`);
      const attempts = tab.getByRole('list', { name: 'Card attempts, newest first' }).getByRole('listitem');
      await attempts.first().getByText('Visa •••• 4242').waitFor();
      await attempts.nth(1).getByText('Declined', { exact: true }).waitFor();
      await attempts.nth(1).getByText('Visa •••• 0002').waitFor();
      assert.equal(await tab.getByText('Requires payment method').count(), 0);
      await checkPage(tab, name);
    }
    await open(page, `payments/${linkPayment}`, `Payment ${linkPayment}`);
    await page.getByRole('link', { name: 'Summer sale' }).waitFor();
    await page.getByText('Mastercard •••• 4444').waitFor();
    await screenshot(page, 'day2-payment-from-link-1280');

    // "Team members", not "Users"; times carry their zone.
    await open(page, '', 'Overview');
    await page.getByRole('list', { name: 'Statistics' }).getByText('Team members').waitFor();
    assert.equal(await page.getByRole('list', { name: 'Statistics' }).getByText('Users').count(), 0);
    await page.getByRole('region', { name: 'Recent wallet activity' }).getByText(/ UTC$/).first().waitFor();

    // A plain 404 says what was not found, and nothing about the server lacking a feature.
    await open(page, 'payments/TXnotarealpayment0', 'Payment TXnotarealpayment0');
    await page.getByRole('alert').getByText('Payment not found.').waitFor();
    assert.equal(await page.getByText('may not be available on this server').count(), 0);
    await checkPage(page, 'day2-not-found-1280');
  });

  test('5. the product picker offers only the products in the link currency', async () => {
    const page = await at('desktop');
    await open(page, 'links', 'Payment links');
    await page.getByRole('button', { name: 'New payment link' }).click();
    const form = page.getByRole('form', { name: 'New payment link' });
    const picker = form.getByLabel('Product 1');
    const offered = async () =>
      (await picker.locator('option').allTextContents()).map((text) => text.split(' — ')[0]);
    assert.deepEqual((await offered()).sort(), ['Sun hat', 'Sunglasses']);
    await form.getByLabel('Currency').selectOption('EUR');
    assert.deepEqual(await offered(), ['Beach towel']);
    await checkPage(page, 'day2-link-picker-eur-1280');
    const phone = await at('phone');
    await open(phone, `links/${linkId}`, 'Summer sale');
    await checkPage(phone, 'day2-link-detail-390');
  });

  test('5. time zone: picked in settings, every time is then shown in it with its name', async () => {
    const page = await at('desktop');
    await open(page, 'settings', 'Settings');
    await page.getByLabel('Time zone').selectOption('Asia/Tokyo');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('Your changes were saved.').waitFor();
    await page.getByText('GMT+9').first().waitFor();
    await checkPage(page, 'day2-settings-time-zone-1280');
    await open(page, 'payments', 'Payments');
    await page
      .getByRole('region', { name: 'Payments' })
      .getByText(/GMT\+9$/)
      .first()
      .waitFor();
    // Back to UTC for the other tests' expectations.
    await open(page, 'settings', 'Settings');
    await page.getByLabel('Time zone').selectOption('UTC');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('Your changes were saved.').waitFor();
    const phone = await at('phone');
    await open(phone, 'settings', 'Settings');
    await checkPage(phone, 'day2-settings-390');
  });

  test('6. search everywhere: / focuses the box; email, card last 4 and ids find payments and refunds', async () => {
    const page = await at('desktop');
    await open(page, 'refunds', 'Refunds');
    await page.keyboard.press('/');
    const box = page.getByRole('searchbox', { name: 'Search payments and refunds' });
    assert.equal(await page.evaluate('document.activeElement?.id'), 'search-everywhere');
    await box.fill('grace@hopper');
    await box.press('Enter');
    await ready(page, 'Search');
    const payments = page.getByRole('region', { name: 'Payments found' });
    await payments.getByRole('link', { name: declinedThenPaid }).waitFor();
    await checkPage(page, 'day2-search-email-1280');
    await page.keyboard.press('Control+k');
    await box.fill('4444');
    await box.press('Enter');
    await payments.getByRole('link', { name: linkPayment }).waitFor();
    await payments.getByRole('link', { name: linkPayment }).click();
    await ready(page, `Payment ${linkPayment}`);

    const phone = await at('phone');
    await open(phone, 'payments', 'Payments');
    const phoneBox = phone.getByRole('searchbox', { name: 'Search payments and refunds' });
    await phoneBox.fill(declinedThenPaid.slice(0, 10));
    await phoneBox.press('Enter');
    await ready(phone, 'Search');
    await phone
      .getByRole('region', { name: 'Payments found' })
      .getByRole('link', { name: declinedThenPaid })
      .waitFor();
    await checkPage(phone, 'day2-search-390');
  });

  test('every page at 1280 px and 390 px: no sideways scroll, no serious axe violation', async () => {
    const pages: [string, string | RegExp][] = [
      ['', 'Overview'],
      ['payments', 'Payments'],
      [`payments/${declinedThenPaid}`, `Payment ${declinedThenPaid}`],
      ['refunds', 'Refunds'],
      ['wallet', 'Wallet'],
      ['payouts', 'Payouts'],
      ['links', 'Payment links'],
      [`links/${linkId}`, 'Summer sale'],
      ['products', 'Products'],
      ['developers', 'Developers'],
      ['developers/webhook', 'Developers'],
      ['developers/deliveries', 'Developers'],
      ['developers/receiver', 'Developers'],
      ['settings', 'Settings'],
      ['search?q=sunny', 'Search'],
      ['mail', 'Mail'],
    ];
    for (const [width, ,] of WIDTHS) {
      const page = await at(width);
      for (const [path, title] of pages) {
        await open(page, path, title);
        const name =
          `day2-page-${path.replace(/[/?=]+/g, '-') || 'overview'}-${width === 'desktop' ? 1280 : 390}`
            .replace(/TX\w+/, 'payment')
            .replace(/-[0-9a-f]{8}-[0-9a-f-]{27}/, '-detail');
        await assertNoSidewaysScroll(page, name);
        await assertAccessible(page, name);
      }
    }
    // The login page too.
    const anonymous = await chromium.newPage({ width: 390, height: 844 });
    await anonymous.page.goto(`${server.url}/dashboard/login`);
    await anonymous.page.getByRole('heading', { name: 'Log in to your dashboard' }).waitFor();
    await checkPage(anonymous.page, 'day2-page-login-390');
    await anonymous.context.close();
  });
});
