// The hosted checkout page in Chromium while the payment provider does not answer for a moment: each of its
// four calls that wait on the provider (the first load, pay, cancel, and the status polling after pay) gets
// Kassa's 503 with Retry-After, and so does the simulator's 3-D Secure step. The customer sees that the
// provider is not answering, not the generic "Something went wrong", keeps what they typed, and the page
// asks again by itself after Retry-After; once the provider answers again the checkout completes without
// the customer doing anything. When it stays silent past a few tries the page offers a "Try again" button
// instead of asking for ever. A card attempt whose answer is lost (its outcome unknown) is confirmed by the
// same status calls, worded and paced the same, and ends, when the provider stays silent, on a screen that
// says the outcome is not known and not to pay again (one that never reached the provider ends, after 8
// answered asks, on the form with a warning, and a second attempt is refused). A new Stripe checkout whose
// PaymentIntent Stripe does not open gets no 503 (the read answers without a client secret, with
// Retry-After): the page reads it again when the server says, then offers the same.
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { billing, CARDS, createCheckout } from '../helpers/checkout.ts';
import type { FakeStripe, FaultRule } from '../helpers/fake-stripe/server.ts';
import { useProvider as swapProvider, wrapProvider } from '../helpers/providers.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  type Merchant,
  type TestServer,
} from '../helpers/server.ts';
import { hostedStep, type Json, startWithStripe } from '../helpers/stripe.ts';
import { assertCleanConsole, fillCard } from './helpers/checkout-page.ts';
import { assertAccessible } from './helpers/checks.ts';
import { launchChromium, type PageRecord, screenshot, type TestBrowser } from './helpers/chromium.ts';
import { routeStripe } from './helpers/fake-stripe-js.ts';

const intentPath = /^\/v1\/payment_intents\/pi_\w+$/;
const cancelPath = /^\/v1\/payment_intents\/pi_\w+\/cancel$/;
const createIntentPath = /^\/v1\/payment_intents$/;
const checkoutReads = /^\/api\/checkout\/[^/]+\/$/;
const challengePath = /^\/api\/provider\/simulator\/challenges\/[^/]+\/$/;
const THREE_DS = '4000 0027 6000 3184';
/** Long enough for the page's retry after Retry-After (5 s) and the call that follows it. */
const RECOVERY_MS = 25_000;
const NOT_ANSWERING = /The payment provider is not answering/;

/** The provider's message is on the page, and the generic error screen is not. */
async function assertProviderMessage(page: Page): Promise<void> {
  await page.getByText(NOT_ANSWERING).filter({ visible: true }).first().waitFor();
  assert.equal(await page.getByRole('heading', { name: 'Something went wrong' }).isVisible(), false);
  assert.doesNotMatch((await page.locator('main').textContent()) ?? '', /stripe|injected|did not answer/i);
}

const requestsTo = (record: PageRecord, path: RegExp) =>
  record.requests.filter((request) => path.test(new URL(request.url).pathname));

describe('the hosted checkout page while the payment provider does not answer, in Chromium', () => {
  let fake: FakeStripe;
  let server: TestServer;
  let close: () => Promise<void>;
  let browser: TestBrowser;
  let owner: Merchant;
  let apiKey: string;
  let sandboxKey: string;

  before(async () => {
    ({ fake, server, close } = await startWithStripe({ worker: false }));
    owner = await createTestMerchant(server, 'Quiet Provider Books');
    apiKey = await createTestKey(server, owner);
    sandboxKey = await createTestKey(server, owner, { environment: 'sandbox' });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await close?.();
  });

  // A test that fails midway must not leave Stripe silent for the next one.
  const outages: { stop: () => void }[] = [];
  afterEach(() => {
    for (const outage of outages.splice(0)) outage.stop();
  });
  /** Stripe refuses this call (a 500) until `stop`. */
  function stripeDown(method: string, path: RegExp) {
    const outage = fake.fail({ method, path, mode: '500', times: 1000 } satisfies FaultRule);
    outages.push(outage);
    return outage;
  }

  /**
   * A checkout whose PaymentIntent is open (the page's load then reads its client secret from Stripe) and a
   * page with the stand-in Stripe.js; `loaded`: the page is opened and shows the Payment Element.
   */
  async function stripePage(loaded: boolean) {
    const checkout = await createCheckout(server, apiKey);
    await hostedStep(server, checkout.token);
    const { page, record } = await browser.newPage();
    await routeStripe(page, fake);
    if (loaded) {
      await page.goto(checkout.checkout_url);
      await page.getByLabel('Test card').waitFor();
    }
    return { checkout, page, record };
  }

  test('the first load: the provider message, then the Payment Element by itself once Stripe answers', async () => {
    const { checkout, page, record } = await stripePage(false);
    const outage = stripeDown('GET', intentPath);
    await page.goto(checkout.checkout_url);
    await assertProviderMessage(page);
    await screenshot(page, 'checkout-provider-down-01-load');
    await assertAccessible(page, 'checkout-provider-down-load');
    outage.stop();
    await page.getByLabel('Test card').waitFor({ timeout: RECOVERY_MS });
    await page.getByRole('button', { name: /^Pay / }).click();
    await page.getByRole('heading', { name: 'Payment successful' }).waitFor();
    assertCleanConsole(record);
  });

  test('the first load when Stripe stays silent: a few tries, then a Try again button that loads the page', async () => {
    const { checkout, page, record } = await stripePage(false);
    const outage = stripeDown('GET', intentPath);
    await page.goto(checkout.checkout_url);
    await assertProviderMessage(page);
    const retry = page.getByRole('button', { name: 'Try again' });
    await retry.waitFor({ timeout: 40_000 });
    const tries = requestsTo(record, /^\/api\/checkout\/[^/]+\/$/).length;
    assert.ok(tries > 1 && tries <= 4, `the page asked ${tries} times, bounded`);
    await page.waitForTimeout(6000);
    assert.equal(requestsTo(record, /^\/api\/checkout\/[^/]+\/$/).length, tries, 'no more tries by itself');
    await screenshot(page, 'checkout-provider-down-02-try-again');
    await assertAccessible(page, 'checkout-provider-down-try-again');
    outage.stop();
    await retry.click();
    await page.getByLabel('Test card').waitFor();
    assertCleanConsole(record);
  });

  test('cancel: the provider message above the form, then canceled by itself once Stripe answers', async () => {
    const { checkout, page, record } = await stripePage(true);
    const outage = stripeDown('POST', cancelPath);
    await page.getByRole('button', { name: 'Cancel and return to the merchant' }).click();
    await page.getByRole('alert').filter({ hasText: NOT_ANSWERING }).waitFor();
    await assertProviderMessage(page);
    assert.equal(await page.getByLabel('Test card').isVisible(), true, 'the form stays');
    assert.equal(
      await page.locator('#pay-button').isDisabled(),
      true,
      'no second action while the cancel is retried',
    );
    await screenshot(page, 'checkout-provider-down-03-cancel');
    outage.stop();
    await page.getByRole('heading', { name: 'Payment canceled' }).waitFor({ timeout: RECOVERY_MS });
    const state = await call<Json>(server, 'GET', `/api/checkout/${checkout.token}/`);
    assert.equal(state.body.status, 'canceled');
    assertCleanConsole(record);
  });

  test('the status after pay: the provider message while confirming, then the success by itself', async () => {
    const { checkout, page, record } = await stripePage(true);
    const outage = stripeDown('GET', intentPath);
    await page.getByRole('button', { name: /^Pay / }).click();
    await assertProviderMessage(page);
    assert.equal(await page.getByRole('heading', { name: 'Confirming your payment…' }).isVisible(), true);
    await screenshot(page, 'checkout-provider-down-04-status');
    outage.stop();
    await page.getByRole('heading', { name: 'Payment successful' }).waitFor({ timeout: RECOVERY_MS });
    assert.equal((await hostedStep(server, checkout.token)).page.status, 'paid');
    assertCleanConsole(record);
  });

  /** The simulator (the sandbox) does not answer `method` until `up`: the call that needs it gets a 503. */
  function simulatorDown(method: 'createCustomer' | 'getPayment' | 'findPayment') {
    const simulator = server.ctx.providers.simulator;
    const real = simulator[method].bind(simulator) as (...args: unknown[]) => Promise<unknown>;
    let down = true;
    const undo = swapProvider(
      server.ctx,
      wrapProvider(simulator, {
        [method]: async (...args: unknown[]) => {
          if (down) throw new Error('no answer (the test stopped the simulator)');
          return real(...args);
        },
      }),
    );
    outages.push({ stop: undo });
    return {
      up: () => {
        down = false;
      },
    };
  }

  /** The checkout is paid, by one attempt. */
  async function assertPaidOnce(token: string) {
    const state = await call<{ status: string; attempts: { status: string }[] }>(
      server,
      'GET',
      `/api/checkout/${token}/`,
    );
    assert.equal(state.body.status, 'paid');
    assert.deepEqual(
      state.body.attempts.map((attempt) => attempt.status),
      ['succeeded'],
      'charged once',
    );
  }

  test('pay (a signup whose customer the simulator does not make): the form stays filled, paid once by itself', async () => {
    const plan = await call<{ id: string }>(server, 'POST', '/api/subscriptions/plans/', {
      token: owner.token,
      body: { name: 'Sandbox monthly', amount: '9.99', interval: 'month', environment: 'sandbox' },
    });
    assert.equal(plan.status, 201, plan.text);
    const started = await call<{ token: string; checkout_url: string }>(
      server,
      'POST',
      `/api/subscriptions/public/${plan.body.id}/start/`,
      { body: billing() },
    );
    assert.equal(started.status, 201, started.text);
    const outage = simulatorDown('createCustomer');
    const { page, record } = await browser.newPage();
    await page.goto(started.body.checkout_url);
    await fillCard(page, CARDS.success);
    await page.getByRole('button', { name: /^Subscribe and pay / }).click();
    await page.getByRole('alert').filter({ hasText: NOT_ANSWERING }).waitFor();
    await assertProviderMessage(page);
    assert.match((await page.getByRole('alert').first().textContent()) ?? '', /nothing was charged/i);
    assert.equal(await page.getByLabel('Card number').inputValue(), '4242 4242 4242 4242');
    assert.equal(await page.getByLabel('Security code').inputValue(), '123');
    assert.equal(await page.locator('#pay-button').isDisabled(), true, 'no second submission meanwhile');
    await screenshot(page, 'checkout-provider-down-05-pay');
    outage.up();
    await page.getByRole('heading', { name: 'You are subscribed' }).waitFor({ timeout: RECOVERY_MS });
    const pays = requestsTo(record, /^\/api\/checkout\/[^/]+\/pay\/$/);
    assert.equal(pays.length, 2, 'the 503 and the retry that paid');
    await assertPaidOnce(started.body.token);
    assertCleanConsole(record);
  });

  /** A sandbox checkout (the simulator) on its 3-D Secure step. */
  async function challengePage() {
    const checkout = await createCheckout(server, sandboxKey, {}, '/sandbox/api');
    const { page, record } = await browser.newPage();
    await page.goto(checkout.checkout_url);
    await fillCard(page, THREE_DS);
    await page.getByRole('button', { name: /^Pay / }).click();
    await page.getByRole('heading', { name: 'Confirm this payment with your bank' }).waitFor();
    return { checkout, page, record };
  }

  test('the 3-D Secure answer: the provider message on the bank step, then paid once by itself', async () => {
    const { checkout, page, record } = await challengePage();
    const outage = simulatorDown('getPayment');
    await page.getByRole('button', { name: 'Confirm the payment' }).click();
    await page.getByRole('alert').filter({ hasText: NOT_ANSWERING }).waitFor();
    await assertProviderMessage(page);
    assert.doesNotMatch((await page.locator('main').textContent()) ?? '', /check your connection/i);
    assert.equal(
      await page.getByRole('button', { name: 'Fail the authentication' }).isDisabled(),
      true,
      'no second answer while the first is sent again',
    );
    await screenshot(page, 'checkout-provider-down-06-challenge');
    await assertAccessible(page, 'checkout-provider-down-challenge');
    outage.up();
    await page.getByRole('heading', { name: 'Payment successful' }).waitFor({ timeout: RECOVERY_MS });
    assert.equal(requestsTo(record, challengePath).length, 2, 'the 503 and the answer sent again');
    await assertPaidOnce(checkout.token);
    assertCleanConsole(record);
  });

  test('the 3-D Secure answer when the provider stays silent: a few tries, then Try again sends it', async () => {
    const { page, record } = await challengePage();
    const outage = simulatorDown('getPayment');
    await page.getByRole('button', { name: 'Confirm the payment' }).click();
    const retry = page.getByRole('button', { name: 'Try again' });
    await retry.waitFor({ timeout: 40_000 });
    assert.equal(requestsTo(record, challengePath).length, 4, 'bounded');
    assert.match((await page.getByRole('alert').first().textContent()) ?? '', /still not answering/);
    assert.equal(await page.getByRole('button', { name: 'Confirm the payment' }).isDisabled(), true);
    outage.up();
    await retry.click();
    await page.getByRole('heading', { name: 'Payment successful' }).waitFor();
    assertCleanConsole(record);
  });

  /**
   * A sandbox checkout whose card attempt the simulator charges without answering (its outcome unknown),
   * while it does not answer the status read that would find the charge either, until `up`.
   */
  async function lostAnswerPage() {
    const checkout = await createCheckout(server, sandboxKey, {}, '/sandbox/api');
    const { page, record } = await browser.newPage();
    await page.goto(checkout.checkout_url);
    await fillCard(page, CARDS.success);
    const sim = (server.ctx.providers.simulator as unknown as { sim: { fault: string | null } }).sim;
    sim.fault = 'timeout_after_success';
    const restore = () => {
      sim.fault = null;
    };
    outages.push({ stop: restore });
    const reads = simulatorDown('findPayment');
    await page.getByRole('button', { name: /^Pay / }).click();
    return {
      checkout,
      page,
      record,
      up: () => {
        restore();
        reads.up();
      },
    };
  }

  const syncPath = /^\/api\/checkout\/sync-status\/$/;
  const payPath = /^\/api\/checkout\/[^/]+\/pay\/$/;

  test('a card attempt whose answer is lost: the provider message while confirming, then paid once by itself', async () => {
    const { checkout, page, record, up } = await lostAnswerPage();
    await assertProviderMessage(page);
    assert.equal(await page.getByRole('heading', { name: 'Confirming your payment…' }).isVisible(), true);
    assert.equal(await page.getByLabel('Card number').isVisible(), false, 'no form to pay again with');
    await screenshot(page, 'checkout-provider-down-08-unknown');
    up();
    await page.getByRole('heading', { name: 'Payment successful' }).waitFor({ timeout: RECOVERY_MS });
    assert.equal(requestsTo(record, payPath).length, 1, 'the card was sent once');
    await assertPaidOnce(checkout.token);
    assertCleanConsole(record);
  });

  test('a card attempt whose answer is lost, the provider silent: a few asks, then "do not pay again" and Try again', async () => {
    const { checkout, page, record, up } = await lostAnswerPage();
    const retry = page.getByRole('button', { name: 'Try again' });
    // Asks at 0, 5, 10 and 15 s (Retry-After), then the page stops asking.
    await retry.waitFor({ timeout: 40_000 });
    const asks = requestsTo(record, syncPath).length;
    assert.equal(asks, 4, 'bounded, after Retry-After');
    const message = (await page.locator('#waiting-message').textContent()) ?? '';
    assert.match(message, /could not confirm your payment yet/);
    assert.match(message, /do not know whether your card was charged/);
    assert.match(message, /Do not pay again/);
    assert.equal(await page.getByRole('button', { name: /^Pay / }).isVisible(), false, 'no Pay button');
    await page.waitForTimeout(6000);
    assert.equal(requestsTo(record, syncPath).length, asks, 'no more asks by itself');
    await screenshot(page, 'checkout-provider-down-09-unknown-try-again');
    await assertAccessible(page, 'checkout-provider-down-unknown-try-again');
    up();
    await retry.click();
    await page.getByRole('heading', { name: 'Payment successful' }).waitFor();
    assert.equal(requestsTo(record, payPath).length, 1, 'Try again asks for the status, never pays');
    await assertPaidOnce(checkout.token);
    assertCleanConsole(record);
  });

  test('a card attempt that never reached the provider: 8 asks, then the form with the warning; no second charge meanwhile', async () => {
    const checkout = await createCheckout(server, sandboxKey, {}, '/sandbox/api');
    const { page, record } = await browser.newPage();
    await page.goto(checkout.checkout_url);
    await fillCard(page, CARDS.success);
    const simulator = server.ctx.providers.simulator;
    // The charge never reaches the simulator: its answer is lost, and the status read finds nothing.
    const undo = swapProvider(
      server.ctx,
      wrapProvider(simulator, {
        chargeCard: async () => {
          throw new Error('connect ECONNREFUSED (the test)');
        },
      }),
    );
    outages.push({ stop: undo });
    await page.getByRole('button', { name: /^Pay / }).click();
    await page.getByText('We are confirming your payment with the bank').filter({ visible: true }).waitFor();
    const alert = page.getByRole('alert').filter({ hasText: /could not confirm your last attempt yet/ });
    await alert.waitFor({ timeout: 25_000 });
    assert.equal(requestsTo(record, syncPath).length, 8, 'asked 8 times');
    assert.match((await alert.textContent()) ?? '', /do not know whether your card was charged/);
    // The first attempt is still unknown: a second one is refused, nothing is sent to the provider.
    await page.getByRole('button', { name: /^Pay / }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: /already in progress/ })
      .waitFor();
    const pays = requestsTo(record, payPath).length;
    assert.equal(pays, 2);
    const state = await call<{ status: string; attempts: unknown[] }>(
      server,
      'GET',
      `/api/checkout/${checkout.token}/`,
    );
    assert.equal(state.body.status, 'open');
    assert.deepEqual(state.body.attempts, [], 'no attempt recorded, none charged');
    assertCleanConsole(record);
  });

  test('a new Stripe payment Stripe does not open: reads back off, then Try again shows the Payment Element', async () => {
    // No hosted step beforehand: the page's own first read is the one that opens the PaymentIntent.
    const checkout = await createCheckout(server, apiKey);
    const { page, record } = await browser.newPage();
    await routeStripe(page, fake);
    const outage = stripeDown('POST', createIntentPath);
    const readAt: number[] = [];
    const retryAfter: (string | null)[] = [];
    page.on('request', (request) => {
      if (checkoutReads.test(new URL(request.url()).pathname)) readAt.push(Date.now());
    });
    page.on('response', async (response) => {
      if (checkoutReads.test(new URL(response.url()).pathname))
        retryAfter.push(await response.headerValue('retry-after'));
    });
    await page.goto(checkout.checkout_url);
    // The server's answer says Stripe is silent (Retry-After): the page says so at once, and waits.
    await page.getByRole('alert').filter({ hasText: NOT_ANSWERING }).waitFor({ timeout: 4000 });
    assert.equal(readAt.length, 1, 'no second read before Retry-After');
    await assertProviderMessage(page);
    assert.equal(await page.locator('#pay-button').isDisabled(), true, 'nothing to pay with yet');
    await screenshot(page, 'checkout-provider-down-07-preparing');
    const retry = page.getByRole('button', { name: 'Try again' });
    await retry.waitFor({ timeout: 40_000 });
    const tries = requestsTo(record, checkoutReads).length;
    assert.equal(tries, 5, 'five reads in all, then the page stops');
    assert.deepEqual(retryAfter, ['5', '5', '5', '5', '5'], "each read carried the server's pacing");
    // Read again after Retry-After (5 s), each time; the page's own pacing was 1.5, 3, 6 then 12 s.
    const gaps = readAt.slice(1).map((at, index) => at - readAt[index]);
    assert.ok(
      gaps.every((gap) => gap >= 4800 && gap < 9000),
      `reads ${gaps.join(', ')} ms apart`,
    );
    assert.match((await page.locator('#waiting-message').textContent()) ?? '', /still not answering/);
    await page.waitForTimeout(6000);
    assert.equal(requestsTo(record, checkoutReads).length, tries, 'no more reads by itself');
    await assertAccessible(page, 'checkout-provider-down-preparing-try-again');
    outage.stop();
    await retry.click();
    await page.getByLabel('Test card').waitFor();
    await page.getByRole('button', { name: /^Pay / }).click();
    await page.getByRole('heading', { name: 'Payment successful' }).waitFor();
    assertCleanConsole(record);
  });
});
