// The Stripe connector through contract v2, against the fake Stripe: Kassa's idempotency keys on every
// write (a replay is one object; other parameters under a key are refused), customers and saved cards
// (SetupIntents confirmed in the Element), off-session charges as a renewal makes them, their
// authentication_required and saved-but-declined answers, a confirm refused (the PaymentIntent in the
// wrong state) answered with the PaymentIntent as it stands, and the faults: a 500 before or after the
// charge is recorded (the SDK's retry under the same key finds the first), and a timeout after it (the
// outcome is unknown; the charge is found by reference, never made twice).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { callProvider } from '../src/provider/operations/perform.ts';
import type { StripeProvider } from '../src/provider/stripe/stripe.ts';
import { outcomeOfError } from '../src/provider/stripe/transport.ts';
import { ProviderUnavailableError } from '../src/provider/types.ts';
import { createCheckout } from './helpers/checkout.ts';
import type { FakeStripe } from './helpers/fake-stripe/server.ts';
import { operationsOf, reconcile } from './helpers/provider-checks.ts';
import { call, createTestKey, createTestMerchant, DB_KIND, type TestServer } from './helpers/server.ts';
import { type Json, startWithStripe } from './helpers/stripe.ts';

const amounts = { environment: 'production' as const, amountMinor: 1990n, currency: 'USD', metadata: {} };

describe(`the Stripe connector against the fake Stripe (${DB_KIND})`, () => {
  let fake: FakeStripe;
  let server: TestServer;
  let close: () => Promise<void>;
  let stripe: StripeProvider;
  let offsetMs = 0;
  let counter = 0;
  const next = (prefix: string) => `${prefix}${++counter}${Date.now()}`;
  before(async () => {
    ({ fake, server, close } = await startWithStripe({
      worker: false,
      clock: () => new Date(Date.now() + offsetMs),
      env: { KASSA_PROVIDER_TIMEOUT_MS: '700' },
    }));
    stripe = server.ctx.providers.named('stripe') as StripeProvider;
  });
  after(() => close());

  const intentsFor = (reference: string) =>
    [...fake.ledger.intents.values()].filter((intent) => intent.metadata.kassa_transaction_id === reference);

  async function customerWithCard(method: string, authenticate?: boolean) {
    const reference = next('SU');
    const { customerId } = await stripe.createCustomer({
      idempotencyKey: `kassa-customer-${reference}`,
      reference,
      environment: 'production',
      email: 'ada@example.test',
      name: 'Ada',
      metadata: {},
    });
    const setup = await stripe.setupCard({
      idempotencyKey: `kassa-setup-${reference}`,
      reference,
      environment: 'production',
      customerId,
      card: null,
      metadata: {},
    });
    assert.equal(setup.outcome.status, 'requires_action', 'the card is collected in the Element');
    const confirm = await fake.confirmInBrowser(setup.clientSecret as string, method);
    assert.equal(confirm.status, 200, JSON.stringify(confirm.body));
    if (authenticate !== undefined) fake.ledger.authenticate(setup.setup?.setupId as string, authenticate);
    const after = await stripe.getSetup(setup.setup?.setupId as string);
    return { customerId, setup: after, reference };
  }

  function renew(
    customerId: string,
    paymentMethodId: string,
    reference: string,
    n: number,
    providerPaymentId: string | null = null,
  ) {
    return stripe.chargeSavedCard({
      ...amounts,
      metadata: { kassa_transaction_id: reference },
      idempotencyKey: `kassa-renew-${reference}-${n}`,
      payment: { reference, providerPaymentId },
      customerId,
      paymentMethodId,
    });
  }

  test('the same key and parameters replay one object; other parameters under the key are refused', async () => {
    const reference = next('TX');
    const input = {
      ...amounts,
      idempotencyKey: `kassa-pay-${reference}`,
      reference,
      metadata: { kassa_transaction_id: reference },
    };
    const first = await stripe.openPayment(input);
    const again = await stripe.openPayment(input);
    assert.equal(again.payment.providerPaymentId, first.payment.providerPaymentId);
    assert.equal(intentsFor(reference).length, 1);
    // Through ctx.providers a failed call is a ProviderUnavailableError (a 503 to a waiting request), with
    // Stripe's own error as its cause.
    const thrown = await stripe.openPayment({ ...input, amountMinor: 999n }).catch((error: unknown) => error);
    assert.ok(thrown instanceof ProviderUnavailableError);
    const other = thrown.cause;
    assert.ok(other instanceof Error);
    assert.equal((other as { type?: string }).type, 'StripeIdempotencyError');
    assert.equal(
      outcomeOfError(other).status,
      'unknown',
      'what the first request did is not known from this answer',
    );
    assert.equal(intentsFor(reference).length, 1);
  });

  test('a saved card (SetupIntent in the Element) is charged off-session under kassa-renew keys', async () => {
    const { customerId, setup, reference } = await customerWithCard('pm_card_visa');
    assert.equal(setup?.status, 'succeeded');
    const saved = setup?.savedCard;
    assert.ok(saved);
    assert.deepEqual([saved.brand, saved.last4, saved.customerId], ['visa', '4242', customerId]);
    const charged = await renew(customerId, saved.paymentMethodId, reference, 1);
    assert.deepEqual(charged.outcome, { status: 'succeeded' });
    assert.equal(charged.payment?.outcome, 'PAYMENT_SUCCESS');
    const replay = await renew(customerId, saved.paymentMethodId, reference, 1);
    assert.equal(replay.payment?.providerPaymentId, charged.payment?.providerPaymentId);
    assert.equal(intentsFor(reference).length, 1);
    assert.equal(fake.ledger.chargesOf(charged.payment?.providerPaymentId as string).length, 1);
  });

  test('findSetup reads a setup back by its own key, never another setup of the same reference', async () => {
    const { customerId, setup, reference } = await customerWithCard('pm_card_visa');
    assert.equal(setup?.status, 'succeeded');
    const signupKey = `kassa-setup-${reference}`;
    assert.equal((await stripe.findSetup(signupKey, customerId))?.setupId, setup?.setupId);
    // An update-card page's save under its own key that Stripe never received: not found, although
    // the signup's SetupIntent carries the same reference.
    assert.equal(await stripe.findSetup(`kassa-setup-${reference}-CS1-1`, customerId), null);
    // Given the reference too (for SetupIntents made before keys were in their metadata): still not
    // found, the signup's carries a key of its own.
    assert.equal(await stripe.findSetup(`kassa-setup-${reference}-CS1-1`, customerId, reference), null);
    const page = await stripe.setupCard({
      idempotencyKey: `kassa-setup-${reference}-CS1-1`,
      reference,
      environment: 'production',
      customerId,
      card: null,
      metadata: {},
    });
    const found = await stripe.findSetup(`kassa-setup-${reference}-CS1-1`, customerId);
    assert.equal(found?.setupId, page.setup?.setupId);
    assert.notEqual(found?.setupId, setup?.setupId);
    assert.equal((await stripe.findSetup(signupKey, customerId))?.setupId, setup?.setupId);
  });

  test('authentication_required: a card that always asks for 3-D Secure is declined off-session, not retryable', async () => {
    const { customerId, setup, reference } = await customerWithCard('pm_card_authenticationRequired', true);
    assert.equal(setup?.status, 'succeeded');
    const charge = await renew(customerId, setup?.savedCard?.paymentMethodId as string, reference, 1);
    assert.deepEqual(charge.outcome, {
      status: 'failed',
      code: 'authentication_required',
      message: 'Your card was declined. This transaction requires authentication.',
      retryable: false,
    });
    assert.equal(charge.payment?.outcome, 'PROCESSING');
  });

  test('a card authenticated at setup is charged off-session without 3-D Secure', async () => {
    const { customerId, setup, reference } = await customerWithCard(
      'pm_card_authenticationRequiredOnSetup',
      true,
    );
    const charge = await renew(customerId, setup?.savedCard?.paymentMethodId as string, reference, 1);
    assert.deepEqual(charge.outcome, { status: 'succeeded' });
  });

  test('saved but declined off-session: retried on the same PaymentIntent under the next key', async () => {
    const { customerId, setup, reference } = await customerWithCard('pm_card_chargeCustomerFail');
    const method = setup?.savedCard?.paymentMethodId as string;
    const first = await renew(customerId, method, reference, 1);
    assert.deepEqual(
      [
        first.outcome.status,
        (first.outcome as { code: string }).code,
        (first.outcome as { retryable: boolean }).retryable,
      ],
      ['failed', 'generic_decline', true],
    );
    const retry = await renew(customerId, method, reference, 2, first.payment?.providerPaymentId ?? null);
    assert.equal(retry.outcome.status, 'failed');
    assert.equal(retry.payment?.providerPaymentId, first.payment?.providerPaymentId);
    assert.equal(retry.payment?.attempts.length, 2);
  });

  test('a confirm Stripe refuses (the PaymentIntent in the wrong state) comes back with the PaymentIntent as it stands: succeeded, processing or canceled', async () => {
    const refusal = (outcome: unknown) => {
      const failed = outcome as { status: string; code?: string; providerError?: boolean };
      return [failed.status, failed.code, failed.providerError];
    };
    const paid = await customerWithCard('pm_card_visa');
    const method = paid.setup?.savedCard?.paymentMethodId as string;
    const charged = await renew(paid.customerId, method, paid.reference, 1);
    assert.deepEqual(charged.outcome, { status: 'succeeded' });
    const intent = charged.payment?.providerPaymentId ?? null;
    const again = await renew(paid.customerId, method, paid.reference, 2, intent);
    assert.deepEqual(refusal(again.outcome), ['failed', 'payment_intent_unexpected_state', undefined]);
    assert.match(
      (again.outcome as { message: string }).message,
      /You cannot confirm this PaymentIntent because it has already succeeded/,
    );
    assert.deepEqual([again.payment?.providerPaymentId, again.payment?.outcome], [intent, 'PAYMENT_SUCCESS']);
    assert.equal(fake.ledger.chargesOf(intent ?? '').length, 1, 'no second charge');

    const slow = await customerWithCard('pm_fake_processing');
    const slowMethod = slow.setup?.savedCard?.paymentMethodId as string;
    const pending = await renew(slow.customerId, slowMethod, slow.reference, 1);
    assert.deepEqual(pending.outcome, { status: 'pending' });
    const whilePending = await renew(
      slow.customerId,
      slowMethod,
      slow.reference,
      2,
      pending.payment?.providerPaymentId ?? null,
    );
    assert.deepEqual(refusal(whilePending.outcome), ['failed', 'payment_intent_unexpected_state', undefined]);
    assert.equal(whilePending.payment?.outcome, 'CHECKOUT_PENDING');

    const stopped = await customerWithCard('pm_card_chargeCustomerFail');
    const stoppedMethod = stopped.setup?.savedCard?.paymentMethodId as string;
    const declined = await renew(stopped.customerId, stoppedMethod, stopped.reference, 1);
    const stoppedIntent = declined.payment?.providerPaymentId ?? '';
    // A refusal that does not name the PaymentIntent (a payment method Stripe does not know): the
    // PaymentIntent Kassa confirmed is read all the same.
    const unnamed = await renew(stopped.customerId, 'pm_gone', stopped.reference, 2, stoppedIntent);
    assert.deepEqual(refusal(unnamed.outcome), ['failed', 'resource_missing', undefined]);
    assert.deepEqual(
      [unnamed.payment?.providerPaymentId, unnamed.payment?.outcome],
      [stoppedIntent, 'PROCESSING'],
    );
    assert.equal((await stripe.cancelPayment(stoppedIntent))?.outcome, 'CANCELED');
    const afterCancel = await renew(stopped.customerId, stoppedMethod, stopped.reference, 3, stoppedIntent);
    // Canceled (final, never charged): the refusal is the try's failure as `canceled`, and the caller
    // charges a new payment on its next try (renew.ts).
    assert.deepEqual(refusal(afterCancel.outcome), ['failed', 'canceled', undefined]);
    assert.equal(afterCancel.payment?.outcome, 'CANCELED');
  });

  test('a cancel of a PaymentIntent canceled outside Kassa (or succeeded) is refused as Stripe refuses it, and cancelPayment answers it as it stands, no error', async () => {
    const open = async () => {
      const reference = next('TX');
      const opened = await stripe.openPayment({
        ...amounts,
        idempotencyKey: `kassa-pay-${reference}`,
        reference,
        metadata: { kassa_transaction_id: reference },
      });
      return opened.payment.providerPaymentId;
    };
    const cancelAtStripe = (intentId: string) =>
      fetch(`${fake.url}/v1/payment_intents/${intentId}/cancel`, {
        method: 'POST',
        headers: { authorization: `Bearer ${fake.secretKey}` },
      });
    const canceledByHand = await open();
    // An operator cancels it in Stripe's Dashboard.
    assert.equal((await cancelAtStripe(canceledByHand)).status, 200);
    const refused = await cancelAtStripe(canceledByHand);
    assert.equal(refused.status, 400);
    const { error } = (await refused.json()) as { error: Json & { payment_intent: Json } };
    assert.deepEqual(
      [error.type, error.code, error.doc_url, error.message, error.payment_intent.status],
      [
        'invalid_request_error',
        'payment_intent_unexpected_state',
        'https://stripe.com/docs/error-codes/payment-intent-unexpected-state',
        'You cannot cancel this PaymentIntent because it has a status of canceled. Only a PaymentIntent with one of the following statuses may be canceled: requires_payment_method, requires_capture, requires_confirmation, requires_action, processing.',
        'canceled',
      ],
    );
    const cancelsBefore = fake.requests.filter((request) => request.path.endsWith('/cancel')).length;
    const stopped = await stripe.cancelPayment(canceledByHand);
    assert.equal(stopped?.outcome, 'CANCELED', 'the refusal is read: the PaymentIntent is canceled');
    assert.equal(
      fake.requests.filter((request) => request.path.endsWith('/cancel')).length,
      cancelsBefore + 1,
    );

    const paid = await open();
    fake.ledger.confirmPaymentIntent(paid, { payment_method: 'pm_card_visa' });
    assert.equal((await stripe.cancelPayment(paid))?.outcome, 'PAYMENT_SUCCESS');
    assert.equal(fake.ledger.intent(paid).status, 'succeeded', 'a success is never canceled');
  });

  test('a 500 before or after the charge: the SDK retries under the same key, and one charge is made', async () => {
    const { customerId, setup, reference } = await customerWithCard('pm_card_visa');
    fake.fail({ method: 'POST', path: /^\/v1\/payment_intents$/, mode: '500', times: 1 });
    const before = await renew(customerId, setup?.savedCard?.paymentMethodId as string, reference, 1);
    assert.deepEqual(before.outcome, { status: 'succeeded' });
    const later = next('TX');
    fake.fail({ method: 'POST', path: /^\/v1\/payment_intents$/, mode: '500_after_success', times: 1 });
    const afterFault = await renew(customerId, setup?.savedCard?.paymentMethodId as string, later, 1);
    assert.deepEqual(afterFault.outcome, { status: 'succeeded' });
    assert.equal(intentsFor(later).length, 1);
    const keys = fake.requests.filter((request) => request.idempotencyKey === `kassa-renew-${later}-1`);
    assert.equal(keys.length, 2, 'the retry carried the same key');
  });

  test('a timeout after the charge is recorded: unknown, then found by reference, never a second charge', async () => {
    const { customerId, setup, reference } = await customerWithCard('pm_card_visa');
    fake.fail({ method: 'POST', path: /^\/v1\/payment_intents$/, mode: 'timeout_after_success', times: 5 });
    const call = await callProvider(
      server.ctx.config,
      { idempotency_key: `kassa-renew-${reference}-1` },
      () => renew(customerId, setup?.savedCard?.paymentMethodId as string, reference, 1),
    );
    assert.equal(call.answered, false);
    const found = await stripe.findPayment(reference);
    assert.equal(found?.outcome, 'PAYMENT_SUCCESS');
    assert.equal(intentsFor(reference).length, 1);
    assert.equal(fake.ledger.chargesOf(found?.providerPaymentId as string).length, 1);
  });

  test("the hosted step's PaymentIntent whose answer was lost is found by the reconciler; one PaymentIntent", async () => {
    const merchant = await createTestMerchant(server, 'Lost Answer Shop');
    const key = await createTestKey(server, merchant);
    const checkout = await createCheckout(server, key);
    fake.fail({ method: 'POST', path: /^\/v1\/payment_intents$/, mode: 'timeout_after_success', times: 4 });
    const lost = await call<Json>(server, 'GET', `/api/checkout/${checkout.token}/`);
    assert.equal(lost.status, 200, lost.text);
    assert.equal((lost.body.provider as Json).client_secret, null, 'no secret yet: the page waits');
    const transactionId = lost.body.transaction_id as string;
    const payment = await server.ctx.db
      .selectFrom('payments')
      .selectAll()
      .where('public_id', '=', transactionId)
      .executeTakeFirstOrThrow();
    const [operation] = await operationsOf(server.ctx, 'payment', payment.id);
    assert.deepEqual(
      [operation.kind, operation.idempotency_key, operation.state],
      ['payment_open', `kassa-pay-${transactionId}`, 'unknown'],
    );
    offsetMs += 60_000;
    assert.equal(await reconcile(server.ctx), 1);
    const [settled] = await operationsOf(server.ctx, 'payment', payment.id);
    assert.deepEqual([settled.state, settled.outcome], ['done', 'succeeded']);
    const page = await call<Json>(server, 'GET', `/api/checkout/${checkout.token}/`);
    assert.match(((page.body.provider as Json).client_secret as string) ?? '', /^pi_\w+_secret_/);
    assert.equal(intentsFor(transactionId).length, 1, 'never a second PaymentIntent');
  });
});
