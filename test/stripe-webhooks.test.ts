// Stripe's webhooks at POST /api/provider/webhooks/stripe/: signed with the SDK's own test helper and with
// an independent node:crypto HMAC; a duplicate or an out-of-order event changes nothing twice; a bad,
// stale or missing Stripe-Signature is a 400 {detail} that changes nothing; events Kassa does not handle
// are acknowledged; a body over 512 KiB (not the public 64 KiB: Stripe's events embed whole objects) is a
// 413 {detail} that changes nothing.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { STRIPE_WEBHOOK_BODY_LIMIT } from '../src/http/public.ts';
import { createCheckout } from './helpers/checkout.ts';
import type { FakeStripe } from './helpers/fake-stripe/server.ts';
import { signWithHmac } from './helpers/fake-stripe/server.ts';
import { eventStatuses, settlementsOf } from './helpers/provider-checks.ts';
import { call, DB_KIND, type TestServer } from './helpers/server.ts';
import { deliver, eventAbout, hostedStep, type Json, startShopWithStripe } from './helpers/stripe.ts';

describe(`Stripe webhooks (${DB_KIND})`, () => {
  let fake: FakeStripe;
  let server: TestServer;
  let close: () => Promise<void>;
  let key: string;
  before(async () => {
    ({ fake, server, close, key } = await startShopWithStripe('Webhook Shop', { worker: false }));
  });
  after(() => close());

  /** A checkout whose PaymentIntent the customer paid in the Element; Kassa has not heard yet. */
  async function paidAtStripe(method = 'pm_card_visa') {
    const checkout = await createCheckout(server, key);
    const { page, provider } = await hostedStep(server, checkout.token);
    await fake.confirmInBrowser(provider.client_secret as string, method);
    const payment = await server.ctx.db
      .selectFrom('payments')
      .selectAll()
      .where('public_id', '=', page.transaction_id as string)
      .executeTakeFirstOrThrow();
    return { checkout, payment, intentId: payment.provider_payment_id as string };
  }

  const statusOf = async (id: number) =>
    (
      await server.ctx.db
        .selectFrom('payments')
        .select('status')
        .where('id', '=', id)
        .executeTakeFirstOrThrow()
    ).status;
  const eventCount = async () =>
    Number(
      (
        await server.ctx.db
          .selectFrom('events')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  /** A delivery answered 200 and applied at once: the payment re-read from Stripe, paid. */
  const assertApplied = async (response: Awaited<ReturnType<typeof deliver>>, paymentId: number) => {
    assert.equal(response.status, 200, response.text);
    assert.deepEqual(response.body, { received: true, duplicate: false, payments: 1, refunds: 0 });
    assert.equal(await statusOf(paymentId), 'paid');
  };

  test('payment_intent.succeeded signed with the SDK helper is applied at once', async () => {
    const { payment, intentId } = await paidAtStripe();
    assert.equal(await statusOf(payment.id), 'processing');
    const response = await deliver(server, fake, eventAbout(fake, 'payment_intent.succeeded', intentId), {
      sign: 'sdk',
    });
    await assertApplied(response, payment.id);
  });

  test('the same event signed with an independent HMAC is accepted too (and is a duplicate)', async () => {
    const { payment, intentId } = await paidAtStripe();
    const event = eventAbout(fake, 'payment_intent.succeeded', intentId);
    const first = await deliver(server, fake, event, { sign: 'hmac' });
    assert.deepEqual(first.body, { received: true, duplicate: false, payments: 1, refunds: 0 });
    const before = await eventCount();
    const again = await deliver(server, fake, event, { sign: 'sdk' });
    assert.deepEqual(again.body, { received: true, duplicate: true, payments: 0, refunds: 0 });
    assert.equal(await eventCount(), before, 'a duplicate changes nothing');
    assert.equal(await settlementsOf(server.ctx, payment.id), 1);
  });

  test('out of order: an older event arriving after the newer one changes nothing', async () => {
    const { payment, intentId } = await paidAtStripe('pm_card_authenticationRequired');
    fake.ledger.authenticate(intentId, true);
    await deliver(server, fake, eventAbout(fake, 'payment_intent.succeeded', intentId));
    assert.equal(await statusOf(payment.id), 'paid');
    const before = await eventCount();
    // Stripe delivers the older requires_action (and created) events late: Kassa re-fetches the PaymentIntent,
    // which is succeeded, so nothing moves back and nothing is emitted twice.
    for (const type of ['payment_intent.requires_action', 'payment_intent.created']) {
      const response = await deliver(server, fake, eventAbout(fake, type, intentId));
      assert.equal(response.status, 200);
    }
    assert.equal(await statusOf(payment.id), 'paid');
    assert.equal(await eventCount(), before);
    assert.deepEqual(
      (await eventStatuses(server.ctx, payment.public_id)).filter((status) => status === 'paid'),
      ['paid'],
    );
  });

  test('a bad, stale, tampered or missing Stripe-Signature is refused with 400 and changes nothing', async () => {
    const { payment, intentId } = await paidAtStripe();
    const event = eventAbout(fake, 'payment_intent.succeeded', intentId);
    const before = await eventCount();
    const wrongSecret = await deliver(server, fake, event, { secret: 'whsec_not-the-secret' });
    assert.equal(wrongSecret.status, 400);
    assert.match(
      wrongSecret.body.detail as string,
      /^Stripe-Signature: No signatures found matching the expected signature/,
    );
    const stale = await deliver(server, fake, event, { timestamp: Math.floor(Date.now() / 1000) - 301 });
    assert.equal(stale.status, 400);
    assert.match(stale.body.detail as string, /^Stripe-Signature: .*tolerance/i);
    const payload = JSON.stringify(event);
    const tampered = await call<Json>(server, 'POST', '/api/provider/webhooks/stripe/', {
      body: payload.replace('"livemode":false', '"livemode":true'),
      headers: { 'stripe-signature': signWithHmac(payload, fake.webhookSecret) },
    });
    assert.equal(tampered.status, 400);
    const missing = await call<Json>(server, 'POST', '/api/provider/webhooks/stripe/', { body: payload });
    assert.deepEqual(
      [missing.status, missing.body],
      [400, { detail: 'Stripe-Signature: the header is missing.' }],
    );
    assert.equal(await statusOf(payment.id), 'processing');
    assert.equal(await eventCount(), before);
    const stored = await server.ctx.db
      .selectFrom('provider_events')
      .select('id')
      .where('event_id', '=', event.id)
      .execute();
    assert.deepEqual(stored, [], 'a refused event is not remembered either');
  });

  test('several v1 signatures (a secret being rolled): one valid one is enough', async () => {
    const { payment, intentId } = await paidAtStripe();
    const payload = JSON.stringify(eventAbout(fake, 'payment_intent.succeeded', intentId));
    const t = Math.floor(Date.now() / 1000);
    const valid = signWithHmac(payload, fake.webhookSecret, t).split(',')[1];
    const header = `t=${t},v1=${'0'.repeat(64)},${valid}`;
    const response = await call<Json>(server, 'POST', '/api/provider/webhooks/stripe/', {
      body: payload,
      headers: { 'stripe-signature': header },
    });
    assert.equal(response.status, 200, response.text);
    assert.equal(await statusOf(payment.id), 'paid');
  });

  test('events Kassa does not act on are acknowledged and ignored', async () => {
    const { intentId } = await paidAtStripe();
    const charge = eventAbout(
      fake,
      'charge.succeeded',
      (fake.ledger.chargesOf(intentId)[0] as { id: string }).id,
    );
    const response = await deliver(server, fake, charge);
    assert.deepEqual(response.body, { received: true, duplicate: false, payments: 0, refunds: 0 });
  });

  /** The event's JSON with a `padding` field that makes it exactly `bytes` long (signed as it is). */
  const sized = (event: object, bytes: number) => {
    const bare = JSON.stringify({ ...event, padding: '' });
    return JSON.stringify({ ...event, padding: 'x'.repeat(bytes - Buffer.byteLength(bare)) });
  };
  const storedEvents = (eventId: string) =>
    server.ctx.db.selectFrom('provider_events').select('id').where('event_id', '=', eventId).execute();

  test('a signed event one byte over 512 KiB is a 413 {detail} that writes nothing; one of exactly 512 KiB is applied', async () => {
    const { payment, intentId } = await paidAtStripe();
    const event = eventAbout(fake, 'payment_intent.succeeded', intentId);
    const before = await eventCount();
    const over = await deliver(server, fake, event, { body: sized(event, STRIPE_WEBHOOK_BODY_LIMIT + 1) });
    assert.deepEqual([over.status, over.body], [413, { detail: 'Request body is too large.' }]);
    assert.equal(await statusOf(payment.id), 'processing');
    assert.equal(await eventCount(), before);
    assert.deepEqual(await storedEvents(event.id), [], 'not remembered: its next delivery is handled');

    const limit = await deliver(server, fake, event, { body: sized(event, STRIPE_WEBHOOK_BODY_LIMIT) });
    await assertApplied(limit, payment.id);
  });

  test("an event over the public 64 KiB that Stripe may send is applied: the PaymentIntent's metadata at Stripe's maximum, every character escaped", async () => {
    const { payment, intentId } = await paidAtStripe();
    const event = eventAbout(fake, 'payment_intent.succeeded', intentId);
    const intent = event.data.object as { metadata: Record<string, string> };
    // 50 keys in all, of 40 characters, each value 500 characters that JSON escapes as \u00XX (6 bytes).
    const metadata = { ...intent.metadata };
    for (let i = 0; Object.keys(metadata).length < 50; i++)
      metadata[`dashboard_note_${i}_`.padEnd(40, 'x')] = '\u0001'.repeat(500);
    const body = JSON.stringify({ ...event, data: { ...event.data, object: { ...intent, metadata } } });
    assert.ok(Buffer.byteLength(body) > 128 * 1024, `${Buffer.byteLength(body)} bytes`);
    await assertApplied(await deliver(server, fake, event, { body }), payment.id);
  });
});
