// Giving a payment up with a provider whose form is its own: when the checkout expires or the customer
// cancels, Kassa stops the PaymentIntent at Stripe first, so a browser cannot still confirm it; a payment
// that succeeded meanwhile wins; and a charge the provider reports after Kassa gave the payment up is
// flagged for review instead of moving anything back. The simulator's waiting challenge ends the same way.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DEFAULT_RECONCILE_SCHEDULE_MS } from '../src/config.ts';
import { expireCheckouts } from '../src/modules/payments/sync.ts';
import { billing, CARDS, createCheckout, pay, paymentRow } from './helpers/checkout.ts';
import type { FakeStripe, FaultRule } from './helpers/fake-stripe/server.ts';
import { eventStatuses, reconcile, settlementsOf } from './helpers/provider-checks.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  DB_KIND,
  type Merchant,
  type TestServer,
} from './helpers/server.ts';
import {
  CANCEL_PATH,
  cancelsSent,
  deliver,
  eventAbout,
  hostedStep,
  type Json,
  startShopWithStripe,
  startWithStripe,
} from './helpers/stripe.ts';

const DAY = 86_400_000;
/** KASSA_RECONCILE_SCHEDULE_MS's first read, by default a minute after the call. */
const RECONCILER_FIRST_READ_MS = DEFAULT_RECONCILE_SCHEDULE_MS[0];

describe(`expiry and cancel stop the provider payment (${DB_KIND})`, () => {
  let fake: FakeStripe;
  let server: TestServer;
  let close: () => Promise<void>;
  let merchant: Merchant;
  let key: string;
  let sandboxKey: string;
  let offsetMs = 0;
  before(async () => {
    ({ fake, server, close, merchant, key } = await startShopWithStripe('Expiry Shop', {
      worker: false,
      clock: () => new Date(Date.now() + offsetMs),
    }));
    sandboxKey = await createTestKey(server, merchant, { environment: 'sandbox' });
  });
  after(() => close());

  const paymentOf = (publicId: string) => paymentRow(server, publicId);

  test('an expired checkout cancels its PaymentIntent, then fails the payment; the browser can no longer pay', async () => {
    const checkout = await createCheckout(server, key);
    const { page, provider } = await hostedStep(server, checkout.token);
    offsetMs += DAY + 1000;
    assert.ok((await expireCheckouts(server.ctx)) >= 1);
    const row = await paymentOf(page.transaction_id as string);
    assert.equal(row.status, 'failed');
    assert.equal(fake.ledger.intent(row.provider_payment_id as string).status, 'canceled');
    const late = await fake.confirmInBrowser(provider.client_secret as string, 'pm_card_visa');
    assert.equal(late.status, 400, 'Stripe refuses to confirm a canceled PaymentIntent');
  });

  test('a payment the customer completed just before the expiry is paid, not failed', async () => {
    const checkout = await createCheckout(server, key);
    const { page, provider } = await hostedStep(server, checkout.token);
    await fake.confirmInBrowser(provider.client_secret as string, 'pm_card_visa');
    offsetMs += DAY + 1000;
    await expireCheckouts(server.ctx);
    const row = await paymentOf(page.transaction_id as string);
    assert.equal(row.status, 'paid');
    assert.equal(await settlementsOf(server.ctx, row.id), 1);
  });

  test("the customer's cancel cancels the PaymentIntent too", async () => {
    const checkout = await createCheckout(server, key);
    const { page } = await hostedStep(server, checkout.token);
    const canceled = await call<Json>(server, 'POST', `/api/checkout/${checkout.token}/cancel/`);
    assert.deepEqual([canceled.status, canceled.body.status], [200, 'CANCELED']);
    const row = await paymentOf(page.transaction_id as string);
    assert.equal(row.status, 'canceled');
    assert.equal(fake.ledger.intent(row.provider_payment_id as string).status, 'canceled');
  });

  /**
   * An operator cancels the checkout's PaymentIntent in Stripe's Dashboard just before Kassa's own cancel
   * reaches Stripe (after Kassa's last look found it open): Stripe refuses Kassa's cancel (400
   * payment_intent_unexpected_state), and the connector reads the PaymentIntent canceled instead.
   */
  const canceledInDashboardAtTheCancel = async () => {
    const checkout = await createCheckout(server, key);
    const { page } = await hostedStep(server, checkout.token);
    const transactionId = page.transaction_id as string;
    const intentId = (await paymentOf(transactionId)).provider_payment_id as string;
    const cancelPath = /^\/v1\/payment_intents\/pi_\w+\/cancel$/;
    fake.interleave('POST', cancelPath, () => {
      fake.ledger.cancelPaymentIntent(intentId, { cancellation_reason: 'requested_by_customer' });
    });
    const cancels = () => fake.requests.filter((request) => cancelPath.test(request.path)).length;
    return { checkout, transactionId, intentId, cancels, cancelsBefore: cancels() };
  };

  test("the customer's cancel of a PaymentIntent canceled in Stripe's Dashboard meanwhile: Stripe refuses Kassa's cancel, the payment is canceled once, 200 CANCELED", async () => {
    const { checkout, transactionId, intentId, cancels, cancelsBefore } =
      await canceledInDashboardAtTheCancel();
    const canceled = await call<Json>(server, 'POST', `/api/checkout/${checkout.token}/cancel/`);
    assert.deepEqual([canceled.status, canceled.body.status], [200, 'CANCELED'], canceled.text);
    assert.equal(cancels() - cancelsBefore, 1, "Kassa's cancel reached Stripe, which refused it");
    assert.equal(fake.ledger.intent(intentId).status, 'canceled');
    assert.equal((await paymentOf(transactionId)).status, 'canceled');
    assert.deepEqual(await eventStatuses(server.ctx, transactionId), ['processing', 'canceled']);
  });

  test("the expiry's cancel of a PaymentIntent canceled in Stripe's Dashboard meanwhile: Stripe refuses it, the payment is failed once", async () => {
    const { transactionId, intentId, cancels, cancelsBefore } = await canceledInDashboardAtTheCancel();
    offsetMs += DAY + 1000;
    assert.ok((await expireCheckouts(server.ctx)) >= 1);
    assert.equal(cancels() - cancelsBefore, 1);
    assert.equal(fake.ledger.intent(intentId).status, 'canceled');
    assert.equal((await paymentOf(transactionId)).status, 'failed');
    assert.deepEqual(await eventStatuses(server.ctx, transactionId), ['processing', 'failed']);
    assert.equal(await expireCheckouts(server.ctx), 0, 'nothing left to expire');
  });

  test('a charge Stripe reports after Kassa gave the payment up is flagged, nothing moves back', async () => {
    const checkout = await createCheckout(server, key);
    const { page, provider } = await hostedStep(server, checkout.token);
    const row = await paymentOf(page.transaction_id as string);
    // Kassa gave it up without reaching Stripe (its cancel was lost); the browser then paid.
    await server.ctx.db.updateTable('payments').set({ status: 'failed' }).where('id', '=', row.id).execute();
    await fake.confirmInBrowser(provider.client_secret as string, 'pm_card_visa');
    const delivered = await deliver(
      server,
      fake,
      eventAbout(fake, 'payment_intent.succeeded', row.provider_payment_id as string),
    );
    assert.equal(delivered.status, 200);
    const after = await paymentOf(row.public_id);
    assert.equal(after.status, 'failed');
    assert.equal(await settlementsOf(server.ctx, row.id), 0);
    assert.match(
      after.provider_conflict ?? '',
      /^The provider reports this payment paid after Kassa marked it failed/,
    );
    const login = await call<{ token: string }>(server, 'POST', '/api/auth/login/', {
      body: { email: merchant.email, password: merchant.password },
    });
    const detail = await call<Json>(server, 'GET', `/api/payments/${row.public_id}/`, {
      token: login.body.token,
    });
    assert.deepEqual(
      [(detail.body.provider_review as Json).state, (detail.body.provider_review as Json).operation],
      ['flagged', 'payment'],
    );
  });

  test("the simulator's waiting challenge ends with the expired checkout; a late approval changes nothing", async () => {
    const checkout = await createCheckout(server, sandboxKey, {}, '/sandbox/api');
    const attempt = await pay(server, checkout.token, '4000 0027 6000 3184');
    const action = attempt.body.next_action as Json;
    offsetMs += DAY + 1000;
    await expireCheckouts(server.ctx);
    const row = await paymentOf(attempt.body.transaction_id as string);
    assert.equal(row.status, 'failed');
    const late = await call<Json>(server, 'POST', action.url as string, { body: { answer: 'approve' } });
    assert.deepEqual(late.body, { status: 'abandoned', payment_status: 'failed' });
    assert.equal((await paymentOf(row.public_id)).provider_conflict, null);
    assert.equal((await pay(server, checkout.token, CARDS.success)).status, 410);
  });
});

// A cancel Stripe does not answer (a 5xx, a rate limit, a timeout) proves nothing: the customer's browser
// may still confirm the PaymentIntent. The expiry then leaves the payment `processing` and hands its stop
// to the reconciler (a payment_cancel operation, read again on its schedule and flagged after the last:
// stripe-expiry-flagged.test.ts), so only Stripe's word settles it: a success the browser made meanwhile
// is paid, never lost or flagged, and the link's use stays held until then (max_uses 1 cannot be
// exceeded); a cancel that landed, its answer lost, fails the payment once it is read.
describe(`expiry when Stripe does not answer the cancel (${DB_KIND})`, () => {
  let fake: FakeStripe;
  let server: TestServer;
  let close: () => Promise<void>;
  let merchant: Merchant;
  let offsetMs = 0;
  before(async () => {
    ({ fake, server, close } = await startWithStripe({
      worker: false,
      clock: () => new Date(Date.now() + offsetMs),
      // The SDK's timeout (and its one retry): a cancel that never answers fails the round in seconds.
      env: { KASSA_PROVIDER_TIMEOUT_MS: '1500' },
    }));
    merchant = await createTestMerchant(server, 'Unanswered Cancel Shop');
  });
  after(() => close());

  const paymentOf = (publicId: string) => paymentRow(server, publicId);

  /** A dashboard session at the test's clock (the tests move it past a day). */
  async function login(): Promise<string> {
    const answer = await call<{ token: string }>(server, 'POST', '/api/auth/login/', {
      body: { email: merchant.email, password: merchant.password },
    });
    assert.equal(answer.status, 200, answer.text);
    return answer.body.token;
  }

  /** A link of one use, and the checkout started from it with its PaymentIntent opened by the page. */
  async function oneUseLinkCheckout() {
    const token = await login();
    const product = await call<Json>(server, 'POST', '/api/products/', {
      token,
      body: { name: 'Only one', unit_price: '9.00', currency: 'USD' },
    });
    const link = await call<Json>(server, 'POST', '/api/payment-links/', {
      token,
      body: { name: 'One use', products: [{ product_id: product.body.id }], max_uses: 1 },
    });
    assert.equal(link.status, 201, link.text);
    const linkId = link.body.id as string;
    const start = () =>
      call<Json>(server, 'POST', `/api/payment-links/public/${linkId}/start/`, { body: billing() });
    const started = await start();
    assert.equal(started.status, 201, started.text);
    const { page, provider } = await hostedStep(server, started.body.token as string);
    assert.ok(provider.client_secret, 'the page has a client secret');
    const usesCount = async () =>
      (await call<Json>(server, 'GET', `/api/payment-links/${linkId}/`, { token: await login() })).body
        .uses_count;
    return {
      start,
      usesCount,
      token: started.body.token as string,
      transactionId: page.transaction_id as string,
      clientSecret: provider.client_secret,
    };
  }

  const unanswered: [string, Omit<FaultRule, 'method' | 'path'>][] = [
    // The SDK sends a 5xx once more (maxNetworkRetries 1); a 429 it does not.
    ['a 500', { mode: '500', times: 2 }],
    ['a rate limit', { mode: '429', times: 1 }],
  ];
  for (const [name, fault] of unanswered) {
    test(`a cancel answered by ${name} leaves the payment processing; a success the browser made meanwhile is paid, the link's one use held`, async () => {
      const checkout = await oneUseLinkCheckout();
      offsetMs += DAY + 1000;
      const before = cancelsSent(fake);
      fake.fail({ method: 'POST', path: CANCEL_PATH, ...fault });
      assert.equal(await expireCheckouts(server.ctx), 0, 'the cancel is not settled: nothing failed');
      assert.equal(cancelsSent(fake) - before, fault.times, 'Kassa asked Stripe to cancel');
      const row = await paymentOf(checkout.transactionId);
      assert.equal(row.status, 'processing', "not failed without the provider's word");
      const intentId = row.provider_payment_id as string;
      assert.equal(fake.ledger.intent(intentId).status, 'requires_payment_method');
      assert.equal(await checkout.usesCount(), 1);
      assert.equal((await checkout.start()).status, 410, "the waiting payment holds the link's use");
      // The customer's sync-status makes the same last look and cancel: unanswered, it fails nothing either.
      fake.fail({ method: 'POST', path: CANCEL_PATH, ...fault });
      const sync = await call<Json>(server, 'POST', '/api/checkout/sync-status/', {
        body: { token: checkout.token },
      });
      assert.notEqual(sync.body.payment_status, 'failed', sync.text);
      assert.equal((await paymentOf(checkout.transactionId)).status, 'processing');

      // The customer's browser still holds the client secret, and pays.
      const late = await fake.confirmInBrowser(checkout.clientSecret, 'pm_card_visa');
      assert.equal(late.status, 200);
      assert.equal(fake.ledger.intent(intentId).status, 'succeeded');

      // The reconciler's first read of the stop reaches Stripe (answering again): the success is
      // applied, nothing to cancel.
      assert.equal(await expireCheckouts(server.ctx), 0, "the stop is the reconciler's now");
      offsetMs += RECONCILER_FIRST_READ_MS;
      assert.equal(await reconcile(server.ctx), 1);
      const paid = await paymentOf(checkout.transactionId);
      assert.equal(paid.status, 'paid');
      assert.equal(paid.provider_conflict, null);
      assert.equal(await settlementsOf(server.ctx, paid.id), 1);
      assert.equal(await checkout.usesCount(), 1);
      assert.equal((await checkout.start()).status, 410, 'max_uses 1: one use, paid');
    });
  }

  test("a cancel Stripe made but whose answer was lost (a timeout) fails the payment once it is read; the link's use is given back", async () => {
    const checkout = await oneUseLinkCheckout();
    offsetMs += DAY + 1000;
    fake.fail({ method: 'POST', path: CANCEL_PATH, mode: 'timeout_after_success', times: 2 });
    assert.equal(await expireCheckouts(server.ctx), 0);
    const row = await paymentOf(checkout.transactionId);
    assert.equal(row.status, 'processing', 'no answer: not failed yet');
    const intentId = row.provider_payment_id as string;
    assert.equal(fake.ledger.intent(intentId).status, 'canceled');
    assert.equal((await checkout.start()).status, 410);
    const late = await fake.confirmInBrowser(checkout.clientSecret, 'pm_card_visa');
    assert.equal(late.status, 400, 'Stripe refuses to confirm a canceled PaymentIntent');

    // The reconciler's first read finds the cancel at Stripe: the expiry's move, failed.
    offsetMs += RECONCILER_FIRST_READ_MS;
    assert.equal(await reconcile(server.ctx), 1);
    const failed = await paymentOf(checkout.transactionId);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.provider_conflict, null);
    assert.equal(await settlementsOf(server.ctx, failed.id), 0);
    assert.equal(await checkout.usesCount(), 0);
    assert.equal((await checkout.start()).status, 201, 'the use is given back');
  });
});
