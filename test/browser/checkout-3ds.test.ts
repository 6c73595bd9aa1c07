// The simulator's 3-D Secure step on the hosted checkout, in Chromium: a 3-D Secure card leads to the
// bank's confirmation screen; approving it pays, failing it brings the form back with the decline so
// another card can pay. Also the "Simulated payment" badge of production on the simulator.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { GENERIC_DECLINE } from '../../src/modules/checkout/card-testing.ts';
import { CARDS, createCheckout } from '../helpers/checkout.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  startTestServer,
  type TestServer,
} from '../helpers/server.ts';
import { assertCleanConsole, fillCard } from './helpers/checkout-page.ts';
import { launchChromium, screenshot, type TestBrowser } from './helpers/chromium.ts';

const THREE_DS = '4000 0027 6000 3184';

describe('3-D Secure on the hosted checkout page (simulator) in Chromium', () => {
  let server: TestServer;
  let browser: TestBrowser;
  let apiKey: string;

  before(async () => {
    server = await startTestServer();
    const merchant = await createTestMerchant(server, 'Secure Books');
    apiKey = await createTestKey(server, merchant);
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  test('approving the challenge pays: the success screen, the payment paid', async () => {
    const checkout = await createCheckout(server, apiKey, { currency: 'EUR' });
    const { page, record } = await browser.newPage();
    await page.goto(checkout.checkout_url);
    // Production on the simulator (the test service) says so on the page.
    await page.getByText('Simulated payment').waitFor();
    await fillCard(page, THREE_DS);
    await page.getByRole('button', { name: /^Pay / }).click();
    await page.getByRole('heading', { name: 'Confirm this payment with your bank' }).waitFor();
    await screenshot(page, 'checkout-3ds-01-challenge');
    await page.getByRole('button', { name: 'Confirm the payment' }).click();
    await page.getByRole('heading', { name: 'Payment successful' }).waitFor();
    await screenshot(page, 'checkout-3ds-02-approved');
    const state = await call<{ status: string; attempts: { status: string }[] }>(
      server,
      'GET',
      `/api/checkout/${checkout.token}/`,
    );
    assert.equal(state.body.status, 'paid');
    assert.deepEqual(
      state.body.attempts.map((attempt) => attempt.status),
      ['succeeded'],
    );
    assertCleanConsole(record);
  });

  test('failing the challenge shows the decline on the form; another card then pays', async () => {
    const checkout = await createCheckout(server, apiKey);
    const { page, record } = await browser.newPage();
    await page.goto(checkout.checkout_url);
    await fillCard(page, THREE_DS);
    await page.getByRole('button', { name: /^Pay / }).click();
    await page.getByRole('button', { name: 'Fail the authentication' }).click();
    await page.getByRole('alert').filter({ hasText: 'The 3-D Secure authentication failed.' }).waitFor();
    await screenshot(page, 'checkout-3ds-03-failed');
    await fillCard(page, CARDS.success);
    await page.getByRole('button', { name: /^Pay / }).click();
    await page.getByRole('heading', { name: 'Payment successful' }).waitFor();
    const state = await call<{ status: string; attempts: { status: string; errorMessage: string | null }[] }>(
      server,
      'GET',
      `/api/checkout/${checkout.token}/`,
    );
    assert.equal(state.body.status, 'paid');
    assert.deepEqual(
      state.body.attempts.map((attempt) => [attempt.status, attempt.errorMessage]),
      [
        ['succeeded', null],
        // The page said why (it ran the challenge); the checkout's API tells any decline the same way.
        ['requires_payment_method', GENERIC_DECLINE],
      ],
    );
    assertCleanConsole(record);
  });
});
