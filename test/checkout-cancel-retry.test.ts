// The customer's cancel of a Stripe checkout whose cancel at Stripe gets no answer is answered 503 with
// Retry-After ("nothing was changed; try again"), so the retry must answer what a first cancel answers: 200
// CANCELED, even when Stripe made the cancel and only its answer was lost (the retry's own read, or the sync
// loop's, or a webhook's, then finds the PaymentIntent canceled). A retry while Stripe still does not answer
// is 503 again, never 410; and a payment the browser completed meanwhile is paid, never shown canceled:
// the retry answers that outcome (200 SUCCESS), as any cancel whose own look finds the payment decided.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { PROVIDER_RETRY_AFTER_S } from '../src/http/errors.ts';
import { syncDuePayments } from '../src/modules/payments/sync.ts';
import { createCheckout, eventsOf, paymentRow, syncStatus } from './helpers/checkout.ts';
import type { FakeStripe } from './helpers/fake-stripe/server.ts';
import { settlementsOf } from './helpers/provider-checks.ts';
import {
  type ApiResponse,
  call,
  createTestKey,
  createTestMerchant,
  DB_KIND,
  type TestServer,
} from './helpers/server.ts';
import { hostedStep, type Json, startWithStripe } from './helpers/stripe.ts';

const CANCEL_URL = 'https://shop.example/canceled';
const cancelPath = /^\/v1\/payment_intents\/pi_\w+\/cancel$/;
const intentPath = /^\/v1\/payment_intents\/pi_\w+$/;

function assertUnavailable(answer: ApiResponse<Json>) {
  assert.equal(answer.status, 503, answer.text);
  assert.equal(answer.headers.get('retry-after'), String(PROVIDER_RETRY_AFTER_S));
}

describe(`a customer's cancel retried after Stripe did not answer (${DB_KIND})`, () => {
  let fake: FakeStripe;
  let server: TestServer;
  let close: () => Promise<void>;
  let key: string;
  before(async () => {
    ({ fake, server, close } = await startWithStripe({
      worker: false,
      // A request that never answers fails in seconds (the SDK's timeout, and its one retry).
      env: { KASSA_PROVIDER_TIMEOUT_MS: '1000' },
    }));
    const merchant = await createTestMerchant(server, 'Cancel Retry Shop');
    key = await createTestKey(server, merchant);
  });
  after(() => close());

  /** A checkout whose PaymentIntent the hosted page opened. */
  async function openCheckout() {
    const checkout = await createCheckout(server, key, { cancelUrl: CANCEL_URL });
    const { page, provider } = await hostedStep(server, checkout.token);
    const transactionId = page.transaction_id as string;
    const intentId = (await paymentRow(server, transactionId)).provider_payment_id as string;
    const cancel = () => call<Json>(server, 'POST', `/api/checkout/${checkout.token}/cancel/`);
    const session = () =>
      server.ctx.db
        .selectFrom('checkout_sessions')
        .selectAll()
        .where('public_id', '=', checkout.checkout_id)
        .executeTakeFirstOrThrow();
    return {
      ...checkout,
      transactionId,
      intentId,
      clientSecret: provider.client_secret as string,
      cancel,
      session,
    };
  }

  /** What a first cancel of a checkout with a payment answers. */
  function canceledAnswer(checkout: { checkout_id: string; transactionId: string }) {
    return {
      checkout_id: checkout.checkout_id,
      order_id: checkout.checkout_id,
      status: 'CANCELED',
      transaction_id: checkout.transactionId,
      payment_status: 'canceled',
      redirect_url: CANCEL_URL,
    };
  }

  async function canceledEvents(orderId: string) {
    return (await eventsOf(server, orderId)).filter((event) => event.status === 'canceled').length;
  }

  test('a cancel Stripe made whose answer was lost: 503, then the retry answers 200 CANCELED as a first cancel does, one canceled event; a cancel after that is 410', async () => {
    const checkout = await openCheckout();
    fake.fail({ method: 'POST', path: cancelPath, mode: 'timeout_after_success', times: 2 });
    assertUnavailable(await checkout.cancel());
    assert.equal(fake.ledger.intent(checkout.intentId).status, 'canceled', 'Stripe made the cancel');
    assert.equal((await paymentRow(server, checkout.transactionId)).status, 'processing', 'nothing changed');
    assert.equal((await checkout.session()).canceled_at, null);

    const again = await checkout.cancel();
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(again.body, canceledAnswer(checkout));
    assert.notEqual((await checkout.session()).canceled_at, null, 'the customer canceled the checkout');
    assert.equal((await paymentRow(server, checkout.transactionId)).status, 'canceled');
    assert.equal(await canceledEvents(checkout.checkout_id), 1, 'one canceled event, not two');
    assert.deepEqual((await syncStatus(server, checkout.token)).body, canceledAnswer(checkout));
    // Finished now: a further cancel is a finished session's, as the contract says.
    assert.equal((await checkout.cancel()).status, 410);
  });

  test('a retry while Stripe still does not answer is 503 again, not 410; once Stripe answers, it completes', async () => {
    const checkout = await openCheckout();
    fake.fail({ method: 'POST', path: cancelPath, mode: 'timeout_after_success', times: 2 });
    assertUnavailable(await checkout.cancel());
    // Stripe is down for the retry's read of the PaymentIntent (500 twice: the SDK asks once more).
    fake.fail({ method: 'GET', path: intentPath, mode: '500', times: 2 });
    assertUnavailable(await checkout.cancel());
    assert.equal((await paymentRow(server, checkout.transactionId)).status, 'processing');
    assert.equal((await checkout.session()).canceled_at, null);
    const done = await checkout.cancel();
    assert.deepEqual([done.status, done.body], [200, canceledAnswer(checkout)], done.text);
  });

  test('a cancel Stripe refuses twice (500): 503 both times, then 200 CANCELED once it answers', async () => {
    const checkout = await openCheckout();
    for (let i = 0; i < 2; i += 1) {
      fake.fail({ method: 'POST', path: cancelPath, mode: '500', times: 2 });
      assertUnavailable(await checkout.cancel());
      assert.equal(fake.ledger.intent(checkout.intentId).status, 'requires_payment_method');
    }
    const done = await checkout.cancel();
    assert.deepEqual([done.status, done.body], [200, canceledAnswer(checkout)], done.text);
    assert.equal(fake.ledger.intent(checkout.intentId).status, 'canceled');
    assert.equal(await canceledEvents(checkout.checkout_id), 1);
  });

  test('the sync loop reads the lost cancel before the customer retries: the status is CANCELED, and the retry answers 200 CANCELED', async () => {
    const checkout = await openCheckout();
    fake.fail({ method: 'POST', path: cancelPath, mode: 'timeout_after_success', times: 2 });
    assertUnavailable(await checkout.cancel());
    await syncDuePayments(server.ctx);
    assert.equal((await paymentRow(server, checkout.transactionId)).status, 'canceled');
    const again = await checkout.cancel();
    assert.deepEqual([again.status, again.body], [200, canceledAnswer(checkout)], again.text);
    assert.equal(await canceledEvents(checkout.checkout_id), 1);
  });

  test('the browser paid while the cancel went unanswered: the retry finds it paid and answers its outcome (200 SUCCESS), the payment paid and settled, never canceled; a cancel after that is 410', async () => {
    const checkout = await openCheckout();
    fake.fail({ method: 'POST', path: cancelPath, mode: '500', times: 2 });
    assertUnavailable(await checkout.cancel());
    const confirm = await fake.confirmInBrowser(checkout.clientSecret, 'pm_card_visa');
    assert.equal(confirm.status, 200);
    const again = await checkout.cancel();
    assert.equal(again.status, 200, again.text);
    assert.deepEqual([again.body.status, again.body.payment_status], ['SUCCESS', 'paid']);
    const later = await checkout.cancel();
    assert.deepEqual([later.status, later.body], [410, { detail: 'This checkout has already been paid.' }]);
    const payment = await paymentRow(server, checkout.transactionId);
    assert.equal(payment.status, 'paid');
    assert.equal(await settlementsOf(server.ctx, payment.id), 1);
    assert.equal((await checkout.session()).canceled_at, null);
    assert.equal((await syncStatus(server, checkout.token)).body.status, 'SUCCESS');
    assert.equal(await canceledEvents(checkout.checkout_id), 0);
  });
});
