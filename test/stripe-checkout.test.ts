// The hosted checkout with KASSA_PROVIDER=stripe, against the fake Stripe: one PaymentIntent per payment
// (opened when the hosted step is first read), confirmed in the Payment Element (card data never reaches
// Kassa), declines and 3-D Secure as deposit attempts, a processing payment method, completion by
// sync-status, by the worker's sync and by webhook, and refunds (full, partial, failed) sent in the
// charge currency; a refund Stripe fails after it succeeded is flagged. The sandbox keeps the simulator.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { GENERIC_DECLINE } from '../src/modules/checkout/card-testing.ts';
import { syncDuePayments } from '../src/modules/payments/sync.ts';
import { settleRefundConflict } from '../src/modules/refunds/conflict-settle.ts';
import { syncRefunds } from '../src/modules/refunds/sync.ts';
import { card, createCheckout, eventsOf, pay } from './helpers/checkout.ts';
import type { FakeStripe } from './helpers/fake-stripe/server.ts';
import { eventStatuses, settlementsOf } from './helpers/provider-checks.ts';
import { call, createTestKey, DB_KIND, type Merchant, type TestServer } from './helpers/server.ts';
import {
  deliver,
  eventAbout,
  hostedStep,
  type Json,
  payInElement,
  startShopWithStripe,
} from './helpers/stripe.ts';
import { assertLedgerBalanced } from './helpers/wallet-fixtures.ts';

describe(`the hosted checkout on Stripe (${DB_KIND})`, () => {
  let fake: FakeStripe;
  let server: TestServer;
  let close: () => Promise<void>;
  let merchant: Merchant;
  let key: string;
  before(async () => {
    ({ fake, server, close, merchant, key } = await startShopWithStripe('Stripe Shop', { worker: false }));
  });
  after(() => close());

  const paymentOf = (publicId: string) =>
    server.ctx.db
      .selectFrom('payments')
      .selectAll()
      .where('public_id', '=', publicId)
      .executeTakeFirstOrThrow();

  test('the hosted step opens one PaymentIntent; the Payment Element pays it; the return syncs it paid and settled', async () => {
    const checkout = await createCheckout(server, key, {
      currency: 'EUR',
      successUrl: 'https://shop.test/ok',
    });
    const first = await hostedStep(server, checkout.token);
    assert.equal(first.provider.name, 'stripe');
    assert.equal(first.provider.publishable_key, fake.publishableKey);
    assert.match(first.provider.client_secret ?? '', /^pi_\w+_secret_/);
    const again = await hostedStep(server, checkout.token);
    assert.equal(again.provider.client_secret, first.provider.client_secret, 'never a second PaymentIntent');
    const transactionId = first.page.transaction_id as string;
    const intents = [...fake.ledger.intents.values()].filter(
      (intent) => intent.metadata.kassa_checkout_id === checkout.checkout_id,
    );
    assert.equal(intents.length, 1);
    const [intent] = intents;
    assert.deepEqual(
      [intent.amount, intent.currency, intent.metadata],
      [
        5000,
        'eur',
        {
          kassa_checkout_id: checkout.checkout_id,
          kassa_transaction_id: transactionId,
          kassa_environment: 'production',
        },
      ],
    );
    const create = fake.requests.find(
      (request) => request.method === 'POST' && request.path === '/v1/payment_intents',
    );
    assert.equal(create?.idempotencyKey, `kassa-pay-${transactionId}`);
    const { confirm, sync } = await payInElement(server, fake, checkout.token, 'pm_card_visa');
    assert.equal(confirm.status, 200);
    assert.deepEqual(
      [sync.body.status, sync.body.payment_status, sync.body.redirect_url],
      ['SUCCESS', 'paid', 'https://shop.test/ok'],
    );
    const row = await paymentOf(transactionId);
    assert.deepEqual(
      [row.provider, row.provider_payment_id, row.deposit_status, row.simulated],
      ['stripe', intent.id, 'succeeded', 0],
    );
    assert.equal(
      await settlementsOf(server.ctx, row.id),
      1,
      'a succeeded PaymentIntent credits the wallet at once',
    );
    const page = (await hostedStep(server, checkout.token)).page;
    const attempts = page.attempts as Json[];
    assert.deepEqual(
      attempts.map((attempt) => [
        attempt.status,
        attempt.paymentId,
        (attempt.paymentId as string).startsWith('pi_'),
      ]),
      [['succeeded', intent.id, true]],
    );
    assert.deepEqual(await eventStatuses(server.ctx, transactionId), ['processing', 'paid']);
    // The transaction shows simulated: false (Stripe moved the money).
    const api = await call<Json>(server, 'GET', `/api/transactions/${transactionId}/`, { apiKey: key });
    assert.equal(api.body.simulated, false);
    await assertLedgerBalanced(server.ctx, merchant.organizationId);
  });

  test("card fields posted to /pay/ are refused: the card is entered in Stripe's form only", async () => {
    const checkout = await createCheckout(server, key);
    const response = await call(server, 'POST', `/api/checkout/${checkout.token}/pay/`, { body: card() });
    assert.equal(response.status, 400);
    assert.match((response.body as Json).detail as string, /^card_number: .*payment provider's form/);
  });

  test('a decline is an attempt; the customer retries in the Element and pays', async () => {
    const checkout = await createCheckout(server, key);
    const declined = await payInElement(
      server,
      fake,
      checkout.token,
      'pm_card_chargeDeclinedInsufficientFunds',
    );
    assert.equal(declined.confirm.status, 402);
    assert.deepEqual(
      [declined.sync.body.status, declined.sync.body.payment_status],
      ['CHECKOUT_PENDING', 'processing'],
    );
    const paid = await payInElement(server, fake, checkout.token, 'pm_card_visa');
    assert.equal(paid.sync.body.payment_status, 'paid');
    const events = await eventsOf(server, checkout.order_id);
    const last = events.at(-1) as Json;
    assert.deepEqual(
      (last.depositAttempts as Json[]).map((attempt) => [attempt.status, attempt.errorMessage]),
      [
        ['succeeded', null],
        ['requires_payment_method', 'Your card has insufficient funds.'],
      ],
    );
    assert.deepEqual(
      events.map((event) => event.status),
      ['processing', 'processing', 'paid'],
    );
  });

  test('3-D Secure: requires_action; a failed authentication is an attempt; an approved one pays (by webhook)', async () => {
    const checkout = await createCheckout(server, key);
    const started = await payInElement(server, fake, checkout.token, 'pm_card_authenticationRequired');
    assert.equal(started.sync.body.payment_status, 'processing');
    const waiting = (await hostedStep(server, checkout.token)).page;
    assert.deepEqual(waiting.next_action, { type: 'stripe_sdk' });
    assert.equal((waiting.attempts as Json[])[0].status, 'requires_action');
    const intentId = (await paymentOf(waiting.transaction_id as string)).provider_payment_id as string;
    fake.ledger.authenticate(intentId, false);
    await call(server, 'POST', '/api/checkout/sync-status/', { body: { token: checkout.token } });
    const failed = (await hostedStep(server, checkout.token)).page;
    // The customer is told what any decline tells them (card testing); the merchant's events keep the reason.
    assert.deepEqual(
      (failed.attempts as Json[]).map((attempt) => [attempt.status, attempt.errorMessage]),
      [['requires_payment_method', GENERIC_DECLINE]],
    );
    const merchantView = (await eventsOf(server, checkout.order_id)).at(-1) as Json;
    assert.deepEqual(
      (merchantView.depositAttempts as Json[]).map((attempt) => attempt.errorMessage),
      ['The 3-D Secure authentication failed.'],
    );
    // The customer tries again; this time the bank's challenge is passed, and Stripe's webhook says so.
    await payInElement(server, fake, checkout.token, 'pm_card_authenticationRequired');
    fake.ledger.authenticate(intentId, true);
    const delivered = await deliver(server, fake, eventAbout(fake, 'payment_intent.succeeded', intentId));
    assert.equal(delivered.status, 200, delivered.text);
    const row = await paymentOf(waiting.transaction_id as string);
    assert.equal(row.status, 'paid', 'applied at once, not on the next sync pass');
    const statuses = (await eventsOf(server, checkout.order_id)).map((event) => event.status);
    assert.equal(statuses.filter((status) => status === 'paid').length, 1);
    assert.equal(await settlementsOf(server.ctx, row.id), 1);
  });

  test("a processing payment method makes the payment pending; the worker's sync completes it", async () => {
    const checkout = await createCheckout(server, key);
    const started = await payInElement(server, fake, checkout.token, 'pm_fake_processing');
    assert.deepEqual(
      [started.sync.body.status, started.sync.body.payment_status],
      ['CHECKOUT_PENDING', 'pending'],
    );
    const row = await paymentOf(started.sync.body.transaction_id as string);
    fake.ledger.settleProcessing(row.provider_payment_id as string);
    assert.ok((await syncDuePayments(server.ctx)) >= 1);
    assert.equal((await paymentOf(row.public_id)).status, 'paid');
    assert.deepEqual(await eventStatuses(server.ctx, row.public_id), ['processing', 'pending', 'paid']);
  });

  test('the sandbox keeps the simulator: its checkouts take card fields', async () => {
    const sandboxKey = await createTestKey(server, merchant, { environment: 'sandbox' });
    const checkout = await createCheckout(server, sandboxKey, {}, '/sandbox/api');
    const { provider } = await hostedStep(server, checkout.token);
    assert.deepEqual(provider, { name: 'simulator' });
    const paid = await pay(server, checkout.token);
    assert.equal(paid.body.payment_status, 'paid');
  });

  async function paidPayment(currency: 'USD' | 'EUR' = 'USD') {
    const checkout = await createCheckout(server, key, { currency });
    const { sync } = await payInElement(server, fake, checkout.token, 'pm_card_visa');
    return paymentOf(sync.body.transaction_id as string);
  }

  function refund(publicId: string, body: Json) {
    return call<Json>(server, 'POST', `/api/transactions/${publicId}/refund/`, { apiKey: key, body });
  }

  test('refunds: a partial then the rest, sent in the charge currency (TTC), each once', async () => {
    // With 20 % tax the HT basis differs from what the customer paid: Stripe gets back what was paid.
    await server.ctx.db
      .updateTable('organizations')
      .set({ tax_rate_bp: 2000 })
      .where('id', '=', merchant.organizationId)
      .execute();
    try {
      const payment = await paidPayment('EUR');
      const partial = await refund(payment.public_id, { amount: '20.00', reason: 'one item back' });
      assert.equal(partial.status, 200, partial.text);
      assert.equal(partial.body.status, 'completed');
      const sent = [...fake.ledger.refunds.values()].filter(
        (known) => known.payment_intent === payment.provider_payment_id,
      );
      assert.equal(sent.length, 1);
      assert.deepEqual(
        [sent[0].amount, sent[0].reason, sent[0].metadata?.kassa_reason],
        [2000, 'requested_by_customer', 'one item back'],
      );
      assert.equal(partial.body.amount_in_cents, Math.round((2000 * payment.gross_ht) / payment.gross));
      assert.equal((await paymentOf(payment.public_id)).status, 'paid');
      const rest = await refund(payment.public_id, { reason: 'the rest' });
      assert.equal(rest.body.status, 'completed');
      const after = await paymentOf(payment.public_id);
      assert.deepEqual([after.status, after.refunded_amount], ['refunded', payment.gross]);
      const charge = fake.ledger.chargesOf(payment.provider_payment_id as string)[0];
      assert.deepEqual([charge.amount_refunded, charge.refunded], [payment.gross, true]);
      const keys = fake.requests
        .filter((request) => request.path === '/v1/refunds' && request.method === 'POST')
        .map((request) => request.idempotencyKey);
      assert.ok(keys.every((k) => /^kassa-refund-RF[0-9A-Za-z]{16}$/.test(k ?? '')));
      assert.equal(new Set(keys).size, keys.length);
    } finally {
      await server.ctx.db
        .updateTable('organizations')
        .set({ tax_rate_bp: 0 })
        .where('id', '=', merchant.organizationId)
        .execute();
    }
    await assertLedgerBalanced(server.ctx, merchant.organizationId);
  });

  test('a refund pending at Stripe completes by the sync loop; one that fails (refund.failed) releases the hold', async () => {
    fake.ledger.refundMode = 'pending';
    try {
      const payment = await paidPayment();
      const pending = await refund(payment.public_id, { amount: '10.00', reason: 'pending first' });
      assert.equal(pending.body.status, 'processing');
      const [atStripe] = [...fake.ledger.refunds.values()].filter(
        (known) => known.payment_intent === payment.provider_payment_id,
      );
      fake.ledger.settleRefund(atStripe.id, 'succeeded');
      assert.equal(await syncRefunds(server.ctx), 1);
      const failing = await refund(payment.public_id, { amount: '5.00', reason: 'this one fails' });
      assert.equal(failing.body.status, 'processing');
      const second = [...fake.ledger.refunds.values()].find(
        (known) => known.metadata?.kassa_reason === 'this one fails',
      );
      assert.ok(second);
      fake.ledger.settleRefund(second.id, 'failed');
      const delivered = await deliver(server, fake, eventAbout(fake, 'refund.failed', second.id), {
        sign: 'hmac',
      });
      assert.deepEqual(delivered.body, { received: true, duplicate: false, payments: 0, refunds: 1 });
      const refunds = await server.ctx.db
        .selectFrom('refunds')
        .select(['status', 'error_message'])
        .where('payment_id', '=', payment.id)
        .orderBy('id')
        .execute();
      assert.deepEqual(
        refunds.map((row) => row.status),
        ['completed', 'failed'],
      );
      assert.match(refunds[1].error_message ?? '', /failed at Stripe \(expired_or_canceled_card\)/);
      const after = await paymentOf(payment.public_id);
      assert.deepEqual([after.status, after.refunded_amount], ['paid', 1000]);
    } finally {
      fake.ledger.refundMode = 'succeeded';
    }
    await assertLedgerBalanced(server.ctx, merchant.organizationId);
  });

  test('a refund Stripe fails after it succeeded (charge.refund.updated) stays completed and is flagged; booking Stripe’s outcome fails it and gives the wallet the money back', async () => {
    const payment = await paidPayment();
    const done = await refund(payment.public_id, { reason: 'refunded, then bounced' });
    assert.equal(done.body.status, 'completed', done.text);
    const id = done.body.id as string;
    const atStripe = [...fake.ledger.refunds.values()].find(
      (known) => known.metadata?.kassa_refund_id === id,
    );
    assert.ok(atStripe);
    fake.ledger.reverseRefund(atStripe.id);
    const delivered = await deliver(server, fake, eventAbout(fake, 'charge.refund.updated', atStripe.id));
    assert.equal(delivered.status, 200, delivered.text);
    assert.equal(delivered.body.refunds, 1);
    const row = await server.ctx.db
      .selectFrom('refunds')
      .selectAll()
      .where('public_id', '=', id)
      .executeTakeFirstOrThrow();
    assert.deepEqual([row.status, row.provider_conflict_status], ['completed', 'failed']);
    assert.match(row.provider_conflict ?? '', /\(The refund failed at Stripe \(lost_or_stolen_card\)\)/);
    const again = await refund(payment.public_id, { reason: 'once more' });
    assert.equal(again.status, 400, again.text);
    assert.match(String(again.body.detail), /^A refund of this payment is under review/);
    // refund.failed about the same refund, delivered as well: the conflict is already recorded.
    const failed = await deliver(server, fake, eventAbout(fake, 'refund.failed', atStripe.id));
    assert.equal(failed.body.refunds, 0);
    assert.equal((await settleRefundConflict(server.ctx, id, 'provider')).status, 'failed');
    const repaid = await paymentOf(payment.public_id);
    assert.deepEqual([repaid.status, repaid.refunded_amount], ['paid', 0]);
    const retry = await refund(payment.public_id, { reason: 'refund the customer for real' });
    assert.equal(retry.body.status, 'completed', retry.text);
    await assertLedgerBalanced(server.ctx, merchant.organizationId);
  });
});
