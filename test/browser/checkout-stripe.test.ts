// The hosted checkout page in Stripe mode, in Chromium: the page loads Stripe.js (a stand-in routed to the
// fake Stripe, under the page's real Stripe-mode CSP), mounts the Payment Element with the PaymentIntent's
// client secret, confirms it with the return to /checkout/{token}?return=1, and syncs the outcome; a
// decline is shown and recorded; a landing on ?return=1 asks for the status first. No card data is sent
// to Kassa.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createCheckout } from '../helpers/checkout.ts';
import type { FakeStripe } from '../helpers/fake-stripe/server.ts';
import { createTestKey, createTestMerchant, type TestServer } from '../helpers/server.ts';
import { hostedStep, type Json, startWithStripe } from '../helpers/stripe.ts';
import { assertCleanConsole } from './helpers/checkout-page.ts';
import { launchChromium, screenshot, type TestBrowser } from './helpers/chromium.ts';
import { routeStripe } from './helpers/fake-stripe-js.ts';

describe('the hosted checkout page with Stripe in Chromium', () => {
  let fake: FakeStripe;
  let server: TestServer;
  let close: () => Promise<void>;
  let browser: TestBrowser;
  let apiKey: string;

  before(async () => {
    ({ fake, server, close } = await startWithStripe({ worker: false }));
    const merchant = await createTestMerchant(server, 'Stripe Books');
    apiKey = await createTestKey(server, merchant);
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await close?.();
  });

  test('the Payment Element is mounted with the client secret; paying shows success; Kassa never sees a card', async () => {
    const checkout = await createCheckout(server, apiKey, { currency: 'EUR' });
    const { page, record } = await browser.newPage();
    await routeStripe(page, fake);
    const response = await page.goto(checkout.checkout_url);
    const csp = response?.headers()['content-security-policy'] ?? '';
    assert.match(csp, /script-src 'sha256-[^']+' https:\/\/js\.stripe\.com/);
    assert.match(csp, /frame-src https:\/\/js\.stripe\.com https:\/\/hooks\.stripe\.com/);
    await page.getByLabel('Test card').waitFor();
    assert.equal(await page.getByLabel('Card number').isVisible(), false, "Kassa's card fields are hidden");
    assert.equal(await page.locator('#simulated').isVisible(), false);
    await screenshot(page, 'checkout-stripe-01-element');
    await page.getByRole('button', { name: /^Pay / }).click();
    await page.getByRole('heading', { name: 'Payment successful' }).waitFor();
    const calls = await page.evaluate<Json[]>('window.fakeStripeCalls');
    const { provider, page: state } = await hostedStep(server, checkout.token);
    assert.equal(state.status, 'paid');
    assert.deepEqual(calls[0], { publishableKey: fake.publishableKey });
    assert.match((calls[1] as { clientSecret: string }).clientSecret, /^pi_\w+_secret_/);
    assert.equal(provider.client_secret, null, 'no secret is handed out once the payment is decided');
    assert.deepEqual(calls[2], {
      returnUrl: `${new URL(checkout.checkout_url).origin}/checkout/${checkout.token}?return=1`,
      redirect: 'if_required',
    });
    assert.ok(!record.requests.some((request) => /\/pay\/$/.test(request.url)), 'nothing posted to /pay/');
    assertCleanConsole(record);
  });

  test('a decline is shown on the form and recorded; another card pays', async () => {
    const checkout = await createCheckout(server, apiKey);
    const { page, record } = await browser.newPage();
    await routeStripe(page, fake);
    await page.goto(checkout.checkout_url);
    await page.getByLabel('Test card').selectOption('pm_card_chargeDeclined');
    await page.getByRole('button', { name: /^Pay / }).click();
    await page.getByRole('alert').filter({ hasText: 'Your card was declined.' }).waitFor();
    const declined = (await hostedStep(server, checkout.token)).page;
    assert.deepEqual(
      (declined.attempts as Json[]).map((attempt) => attempt.status),
      ['requires_payment_method'],
    );
    await page.getByLabel('Test card').selectOption('pm_card_visa');
    await page.getByRole('button', { name: /^Pay / }).click();
    await page.getByRole('heading', { name: 'Payment successful' }).waitFor();
    assertCleanConsole(record);
  });

  test('landing on ?return=1 (after a redirect) asks for the status and shows the outcome', async () => {
    const checkout = await createCheckout(server, apiKey);
    const { provider } = await hostedStep(server, checkout.token);
    await fake.confirmInBrowser(provider.client_secret as string, 'pm_card_visa');
    const { page, record } = await browser.newPage();
    await routeStripe(page, fake);
    await page.goto(`${checkout.checkout_url}?return=1`);
    await page.getByRole('heading', { name: 'Payment successful' }).waitFor();
    assert.ok(record.requests.some((request) => request.url.endsWith('/api/checkout/sync-status/')));
    assertCleanConsole(record);
  });
});
