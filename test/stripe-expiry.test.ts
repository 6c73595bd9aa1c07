// Giving a payment up with a provider whose form is its own: when the checkout expires or the customer
// cancels, Kassa stops the PaymentIntent at Stripe first, so a browser cannot still confirm it; a payment
// that succeeded meanwhile wins; and a charge the provider reports after Kassa gave the payment up is
// flagged for review instead of moving anything back. The simulator's waiting challenge ends the same way.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { expireCheckouts } from '../src/modules/payments/sync.ts';
import { CARDS, createCheckout, pay } from './helpers/checkout.ts';
import type { FakeStripe } from './helpers/fake-stripe/server.ts';
import { settlementsOf } from './helpers/provider-checks.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  DB_KIND,
  type Merchant,
  type TestServer,
} from './helpers/server.ts';
import { deliver, eventAbout, hostedStep, type Json, startWithStripe } from './helpers/stripe.ts';

const DAY = 86_400_000;

describe(`expiry and cancel stop the provider payment (${DB_KIND})`, () => {
  let fake: FakeStripe;
  let server: TestServer;
  let close: () => Promise<void>;
  let merchant: Merchant;
  let key: string;
  let sandboxKey: string;
  let offsetMs = 0;
  before(async () => {
    ({ fake, server, close } = await startWithStripe({
      worker: false,
      clock: () => new Date(Date.now() + offsetMs),
    }));
    merchant = await createTestMerchant(server, 'Expiry Shop');
    key = await createTestKey(server, merchant);
    sandboxKey = await createTestKey(server, merchant, { environment: 'sandbox' });
  });
  after(() => close());

  const paymentOf = (publicId: string) =>
    server.ctx.db
      .selectFrom('payments')
      .selectAll()
      .where('public_id', '=', publicId)
      .executeTakeFirstOrThrow();

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
