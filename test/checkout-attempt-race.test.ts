// A card attempt that waits for another attempt's transaction must see what that transaction did. The
// pay route checks the checkout first (a read, no lock), then locks the session and reads its payment
// again before it records an operation: if the other attempt failed the payment for good (the fifth
// decline) or paid it in between, this attempt is refused and nothing reaches the provider. On
// PostgreSQL the payment must be read by its own statement after the lock: a locking read that waited
// returns the latest version only of the rows it locks, so a payment joined into it would still show
// `processing` (helper-20's review of 9964bc2).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { openCheckoutPaymentUnlessOpen } from '../src/modules/checkout/provider-form.ts';
import { lockSession, updateSession } from '../src/modules/checkout/store.ts';
import { lockPayment } from '../src/modules/payments/store.ts';
import { movePayment } from '../src/modules/payments/transitions.ts';
import { CARDS, createCheckout, pay, paymentRow } from './helpers/checkout.ts';
import { someoneWaitsOnALock } from './helpers/locks.ts';
import { createTestKey, createTestMerchant, startTestServer, type TestServer } from './helpers/server.ts';

describe('a card attempt waiting on another attempt', () => {
  let server: TestServer;
  let key: string;
  before(async () => {
    server = await startTestServer({ worker: false });
    key = await createTestKey(server, await createTestMerchant(server, 'Race Shop'));
  });
  after(() => server.close());

  test('sees the payment the other attempt failed, and is refused without reaching the provider', async () => {
    const checkout = await createCheckout(server, key);
    const declined = await pay(server, checkout.token, CARDS.declined);
    assert.equal(declined.body.payment_status, 'processing', declined.text);
    const payment = await paymentRow(server, declined.body.transaction_id as string);
    const session = await server.ctx.db
      .selectFrom('checkout_sessions')
      .select('id')
      .where('public_id', '=', checkout.checkout_id)
      .executeTakeFirstOrThrow();
    const operations = async () =>
      (
        await server.ctx.db
          .selectFrom('provider_operations')
          .select('id')
          .where('subject_id', '=', payment.id)
          .execute()
      ).length;
    const before = await operations();

    // The other attempt's last transaction, held open: the session locked, the payment failed (as the
    // fifth decline fails it), the session's attempt lock cleared.
    const { promise: released, resolve: release } = Promise.withResolvers<void>();
    const { promise: lockedYet, resolve: locked } = Promise.withResolvers<void>();
    const other = server.ctx.db.transaction().execute(async (trx) => {
      await lockSession(trx, session.id);
      const now = new Date().toISOString();
      assert.ok(await movePayment(trx, payment.id, 'processing', 'failed', now));
      await updateSession(trx, session.id, { attempt_locked_until: null, updated_at: now });
      locked();
      await released;
    });
    await lockedYet;
    const attempt = pay(server, checkout.token, CARDS.success);
    await someoneWaitsOnALock(server.ctx.db, 'the second attempt (the session lock)');
    release();
    await other;
    const answer = await attempt;
    assert.equal(answer.status, 410, answer.text);
    assert.equal((await paymentRow(server, payment.public_id)).status, 'failed');
    assert.equal(await operations(), before, 'no operation was recorded for the refused attempt');
  });

  test("a card attempt's answer waits for a payment another transaction holds, and is recorded once", async () => {
    const checkout = await createCheckout(server, key);
    const declined = await pay(server, checkout.token, CARDS.declined);
    assert.equal(declined.body.payment_status, 'processing', declined.text);
    const payment = await paymentRow(server, declined.body.transaction_id as string);

    // Another transaction (a sync, the reconciler) holds the payment's row while the attempt's answer
    // comes back: on PostgreSQL the attempt's one-statement read of the payment and its attempts does
    // not wait but fails, and the answer is recorded again, locking first (pay.ts, recordAnswer).
    const { promise: released, resolve: release } = Promise.withResolvers<void>();
    const { promise: lockedYet, resolve: locked } = Promise.withResolvers<void>();
    const other = server.ctx.db.transaction().execute(async (trx) => {
      await lockPayment(trx, payment.id);
      locked();
      await released;
    });
    await lockedYet;
    const attempt = pay(server, checkout.token, CARDS.success);
    try {
      await someoneWaitsOnALock(server.ctx.db, "the attempt's answer (the payment's lock)");
    } finally {
      release();
      await other;
    }
    const answer = await attempt;
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.body.payment_status, 'paid', answer.text);
    assert.equal(answer.body.transaction_id, payment.public_id);
    const attempts = await server.ctx.db
      .selectFrom('deposit_attempts')
      .select('status')
      .where('payment_id', '=', payment.id)
      .orderBy('id')
      .execute();
    assert.equal(attempts.length, 2, 'the declined attempt and the paid one, each recorded once');
    assert.notEqual(attempts[0].status, attempts[1].status);
    const settlements = await server.ctx.db
      .selectFrom('wallet_movements')
      .select('amount')
      .where('kind', '=', 'settlement')
      .where('reference_id', '=', payment.id)
      .execute();
    assert.equal(settlements.length, 1, 'the wallet is credited once');
    assert.equal((await paymentRow(server, payment.public_id)).status, 'paid');
  });

  test('a first attempt whose payment another attempt opened meanwhile pays that payment', async () => {
    const checkout = await createCheckout(server, key);
    const session = await server.ctx.db
      .selectFrom('checkout_sessions')
      .selectAll()
      .where('public_id', '=', checkout.checkout_id)
      .executeTakeFirstOrThrow();
    // The other attempt's first transaction, held open: the session locked and its payment opened. This
    // attempt reads the checkout (no payment yet, on PostgreSQL) and waits for the session; when it gets
    // it, its insert of the payment writes nothing and it goes on with the payment that is there.
    const { promise: released, resolve: release } = Promise.withResolvers<void>();
    const { promise: lockedYet, resolve: locked } = Promise.withResolvers<void>();
    let opened: string | undefined;
    const other = server.ctx.db.transaction().execute(async (trx) => {
      await lockSession(trx, session.id);
      locked();
      await released;
      const provider = server.ctx.providers.forEnvironment(session.environment);
      const now = new Date().toISOString();
      opened = (await openCheckoutPaymentUnlessOpen(server.ctx, trx, session, provider, now))?.public_id;
    });
    await lockedYet;
    const attempt = pay(server, checkout.token, CARDS.success);
    try {
      await someoneWaitsOnALock(server.ctx.db, 'the first attempt (the session lock)');
    } finally {
      release();
      await other;
    }
    const answer = await attempt;
    assert.ok(opened, 'the other transaction opened the payment');
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.body.payment_status, 'paid', answer.text);
    assert.equal(answer.body.transaction_id, opened, 'the payment the other attempt opened');
    const payments = await server.ctx.db
      .selectFrom('payments')
      .select('id')
      .where('checkout_session_id', '=', session.id)
      .execute();
    assert.equal(payments.length, 1);
  });
});
