// An expired checkout whose PaymentIntent is `processing` at Stripe (a payment method the bank is still
// deciding, such as a bank debit): Stripe refuses to cancel it (400 payment_intent_unexpected_state), and
// it may still be paid, so Kassa must not fail the payment. The expirer's last look reads it processing and
// makes the payment `pending`; it is not failed, and the sync loop applies what the bank decides (paid and
// settled once). That holds when the PaymentIntent goes processing before the expiry's last look, between
// that look and the cancel (Stripe refuses the cancel), and while Stripe was silent to Kassa (the stop is
// with the reconciler: its read records the stop as refused, not as a cancel).
// And when the bank then declines (the PaymentIntent back at requires_payment_method, which the page's
// client secret could confirm again), expired or not: the read that sees it cancels the PaymentIntent
// and only then fails the payment, with one event, however many read at once; a payment confirmed
// again meanwhile is paid (or pending again), and a cancel Stripe does not answer is the reconciler's
// (flagged after its last read, then kassa operation resolve's, which only reads).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { expireCheckouts, syncDuePayments, syncPayment } from '../src/modules/payments/sync.ts';
import { resolveFlaggedOperation } from '../src/provider/operations/resolve.ts';
import { operationByKey } from '../src/provider/operations/store.ts';
import { operationHandlers } from '../src/worker/loops.ts';
import { createCheckout, paymentRow, syncStatus } from './helpers/checkout.ts';
import type { FakeStripe } from './helpers/fake-stripe/server.ts';
import { eventStatuses, flagAfterLastRead, reconcile, settlementsOf } from './helpers/provider-checks.ts';
import { call, DB_KIND, type TestServer } from './helpers/server.ts';
import {
  CANCEL_PATH,
  cancelsSent,
  deliver,
  eventAbout,
  hostedStep,
  type Json,
  startShopWithStripe,
} from './helpers/stripe.ts';

const DAY = 86_400_000;
const SCHEDULE_MS = [300, 600, 1200, 2400, 4800];

describe(`expiry of a checkout whose PaymentIntent is processing at Stripe (${DB_KIND})`, () => {
  let fake: FakeStripe;
  let server: TestServer;
  let close: () => Promise<void>;
  let key: string;
  let offsetMs = 0;
  before(async () => {
    ({ fake, server, close, key } = await startShopWithStripe('Bank Debit Shop', {
      worker: false,
      clock: () => new Date(Date.now() + offsetMs),
      env: { KASSA_PROVIDER_TIMEOUT_MS: '1500', KASSA_RECONCILE_SCHEDULE_MS: SCHEDULE_MS.join(',') },
    }));
  });
  after(() => close());

  /** A checkout whose PaymentIntent the page opened; Kassa's payment is `processing`, taking attempts. */
  async function openedCheckout(urls: Record<string, string> = {}) {
    const checkout = await createCheckout(server, key, urls);
    const { page, provider } = await hostedStep(server, checkout.token);
    const transactionId = page.transaction_id as string;
    const row = await paymentRow(server, transactionId);
    return {
      token: checkout.token,
      transactionId,
      paymentId: row.id,
      intentId: row.provider_payment_id as string,
      clientSecret: provider.client_secret as string,
    };
  }
  type OpenedCheckout = Awaited<ReturnType<typeof openedCheckout>>;

  /**
   * The expirer's round on the expired checkout fails nothing: the payment is `pending` (the bank is
   * deciding), the PaymentIntent still processing, no stop handed to the reconciler, and later rounds
   * leave the payment to the sync loop.
   */
  async function expiredPending(checkout: OpenedCheckout) {
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
  async function bankPays(checkout: OpenedCheckout) {
    fake.ledger.settleProcessing(checkout.intentId);
    assert.ok((await syncDuePayments(server.ctx)) >= 1);
    await paidOnce(checkout);
  }

  /** The payment is paid, settled once, no conflict, never failed; a read again settles nothing twice. */
  async function paidOnce(checkout: OpenedCheckout) {
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
    const cancelsBefore = cancelsSent(fake);
    await expiredPending(checkout);
    assert.equal(cancelsSent(fake), cancelsBefore, 'a payment the bank is deciding is not stopped');
    await bankPays(checkout);
  });

  test('processing between the last look and the cancel: Stripe refuses the cancel, the payment is pending, not failed; the bank paying it makes it paid, settled once', async () => {
    const checkout = await openedCheckout();
    offsetMs += DAY + 1000;
    // The last look finds the PaymentIntent waiting for a payment method; just before Kassa's cancel
    // reaches Stripe, the customer's browser confirms it with a bank debit.
    fake.interleave('POST', CANCEL_PATH, () => {
      fake.ledger.confirmPaymentIntent(checkout.intentId, { payment_method: 'pm_fake_processing' });
    });
    const cancelsBefore = cancelsSent(fake);
    await expiredPending(checkout);
    assert.equal(cancelsSent(fake) - cancelsBefore, 1, 'Kassa asked Stripe to cancel, once: refused');
    await bankPays(checkout);
  });

  test("a stop Stripe did not answer, then the browser's bank debit: the reconciler's read leaves the payment pending and records the cancel as refused; the bank paying it makes it paid, settled once", async () => {
    const checkout = await openedCheckout();
    offsetMs += DAY + 1000;
    // The cancel goes unanswered (the SDK sends a 5xx once more): the stop is the reconciler's.
    const silent = fake.fail({ method: 'POST', path: CANCEL_PATH, mode: '500', times: 2 });
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

  /** The customer's browser pays with a bank debit, and a read makes the payment `pending`. */
  async function pendingCheckout(urls: Record<string, string> = {}) {
    const checkout = await openedCheckout(urls);
    assert.equal((await fake.confirmInBrowser(checkout.clientSecret, 'pm_fake_processing')).status, 200);
    await syncPayment(server.ctx, await paymentRow(server, checkout.transactionId));
    assert.equal((await paymentRow(server, checkout.transactionId)).status, 'pending');
    return checkout;
  }

  /**
   * The bank declines the processing PaymentIntent; Kassa has not read it yet. Returns the payment's
   * events and the count of Kassa's cancels before, for `declinedAndFailed`.
   */
  async function bankDeclines(checkout: OpenedCheckout) {
    const eventsBefore = await eventStatuses(server.ctx, checkout.transactionId);
    const cancelsBefore = cancelsSent(fake);
    fake.ledger.settleProcessing(checkout.intentId, false);
    return { eventsBefore, cancelsBefore };
  }

  /**
   * The bank declined the pending payment and a read has seen it: the PaymentIntent canceled at Stripe
   * (`cancelsMade` cancels since `cancelsBefore`), the payment failed with one event that carries the
   * bank's declined attempt, nothing settled, no conflict. The page's client secret can no longer confirm
   * it, and later reads and expiry rounds change nothing.
   */
  async function declinedAndFailed(
    checkout: OpenedCheckout,
    eventsBefore: string[],
    cancelsBefore: number,
    cancelsMade = 1,
  ) {
    const row = await paymentRow(server, checkout.transactionId);
    assert.equal(row.status, 'failed');
    assert.equal(row.provider_conflict, null);
    assert.equal(await settlementsOf(server.ctx, row.id), 0);
    assert.equal(fake.ledger.intent(checkout.intentId).status, 'canceled');
    assert.equal(cancelsSent(fake) - cancelsBefore, cancelsMade);
    assert.deepEqual(await eventStatuses(server.ctx, checkout.transactionId), [...eventsBefore, 'failed']);
    const attempts = await server.ctx.db
      .selectFrom('deposit_attempts')
      .select(['status', 'error_message'])
      .where('payment_id', '=', row.id)
      .execute();
    assert.deepEqual(
      attempts.map((attempt) => [attempt.status, attempt.error_message]),
      [['requires_payment_method', 'The payment was declined by the bank.']],
      "the bank's decline is the payment's attempt",
    );
    const late = await fake.confirmInBrowser(checkout.clientSecret, 'pm_card_visa');
    assert.equal(late.status, 400, 'a canceled PaymentIntent cannot be confirmed');
    await syncDuePayments(server.ctx);
    offsetMs += DAY + 1000;
    assert.equal(await expireCheckouts(server.ctx), 0);
    assert.equal((await paymentRow(server, checkout.transactionId)).status, 'failed');
    assert.deepEqual(await eventStatuses(server.ctx, checkout.transactionId), [...eventsBefore, 'failed']);
  }

  test('processing at Stripe when the checkout expires, then the bank declines: the sync loop cancels the PaymentIntent, then fails the payment with one event', async () => {
    const checkout = await openedCheckout();
    await fake.confirmInBrowser(checkout.clientSecret, 'pm_fake_processing');
    offsetMs += DAY + 1000;
    await expiredPending(checkout);
    const { eventsBefore, cancelsBefore } = await bankDeclines(checkout);
    assert.ok((await syncDuePayments(server.ctx)) >= 1);
    await declinedAndFailed(checkout, eventsBefore, cancelsBefore);
  });

  test("the bank declines before the checkout expires: Stripe's payment_failed webhook cancels the PaymentIntent and fails the payment at once; the checkout reads FAILED", async () => {
    const checkout = await pendingCheckout();
    const { eventsBefore, cancelsBefore } = await bankDeclines(checkout);
    const failed = await deliver(
      server,
      fake,
      eventAbout(fake, 'payment_intent.payment_failed', checkout.intentId),
    );
    assert.equal(failed.status, 200, failed.text);
    assert.equal(failed.body.payments, 1);
    // The cancel's own webhook reads the PaymentIntent canceled: the payment is failed already.
    const canceled = await deliver(
      server,
      fake,
      eventAbout(fake, 'payment_intent.canceled', checkout.intentId),
    );
    assert.equal(canceled.body.payments, 0);
    const status = await syncStatus(server, checkout.token);
    assert.deepEqual([status.body.status, status.body.payment_status], ['FAILED', 'failed']);
    await declinedAndFailed(checkout, eventsBefore, cancelsBefore);
  });

  test('reads at once after the bank declines (two sync loops and the webhook): one move to failed, one event, the PaymentIntent canceled', async () => {
    const checkout = await pendingCheckout();
    const { eventsBefore, cancelsBefore } = await bankDeclines(checkout);
    const target = await paymentRow(server, checkout.transactionId);
    const event = eventAbout(fake, 'payment_intent.payment_failed', checkout.intentId);
    const [first, second, webhook] = await Promise.all([
      syncPayment(server.ctx, target),
      syncPayment(server.ctx, target),
      deliver(server, fake, event),
    ]);
    assert.equal(webhook.status, 200, webhook.text);
    assert.equal(Number(first) + Number(second) + Number(webhook.body.payments), 1, 'one read moved it');
    // Each read that found it pending asked Stripe to cancel (those after the first are refused, and read
    // it canceled); one that found it failed already asked nothing.
    const made = cancelsSent(fake) - cancelsBefore;
    assert.ok(made >= 1 && made <= 3, `${made} cancels`);
    await declinedAndFailed(checkout, eventsBefore, cancelsBefore, made);
  });

  /**
   * A pending checkout whose bank declines; just before Kassa's cancel reaches Stripe, the customer's
   * browser confirms the PaymentIntent again with `paymentMethod`. The sync loop reads the decline and
   * asks Stripe to cancel, once: refused, the PaymentIntent left `status`.
   */
  async function confirmedAgainAtTheCancel(paymentMethod: string, status: 'succeeded' | 'processing') {
    const checkout = await pendingCheckout();
    fake.ledger.settleProcessing(checkout.intentId, false);
    fake.interleave('POST', CANCEL_PATH, () => {
      fake.ledger.confirmPaymentIntent(checkout.intentId, { payment_method: paymentMethod });
    });
    const cancelsBefore = cancelsSent(fake);
    await syncDuePayments(server.ctx);
    assert.equal(cancelsSent(fake) - cancelsBefore, 1, 'Kassa asked Stripe to cancel, once: refused');
    assert.equal(fake.ledger.intent(checkout.intentId).status, status);
    return checkout;
  }

  test('the customer pays by card between the read of the decline and the cancel: Stripe refuses the cancel, the payment is paid, settled once, never failed', async () => {
    const checkout = await confirmedAgainAtTheCancel('pm_card_visa', 'succeeded');
    await paidOnce(checkout);
  });

  test('the customer pays by bank debit again between the read of the decline and the cancel: Stripe refuses the cancel, the payment stays pending; the bank paying it makes it paid, settled once', async () => {
    const checkout = await confirmedAgainAtTheCancel('pm_fake_processing', 'processing');
    assert.equal((await paymentRow(server, checkout.transactionId)).status, 'pending');
    await bankPays(checkout);
  });

  test("an operator cancels the declined PaymentIntent in Stripe's Dashboard just before Kassa's cancel: Stripe refuses Kassa's cancel, the payment is failed once, no error", async () => {
    const checkout = await pendingCheckout();
    const eventsBefore = await eventStatuses(server.ctx, checkout.transactionId);
    fake.ledger.settleProcessing(checkout.intentId, false);
    fake.interleave('POST', CANCEL_PATH, () => {
      fake.ledger.cancelPaymentIntent(checkout.intentId, { cancellation_reason: 'requested_by_customer' });
    });
    const cancelsBefore = cancelsSent(fake);
    assert.ok((await syncDuePayments(server.ctx)) >= 1);
    await declinedAndFailed(checkout, eventsBefore, cancelsBefore);
  });

  test("a cancel Stripe does not answer after the decline: the payment stays pending and the stop is the reconciler's (reads leave it), whose read cancels the PaymentIntent and fails the payment", async () => {
    const checkout = await pendingCheckout();
    const { eventsBefore } = await bankDeclines(checkout);
    const silent = fake.fail({ method: 'POST', path: CANCEL_PATH, mode: '500', times: 2 });
    await syncDuePayments(server.ctx);
    silent.stop();
    const operationKey = `kassa-cancel-${checkout.transactionId}`;
    assert.equal((await operationByKey(server.ctx.db, operationKey))?.state, 'unknown');
    assert.equal((await paymentRow(server, checkout.transactionId)).status, 'pending');
    assert.equal(fake.ledger.intent(checkout.intentId).status, 'requires_payment_method');
    // The read's attempt is recorded (the bank's decline), the payment still pending.
    const withDecline = await eventStatuses(server.ctx, checkout.transactionId);
    assert.deepEqual(withDecline, [...eventsBefore, 'pending']);

    // Stripe answers again; the sync loop's reads leave the stop to the reconciler.
    const cancelsBefore = cancelsSent(fake);
    await syncDuePayments(server.ctx);
    assert.equal(cancelsSent(fake), cancelsBefore);
    assert.equal((await paymentRow(server, checkout.transactionId)).status, 'pending');

    offsetMs += SCHEDULE_MS[0];
    assert.ok((await reconcile(server.ctx)) >= 1);
    const done = await operationByKey(server.ctx.db, operationKey);
    assert.deepEqual([done?.state, done?.outcome], ['done', 'succeeded'], 'the stop took effect');
    await declinedAndFailed(checkout, withDecline, cancelsBefore);
  });

  /**
   * The bank declines a pending payment and Stripe does not answer the read's cancel (`landed`: made at
   * Stripe, its answer lost); the reconciler never gets an answer either, and the stop is flagged.
   */
  async function declineStopFlagged(landed: boolean) {
    const checkout = await pendingCheckout();
    fake.ledger.settleProcessing(checkout.intentId, false);
    const mode = landed ? '500_after_success' : '500';
    const silent = fake.fail({ method: 'POST', path: CANCEL_PATH, mode, times: 2 });
    await syncDuePayments(server.ctx);
    silent.stop();
    const operationKey = `kassa-cancel-${checkout.transactionId}`;
    await flagAfterLastRead(server.ctx, operationKey, 'Stripe did not answer');
    assert.equal((await paymentRow(server, checkout.transactionId)).status, 'pending');
    return {
      ...checkout,
      operationKey,
      eventsBefore: await eventStatuses(server.ctx, checkout.transactionId),
    };
  }

  test('a flagged stop of a declined payment whose cancel landed: kassa operation resolve reads the PaymentIntent canceled and records the payment failed, never canceled', async () => {
    const checkout = await declineStopFlagged(true);
    assert.equal(fake.ledger.intent(checkout.intentId).status, 'canceled');
    const cancelsBefore = cancelsSent(fake);
    const resolved = await resolveFlaggedOperation(server.ctx, operationHandlers, checkout.operationKey);
    assert.deepEqual(
      [resolved.outcome, resolved.payment_status, resolved.waiting],
      ['succeeded', 'failed', null],
    );
    await declinedAndFailed(checkout, checkout.eventsBefore, cancelsBefore, 0);
  });

  test('a flagged stop of a declined payment whose cancel never reached Stripe: resolve records it still open, and the next read cancels the PaymentIntent and fails the payment', async () => {
    const checkout = await declineStopFlagged(false);
    assert.equal(fake.ledger.intent(checkout.intentId).status, 'requires_payment_method');
    // Flagged, the stop is no read's to make.
    let cancelsBefore = cancelsSent(fake);
    await syncDuePayments(server.ctx);
    assert.equal(cancelsSent(fake), cancelsBefore);
    const resolved = await resolveFlaggedOperation(server.ctx, operationHandlers, checkout.operationKey);
    assert.deepEqual([resolved.outcome, resolved.payment_status], ['pending', 'pending']);
    assert.equal(resolved.waiting, 'still processing at the provider');
    assert.equal(cancelsSent(fake), cancelsBefore, 'the resolution only reads');
    cancelsBefore = cancelsSent(fake);
    assert.ok((await syncDuePayments(server.ctx)) >= 1);
    await declinedAndFailed(checkout, checkout.eventsBefore, cancelsBefore);
  });
  // The customer cancels on the hosted page while Kassa still holds the payment `pending`, but the bank
  // has declined it: before any read saw it, between Kassa's cancel of the PaymentIntent and the failed
  // payment, or with that stop handed to the reconciler. The page is shown the outcome (200 FAILED, the
  // failed URL), as sync-status would show it, never a 409 "awaiting the bank's decision".
  const FAILED_URL = 'https://shop.example/failed';
  const customerCancel = (token: string) => call<Json>(server, 'POST', `/api/checkout/${token}/cancel/`);
  const declinedGap = async () => {
    const checkout = await pendingCheckout({ failedUrl: FAILED_URL, cancelUrl: 'https://shop.example/c' });
    const eventsBefore = await eventStatuses(server.ctx, checkout.transactionId);
    fake.ledger.settleProcessing(checkout.intentId, false);
    return { checkout, eventsBefore, cancelsBefore: cancelsSent(fake) };
  };
  /** The cancel's answer is the outcome: FAILED, the payment failed, the checkout not canceled. */
  const answeredFailed = async (answer: { status: number; body: Json; text: string }, token: string) => {
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(
      [answer.body.status, answer.body.payment_status, answer.body.redirect_url],
      ['FAILED', 'failed', FAILED_URL],
    );
    const session = await server.ctx.db
      .selectFrom('checkout_sessions')
      .select('canceled_at')
      .where('public_id', '=', answer.body.checkout_id as string)
      .executeTakeFirstOrThrow();
    assert.equal(session.canceled_at, null, "the failure is the bank's, not the customer's cancel");
    assert.equal((await syncStatus(server, token)).body.status, 'FAILED');
    const again = await customerCancel(token);
    assert.deepEqual([again.status, again.body.detail], [410, 'This checkout has failed; start a new one.']);
  };

  test("the customer cancels after the bank declined, before any read saw it: the cancel's read stops the PaymentIntent and fails the payment; the answer is FAILED, not 409", async () => {
    const { checkout, eventsBefore, cancelsBefore } = await declinedGap();
    await answeredFailed(await customerCancel(checkout.token), checkout.token);
    await declinedAndFailed(checkout, eventsBefore, cancelsBefore);
  });

  test('the customer cancels between the PaymentIntent canceled at Stripe and the payment failed: the answer is FAILED, one event, no second cancel', async () => {
    const { checkout, eventsBefore, cancelsBefore } = await declinedGap();
    // The read that saw the decline has canceled the PaymentIntent; its failed payment is not recorded yet.
    fake.ledger.cancelPaymentIntent(checkout.intentId, { cancellation_reason: 'abandoned' });
    await answeredFailed(await customerCancel(checkout.token), checkout.token);
    await declinedAndFailed(checkout, eventsBefore, cancelsBefore, 0);
  });

  test("the customer cancels while the decline's stop is the reconciler's (Stripe did not answer it): the cancel makes the stop and answers FAILED; the reconciler's read then settles it", async () => {
    const { checkout, cancelsBefore } = await declinedGap();
    const silent = fake.fail({ method: 'POST', path: CANCEL_PATH, mode: '500', times: 2 });
    await syncDuePayments(server.ctx);
    silent.stop();
    const operationKey = `kassa-cancel-${checkout.transactionId}`;
    assert.equal((await operationByKey(server.ctx.db, operationKey))?.state, 'unknown');
    const withDecline = await eventStatuses(server.ctx, checkout.transactionId);
    const cancelsSilent = cancelsSent(fake) - cancelsBefore;
    await answeredFailed(await customerCancel(checkout.token), checkout.token);
    offsetMs += SCHEDULE_MS[0];
    assert.ok((await reconcile(server.ctx)) >= 1);
    const done = await operationByKey(server.ctx.db, operationKey);
    assert.deepEqual([done?.state, done?.outcome], ['done', 'succeeded']);
    await declinedAndFailed(checkout, withDecline, cancelsBefore, cancelsSilent + 1);
  });

  test("the customer cancels while Stripe does not answer the decline's stop: 503, nothing changed; the retry answers FAILED", async () => {
    const { checkout, eventsBefore, cancelsBefore } = await declinedGap();
    const silent = fake.fail({ method: 'POST', path: CANCEL_PATH, mode: '500', times: 2 });
    const unanswered = await customerCancel(checkout.token);
    silent.stop();
    assert.equal(unanswered.status, 503, unanswered.text);
    assert.equal((await paymentRow(server, checkout.transactionId)).status, 'pending');
    assert.deepEqual(await eventStatuses(server.ctx, checkout.transactionId), eventsBefore);
    await answeredFailed(await customerCancel(checkout.token), checkout.token);
    await declinedAndFailed(checkout, eventsBefore, cancelsBefore, 3);
  });

  test('a cancel while the bank is still deciding is a 409 that changes nothing and asks Stripe to cancel nothing', async () => {
    const checkout = await pendingCheckout();
    const eventsBefore = await eventStatuses(server.ctx, checkout.transactionId);
    const cancelsBefore = cancelsSent(fake);
    const refused = await customerCancel(checkout.token);
    assert.deepEqual(
      [refused.status, refused.body.detail],
      [409, "This checkout's payment is awaiting the bank's decision and cannot be canceled."],
    );
    assert.equal(cancelsSent(fake), cancelsBefore);
    assert.equal((await paymentRow(server, checkout.transactionId)).status, 'pending');
    assert.deepEqual(await eventStatuses(server.ctx, checkout.transactionId), eventsBefore);
    await bankPays(checkout);
  });
});
