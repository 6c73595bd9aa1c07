// A charge whose answer is lost: the provider recorded (and charged) the attempt, but the process died,
// or the call timed out, before Kassa recorded the answer. The payment is left processing with no
// provider id, and the next pay, sync-status or sync pass must find it by its reference, without a
// second charge. The crash matrix reaches this only by the chance timing of a kill; here each path is
// driven on purpose: step 1 of the hosted pay (the payment opened, the attempt reserved, its write-ahead
// operation row committed) and the provider's charge run as pay.ts runs them, and step 3 (recording
// the answer) never happens. The reconciler reads such a row back after its first delay (1 min).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { toBigInt } from '../src/lib/money.ts';
import { openCheckoutPayment } from '../src/modules/checkout/provider-form.ts';
import { lockSession, updateSession } from '../src/modules/checkout/store.ts';
import { recordOperation } from '../src/provider/operations/store.ts';
import { simulatorDb } from '../src/provider/simulator/store.ts';
import {
  CARDS,
  createCheckout,
  eventsOf,
  type Json,
  pay,
  paymentRow,
  syncStatus,
} from './helpers/checkout.ts';
import { operationsOf, reconcile } from './helpers/provider-checks.ts';
import {
  createTestKey,
  createTestMerchant,
  DB_KIND,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';

describe(`a charge whose answer was lost is found by its reference (${DB_KIND})`, () => {
  let server: TestServer;
  let apiKey: string;
  let now = Date.now();
  before(async () => {
    server = await startTestServer({ worker: false, clock: () => new Date(now) });
    apiKey = await createTestKey(server, await createTestMerchant(server, 'Lost Answers'));
  });
  after(() => server.close());

  /** A checkout whose payment the provider charged while Kassa never heard back; returns its ids. */
  async function chargeWithLostAnswer() {
    const checkout = await createCheckout(server, apiKey);
    const { ctx } = server;
    const session = await ctx.db
      .selectFrom('checkout_sessions')
      .selectAll()
      .where('public_id', '=', checkout.checkout_id)
      .executeTakeFirstOrThrow();
    const provider = ctx.providers.forEnvironment('production');
    // pay.ts step 1: the payment opened (processing), the attempt reserved and its operation row
    // committed, in one transaction.
    const { payment, operation } = await ctx.db.transaction().execute(async (trx) => {
      const nowIso = new Date(now).toISOString();
      const locked = await lockSession(trx, session.id);
      await updateSession(trx, locked.id, { attempt_locked_until: new Date(now + 60_000).toISOString() });
      const opened = await openCheckoutPayment(ctx, trx, locked, provider, nowIso);
      const recorded = await recordOperation(
        trx,
        {
          kind: 'payment_attempt',
          idempotencyKey: `kassa-pay-${opened.public_id}-1`,
          provider: provider.name,
          environment: locked.environment,
          organizationId: locked.organization_id,
          subjectType: 'payment',
          subjectId: opened.id,
          reference: opened.public_id,
        },
        nowIso,
        ctx.config.reconcileScheduleMs,
      );
      return { payment: opened, operation: recorded };
    });
    // Step 2: the provider charges the card. Its answer is then lost with the process (no step 3).
    const write = await provider.chargeCard({
      idempotencyKey: operation.idempotency_key,
      payment: { reference: payment.public_id, providerPaymentId: null },
      environment: 'production',
      amountMinor: toBigInt(payment.gross),
      currency: payment.currency,
      refundBasisMinor: toBigInt(payment.gross_ht),
      card: {
        number: '4242424242424242',
        expMonth: 12,
        expYear: 2099,
        cvc: '123',
        holderName: 'Ada Lovelace',
      },
      simulate: null,
      metadata: {},
    });
    const charged = {
      outcome: write.outcome.status,
      providerPaymentId: write.payment?.providerPaymentId ?? '',
    };
    assert.equal(charged.outcome, 'succeeded');
    const row = await paymentRow(server, payment.public_id);
    assert.equal(row.status, 'processing');
    assert.equal(row.provider_payment_id, null);
    return { checkout, publicId: payment.public_id, providerPaymentId: charged.providerPaymentId };
  }

  async function assertChargedOnce(publicId: string, providerPaymentId: string) {
    const row = await paymentRow(server, publicId);
    assert.equal(row.status, 'paid');
    assert.equal(row.provider_payment_id, providerPaymentId);
    assert.ok(row.settled_at !== null, 'the wallet was credited');
    const charges = await simulatorDb(server.ctx.db)
      .selectFrom('sim_payments')
      .select('attempts')
      .where('reference', '=', publicId)
      .execute();
    assert.equal(charges.length, 1, 'one provider payment for the reference');
    assert.equal((JSON.parse(charges[0].attempts) as unknown[]).length, 1, 'one charge, never a second');
    const settlements = await server.ctx.db
      .selectFrom('wallet_movements')
      .select('id')
      .where('kind', '=', 'settlement')
      .where('reference_public_id', '=', publicId)
      .execute();
    assert.equal(settlements.length, 1);
  }

  test('sync-status finds it by reference and records the success once', async () => {
    const { checkout, publicId, providerPaymentId } = await chargeWithLostAnswer();
    const synced = await syncStatus(server, checkout.token);
    assert.equal(synced.body.status, 'SUCCESS', synced.text);
    assert.equal(synced.body.transaction_id, publicId);
    await assertChargedOnce(publicId, providerPaymentId);
    assert.equal((await syncStatus(server, checkout.token)).body.status, 'SUCCESS');
    const statuses = (await eventsOf(server, checkout.order_id)).map((event: Json) => event.status);
    assert.deepEqual(statuses, ['processing', 'paid']);
  });

  test('the customer paying again finds the charge instead of making a second one', async () => {
    const { checkout, publicId, providerPaymentId } = await chargeWithLostAnswer();
    // The dead process's attempt lock runs out; the customer, who saw an error, tries again.
    now += 61_000;
    const again = await pay(server, checkout.token, CARDS.otherValid);
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.payment_status, 'paid');
    assert.equal(again.body.transaction_id, publicId);
    await assertChargedOnce(publicId, providerPaymentId);
  });

  test('the reconciler finds it at its first read (1 min after the call), and not before', async () => {
    const { publicId, providerPaymentId } = await chargeWithLostAnswer();
    const id = Number((await paymentRow(server, publicId)).id);
    // (The earlier tests' rows, read back by sync-status or a second pay, are the reconciler's too: only
    // this payment's row is looked at here.)
    now += 60_000 - 1000;
    await reconcile(server.ctx);
    assert.equal(
      (await paymentRow(server, publicId)).status,
      'processing',
      'too soon: the call may be in flight',
    );
    assert.notEqual((await operationsOf(server.ctx, 'payment', id))[0].state, 'done');
    now += 2000;
    await reconcile(server.ctx);
    await assertChargedOnce(publicId, providerPaymentId);
    const [settled] = await operationsOf(server.ctx, 'payment', id);
    assert.deepEqual([settled.state, settled.outcome], ['done', 'succeeded']);
  });
});
