// An expired checkout whose PaymentIntent is `processing` at Stripe (a payment method the bank is still
// deciding, such as a bank debit): Stripe refuses to cancel it (400 payment_intent_unexpected_state), and
// it may still be paid, so Kassa must not fail the payment. The expirer's last look reads it processing and
// makes the payment `pending`; it is not failed, and the sync loop applies what the bank decides (paid and
// settled once). That holds when the PaymentIntent goes processing before the expiry's last look, between
// that look and the cancel (Stripe refuses the cancel), and while Stripe was silent to Kassa (the stop is
// with the reconciler: its read records the stop as refused, not as a cancel).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { expireCheckouts, syncDuePayments } from '../src/modules/payments/sync.ts';
import { operationByKey } from '../src/provider/operations/store.ts';
import { createCheckout, paymentRow } from './helpers/checkout.ts';
import type { FakeStripe } from './helpers/fake-stripe/server.ts';
import { eventStatuses, reconcile, settlementsOf } from './helpers/provider-checks.ts';
import { createTestKey, createTestMerchant, DB_KIND, type TestServer } from './helpers/server.ts';
import { hostedStep, startWithStripe } from './helpers/stripe.ts';

const DAY = 86_400_000;
const SCHEDULE_MS = [300, 600, 1200, 2400, 4800];
const cancelPath = /^\/v1\/payment_intents\/pi_\w+\/cancel$/;

describe(`expiry of a checkout whose PaymentIntent is processing at Stripe (${DB_KIND})`, () => {
  let fake: FakeStripe;
  let server: TestServer;
  let close: () => Promise<void>;
  let key: string;
  let offsetMs = 0;
  before(async () => {
    ({ fake, server, close } = await startWithStripe({
      worker: false,
      clock: () => new Date(Date.now() + offsetMs),
      env: { KASSA_PROVIDER_TIMEOUT_MS: '1500', KASSA_RECONCILE_SCHEDULE_MS: SCHEDULE_MS.join(',') },
    }));
    const merchant = await createTestMerchant(server, 'Bank Debit Shop');
    key = await createTestKey(server, merchant);
  });
  after(() => close());

  const cancels = () =>
    fake.requests.filter((request) => request.method === 'POST' && cancelPath.test(request.path));

  /** A checkout whose PaymentIntent the page opened; Kassa's payment is `processing`, taking attempts. */
  async function openedCheckout() {
    const checkout = await createCheckout(server, key);
    const { page, provider } = await hostedStep(server, checkout.token);
    const transactionId = page.transaction_id as string;
    const row = await paymentRow(server, transactionId);
    return {
      transactionId,
      paymentId: row.id,
      intentId: row.provider_payment_id as string,
      clientSecret: provider.client_secret as string,
    };
  }

  /**
   * The expirer's round on the expired checkout fails nothing: the payment is `pending` (the bank is
   * deciding), the PaymentIntent still processing, no stop handed to the reconciler, and later rounds
   * leave the payment to the sync loop.
   */
  async function expiredPending(checkout: Awaited<ReturnType<typeof openedCheckout>>) {
    assert.equal(await expireCheckouts(server.ctx), 0, 'nothing failed');
    const row = await paymentRow(server, checkout.transactionId);
    assert.equal(row.status, 'pending', 'not failed while the bank may still pay');
    assert.equal(fake.ledger.intent(checkout.intentId).status, 'processing');
    assert.equal(await operationByKey(server.ctx.db, `kassa-cancel-${checkout.transactionId}`), undefined);
    offsetMs += DAY;
    assert.equal(await expireCheckouts(server.ctx), 0);
    assert.equal((await paymentRow(server, checkout.transactionId)).status, 'pending');
  }

  /** The bank pays the processing PaymentIntent; the sync loop reads it: paid, settled once, no conflict. */
  async function bankPays(checkout: Awaited<ReturnType<typeof openedCheckout>>) {
    fake.ledger.settleProcessing(checkout.intentId);
    assert.ok((await syncDuePayments(server.ctx)) >= 1);
    const paid = await paymentRow(server, checkout.transactionId);
    assert.equal(paid.status, 'paid');
    assert.equal(paid.provider_conflict, null);
    assert.equal(await settlementsOf(server.ctx, paid.id), 1);
    assert.ok(!(await eventStatuses(server.ctx, checkout.transactionId)).includes('failed'));
    // Read again: nothing moves, nothing is settled twice.
    await syncDuePayments(server.ctx);
    assert.equal(await settlementsOf(server.ctx, paid.id), 1);
  }

  test('processing at Stripe when the checkout expires: the payment is pending, not failed; the bank paying it makes it paid, settled once', async () => {
    const checkout = await openedCheckout();
    // The customer's browser confirms with a bank debit; Kassa has not read it yet (no webhook, no sync).
    const confirmed = await fake.confirmInBrowser(checkout.clientSecret, 'pm_fake_processing');
    assert.equal(confirmed.status, 200);
    assert.equal(fake.ledger.intent(checkout.intentId).status, 'processing');
    assert.equal((await paymentRow(server, checkout.transactionId)).status, 'processing');

    offsetMs += DAY + 1000;
    const cancelsBefore = cancels().length;
    await expiredPending(checkout);
    assert.equal(cancels().length, cancelsBefore, 'a payment the bank is deciding is not stopped');
    await bankPays(checkout);
  });

  test('processing between the last look and the cancel: Stripe refuses the cancel, the payment is pending, not failed; the bank paying it makes it paid, settled once', async () => {
    const checkout = await openedCheckout();
    offsetMs += DAY + 1000;
    // The last look finds the PaymentIntent waiting for a payment method; just before Kassa's cancel
    // reaches Stripe, the customer's browser confirms it with a bank debit.
    fake.interleave('POST', cancelPath, () => {
      fake.ledger.confirmPaymentIntent(checkout.intentId, { payment_method: 'pm_fake_processing' });
    });
    const cancelsBefore = cancels().length;
    await expiredPending(checkout);
    assert.equal(cancels().length - cancelsBefore, 1, 'Kassa asked Stripe to cancel, once: refused');
    await bankPays(checkout);
  });

  test("a stop Stripe did not answer, then the browser's bank debit: the reconciler's read leaves the payment pending and records the cancel as refused; the bank paying it makes it paid, settled once", async () => {
    const checkout = await openedCheckout();
    offsetMs += DAY + 1000;
    // The cancel goes unanswered (the SDK sends a 5xx once more): the stop is the reconciler's.
    const silent = fake.fail({ method: 'POST', path: cancelPath, mode: '500', times: 2 });
    assert.equal(await expireCheckouts(server.ctx), 0);
    silent.stop();
    const operationKey = `kassa-cancel-${checkout.transactionId}`;
    assert.equal((await operationByKey(server.ctx.db, operationKey))?.state, 'unknown');
    assert.equal((await paymentRow(server, checkout.transactionId)).status, 'processing');

    // Meanwhile the customer's browser confirms with a bank debit.
    const confirmed = await fake.confirmInBrowser(checkout.clientSecret, 'pm_fake_processing');
    assert.equal(confirmed.status, 200);

    // The reconciler's first read makes the expiry's move again: the last look finds it processing.
    offsetMs += SCHEDULE_MS[0];
    assert.equal(await reconcile(server.ctx), 1);
    const row = await paymentRow(server, checkout.transactionId);
    assert.equal(row.status, 'pending', 'not failed while the bank may still pay');
    assert.equal(fake.ledger.intent(checkout.intentId).status, 'processing');
    const done = await operationByKey(server.ctx.db, operationKey);
    assert.deepEqual(
      [done?.state, done?.outcome, done?.outcome_code],
      ['done', 'failed', 'payment_processing'],
      'recorded as a stop that canceled nothing, not as a cancel',
    );

    await bankPays(checkout);
  });

  test('processing at Stripe when the checkout expires, then the bank declines: the payment ends failed and the PaymentIntent canceled', {
    todo: 'a `pending` payment whose PaymentIntent goes back to requires_payment_method (the bank declined) reads PROCESSING, which moves no pending payment (transitions.ts nextStatus), and the expirer takes only `processing` payments: it stays pending, its PaymentIntent open',
  }, async () => {
    const checkout = await openedCheckout();
    await fake.confirmInBrowser(checkout.clientSecret, 'pm_fake_processing');
    offsetMs += DAY + 1000;
    assert.equal(await expireCheckouts(server.ctx), 0);
    assert.equal((await paymentRow(server, checkout.transactionId)).status, 'pending');

    fake.ledger.settleProcessing(checkout.intentId, false);
    await syncDuePayments(server.ctx);
    await expireCheckouts(server.ctx);
    const row = await paymentRow(server, checkout.transactionId);
    assert.equal(row.status, 'failed');
    assert.equal(row.provider_conflict, null);
    assert.equal(await settlementsOf(server.ctx, row.id), 0);
    assert.equal(fake.ledger.intent(checkout.intentId).status, 'canceled');
  });
});
