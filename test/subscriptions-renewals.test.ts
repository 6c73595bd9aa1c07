// Renewals on both databases: the renewal worker charges each period once through the simulator's saved
// card (off-session), as an ordinary payment (ledger credit, transaction.status_changed); the dunning
// schedule on a sandbox test clock (tries at +0, +1, +3, +7, +14 days, then canceled payment_failed); a
// decline no retry can fix; a success on the third try; periods skipped while the worker was down; many
// concurrent renewal passes against 100 due subscriptions; cancel against a renewal in flight.
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { applyProviderState } from '../src/modules/payments/transitions.ts';
import { runRenewals } from '../src/modules/subscriptions/renew.ts';
import { reconcileOperation } from '../src/provider/operations/reconciler.ts';
import { simulatorDb } from '../src/provider/simulator/store.ts';
import { signSimulatorWebhook } from '../src/provider/simulator/webhook-signature.ts';
import { operationHandlers } from '../src/worker/loops.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  DB_KIND,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import { insertSubscription, subscribeWithSavedCard } from './helpers/subscriptions.ts';

interface Cycle {
  period_index: number;
  period_start: string;
  period_end: string;
  status: string;
  attempts: number;
  next_attempt_at: string | null;
  transaction_id: string | null;
  amount: string;
}

interface Subscription {
  id: string;
  status: string;
  current_period_start: string;
  current_period_end: string;
  canceled_at: string | null;
  cancel_reason: string | null;
  cycles: Cycle[];
}

const DAY = 86_400_000;
const GOOD = '4242424242424242';
const INSUFFICIENT = '4000000000009995';
const AUTH_ALWAYS = '4000002760003184';

describe(`subscription renewals (${DB_KIND})`, () => {
  let server: TestServer;
  let owner: Merchant;
  let monthly: string;
  let sandboxMonthly: string;
  let sandboxWeekly: string;

  before(async () => {
    server = await startTestServer({ worker: false });
    owner = await createTestMerchant(server, 'Renewals');
    const plan = async (body: Record<string, unknown>) => {
      const response = await call<{ id: string }>(server, 'POST', '/api/subscriptions/plans/', {
        token: owner.token,
        body,
      });
      assert.equal(response.status, 201, response.text);
      return response.body.id;
    };
    monthly = await plan({ name: 'Monthly', amount: '12.50', interval: 'month' });
    sandboxMonthly = await plan({
      name: 'Sandbox monthly',
      amount: '9.99',
      interval: 'month',
      environment: 'sandbox',
    });
    sandboxWeekly = await plan({
      name: 'Sandbox weekly',
      amount: '3.00',
      interval: 'week',
      environment: 'sandbox',
    });
  });
  after(() => server.close());

  const detail = async (id: string) => {
    const response = await call<Subscription>(server, 'GET', `/api/subscriptions/${id}/`, {
      token: owner.token,
    });
    assert.equal(response.status, 200, response.text);
    return response.body;
  };
  const advance = async (id: string, days: number) => {
    const response = await call<Subscription>(server, 'POST', `/api/subscriptions/${id}/advance-clock/`, {
      token: owner.token,
      body: { days },
    });
    assert.equal(response.status, 200, response.text);
    return response.body;
  };
  const sandboxSubscription = (cardNumber: string, anchor = new Date(Date.UTC(2031, 0, 31, 9, 30))) =>
    subscribeWithSavedCard(server, {
      organizationId: owner.organizationId,
      planPublicId: sandboxMonthly,
      cardNumber,
      anchorAt: anchor.toISOString(),
      testClock: true,
    });
  const paymentsOf = (subscriptionId: number) =>
    server.ctx.db
      .selectFrom('payments')
      .selectAll()
      .where('subscription_id', '=', subscriptionId)
      .orderBy('id')
      .execute();
  const settlements = async (paymentIds: number[]) =>
    paymentIds.length === 0
      ? []
      : server.ctx.db
          .selectFrom('wallet_movements')
          .select(['reference_id', 'amount'])
          .where('kind', '=', 'settlement')
          .where('reference_id', 'in', paymentIds)
          .execute();

  test('a test clock charges each period once, on the anchor day clamped to short months', async () => {
    const sub = await sandboxSubscription(GOOD);
    const first = await advance(sub.publicId, 1);
    assert.equal(first.status, 'active');
    assert.equal(first.cycles.length, 1);
    assert.equal(first.cycles[0].status, 'paid');
    assert.equal(first.cycles[0].period_start, '2031-01-31T09:30:00.000Z');
    assert.equal(first.cycles[0].period_end, '2031-02-28T09:30:00.000Z');
    assert.equal(first.cycles[0].amount, '9.99');
    // 1 + 59 days: the end of February and of March are crossed, so periods 1 and 2 are charged.
    const later = await advance(sub.publicId, 59);
    assert.deepEqual(
      later.cycles.map((cycle) => [cycle.period_index, cycle.period_start, cycle.status, cycle.attempts]),
      [
        [2, '2031-03-31T09:30:00.000Z', 'paid', 1],
        [1, '2031-02-28T09:30:00.000Z', 'paid', 1],
        [0, '2031-01-31T09:30:00.000Z', 'paid', 1],
      ],
    );
    assert.equal(later.current_period_start, '2031-03-31T09:30:00.000Z');
    assert.equal(later.current_period_end, '2031-04-30T09:30:00.000Z');
    const payments = await paymentsOf(sub.id);
    assert.equal(payments.length, 3);
    assert.deepEqual(
      later.cycles.map((cycle) => cycle.transaction_id).reverse(),
      payments.map((payment) => payment.public_id),
    );
    for (const payment of payments) {
      assert.equal(payment.status, 'paid');
      assert.equal(Number(payment.gross), 999);
      assert.equal(payment.environment, 'sandbox');
    }
    // Each credited the wallet once.
    assert.equal((await settlements(payments.map((payment) => payment.id))).length, 3);
    // The renewal payment is an ordinary payment of the dashboard, with its transaction.status_changed events.
    const shown = await call<{ id: string; status: string; subscription_id?: string | null }>(
      server,
      'GET',
      `/api/payments/${payments[0].public_id}/`,
      { token: owner.token },
    );
    assert.equal(shown.status, 200, shown.text);
    assert.equal(shown.body.status, 'paid');
    assert.equal(shown.body.subscription_id, sub.publicId);
    const events = await server.ctx.db
      .selectFrom('events')
      .select(['type', 'subject', 'payload'])
      .where(
        'subject',
        'in',
        payments.map((payment) => payment.public_id),
      )
      .execute();
    assert.ok(events.length >= 6, `a processing and a paid event per renewal: ${events.length}`);
    assert.ok(events.every((event) => event.type === 'transaction.status_changed'));
    // Refunded as any payment: with a sandbox key, on /sandbox/api/.
    const key = await createTestKey(server, owner, { environment: 'sandbox' });
    const refund = await call<{ status: string }>(
      server,
      'POST',
      `/sandbox/api/transactions/${payments[0].public_id}/refund/`,
      { apiKey: key, body: { reason: 'renewal refunded', amount: '4.99' } },
    );
    assert.equal(refund.status, 200, refund.text);
    assert.equal(refund.body.status, 'processing');
    for (const event of events) {
      assert.equal((JSON.parse(event.payload) as { subscription_id: string }).subscription_id, sub.publicId);
    }
  });

  test('dunning: tries at +0, +1, +3, +7 and +14 days, then canceled with payment_failed', async () => {
    const sub = await sandboxSubscription(INSUFFICIENT);
    const triesByDay: number[] = [];
    let state = await advance(sub.publicId, 1);
    triesByDay.push(state.cycles[0].attempts);
    assert.equal(state.status, 'past_due');
    assert.equal(state.cycles[0].status, 'retrying');
    // The clock started at the anchor; one day at a time from there.
    for (let day = 2; day <= 16; day += 1) {
      state = await advance(sub.publicId, 1);
      triesByDay.push(state.cycles[0].attempts);
    }
    // After day d (the clock at anchor + d days): tries made at +0, +1, +3, +7, +14.
    assert.deepEqual(triesByDay, [2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5]);
    assert.equal(state.status, 'canceled');
    assert.equal(state.cancel_reason, 'payment_failed');
    assert.equal(state.cycles[0].status, 'uncollectible');
    assert.equal(state.cycles[0].next_attempt_at, null);
    const [payment] = await paymentsOf(sub.id);
    assert.equal(payment.status, 'failed');
    const attempts = await server.ctx.db
      .selectFrom('deposit_attempts')
      .select('status')
      .where('payment_id', '=', payment.id)
      .execute();
    assert.equal(attempts.length, 5, 'five card attempts on the one renewal payment');
    assert.equal((await settlements([payment.id])).length, 0);
    // Nothing more is ever tried.
    const quiet = await advance(sub.publicId, 60);
    assert.equal(quiet.cycles.length, 1);
    assert.equal(quiet.cycles[0].attempts, 5);
  });

  test('a success on the third try returns the subscription to active with its anchor unchanged', async () => {
    const sub = await sandboxSubscription(INSUFFICIENT);
    let state = await advance(sub.publicId, 2);
    assert.equal(state.cycles[0].attempts, 2);
    assert.equal(state.status, 'past_due');
    // The customer's bank now has the funds (the simulator's card, not Kassa, changes).
    await simulatorDb(server.ctx.db)
      .updateTable('sim_payment_methods')
      .set({ behaviour: 'succeed' })
      .where('payment_method_id', '=', sub.paymentMethodId)
      .execute();
    state = await advance(sub.publicId, 1);
    assert.equal(state.status, 'active');
    assert.equal(state.cycles[0].status, 'paid');
    assert.equal(state.cycles[0].attempts, 3);
    // The next period starts on the anchor's schedule, not three days later.
    state = await advance(sub.publicId, 30);
    assert.equal(state.cycles[0].period_index, 1);
    assert.equal(state.cycles[0].period_start, '2031-02-28T09:30:00.000Z');
    assert.equal(state.cycles[0].status, 'paid');
    const payments = await paymentsOf(sub.id);
    assert.deepEqual(
      payments.map((payment) => payment.status),
      ['paid', 'paid'],
    );
    assert.equal((await settlements(payments.map((payment) => payment.id))).length, 2);
  });

  /** The mails sent to a subscription's customer. */
  const mailsOf = async (subscriptionId: number) => {
    const directory = join(server.env.KASSA_DATA_DIR, 'mail');
    const mails = await Promise.all(
      (await readdir(directory)).map((name) => readFile(join(directory, name), 'utf8')),
    );
    const email = (
      await server.ctx.db
        .selectFrom('subscriptions')
        .select('customer_email')
        .where('id', '=', subscriptionId)
        .executeTakeFirstOrThrow()
    ).customer_email;
    return mails.filter((mail) => mail.includes(`To: ${email}`));
  };

  test('a decline no retry can fix waits for a new card until the last try, then cancels', async () => {
    const sub = await sandboxSubscription(AUTH_ALWAYS);
    let state = await advance(sub.publicId, 1);
    assert.equal(state.status, 'past_due');
    assert.equal(state.cycles[0].attempts, 1);
    assert.equal(state.cycles[0].next_attempt_at, '2031-02-14T09:30:00.000Z', 'the give-up time');
    state = await advance(sub.publicId, 12);
    assert.equal(state.cycles[0].attempts, 1, 'no retry of a card that needs authentication');
    state = await advance(sub.publicId, 2);
    assert.equal(state.status, 'canceled');
    assert.equal(state.cancel_reason, 'payment_failed');
    assert.equal(state.cycles[0].status, 'uncollectible');
    assert.equal(state.cycles[0].attempts, 1);
    // The customer was told: a failed-payment mail, then the cancellation.
    const theirs = await mailsOf(sub.id);
    assert.equal(theirs.length, 2, theirs.join('\n---\n'));
    assert.ok(theirs.some((mail) => /Subject: Your payment to Renewals failed/.test(mail)));
    assert.ok(
      theirs.some((mail) => /Subject: Your Sandbox monthly subscription with Renewals has ended/.test(mail)),
    );
  });

  const cancelAtPeriodEnd = async (id: string) => {
    const response = await call<Subscription>(server, 'POST', `/api/subscriptions/${id}/cancel/`, {
      token: owner.token,
      body: { at_period_end: true },
    });
    assert.equal(response.status, 200, response.text);
  };
  const cardSucceeds = (paymentMethodId: string) =>
    simulatorDb(server.ctx.db)
      .updateTable('sim_payment_methods')
      .set({ behaviour: 'succeed' })
      .where('payment_method_id', '=', paymentMethodId)
      .execute();
  const WEEK_ANCHOR = new Date(Date.UTC(2031, 2, 3, 9, 30));
  const WEEK_END = '2031-03-10T09:30:00.000Z';

  test("a renewal's payment paid at the provider while its cycle is dunned, brought by the provider's webhook: the next pass records the period paid at once, without a try", async () => {
    const sub = await sandboxSubscription(INSUFFICIENT);
    let state = await advance(sub.publicId, 2);
    assert.deepEqual(
      [state.status, state.cycles[0].status, state.cycles[0].attempts],
      ['past_due', 'retrying', 2],
    );
    const [payment] = await paymentsOf(sub.id);
    const tryAt = state.cycles[0].next_attempt_at;
    assert.equal(tryAt, '2031-02-03T09:30:00.000Z', 'try 3 a day away');
    // The payment is charged at the provider outside Kassa's worker (the bank has the funds now).
    await cardSucceeds(sub.paymentMethodId);
    const row = await server.ctx.db
      .selectFrom('subscriptions')
      .selectAll()
      .where('id', '=', sub.id)
      .executeTakeFirstOrThrow();
    const charged = await server.ctx.providers.simulator.chargeSavedCard({
      idempotencyKey: `outside-${payment.public_id}`,
      payment: { reference: payment.public_id, providerPaymentId: payment.provider_payment_id },
      environment: 'sandbox',
      amountMinor: BigInt(payment.gross),
      currency: payment.currency,
      refundBasisMinor: BigInt(payment.gross_ht),
      customerId: row.provider_customer_id,
      paymentMethodId: row.payment_method_id,
      metadata: {},
    });
    assert.equal(charged.outcome.status, 'succeeded', JSON.stringify(charged.outcome));
    const attemptsAtProvider = charged.payment?.attempts.length;
    // The simulator's webhook names it (signed; the body carries no state): Kassa reads it.
    const raw = JSON.stringify({ payment_id: payment.provider_payment_id });
    const signature = signSimulatorWebhook(
      server.ctx.config.secretKey,
      raw,
      Math.floor(server.ctx.clock().getTime() / 1000),
    );
    const notified = await call(server, 'POST', '/api/provider/webhooks/simulator/', {
      body: raw,
      headers: { 'content-type': 'application/json', 'kassa-signature': signature },
    });
    assert.equal(notified.status, 200, notified.text);
    const paid = (await paymentsOf(sub.id))[0];
    assert.equal(paid.status, 'paid');
    const waiting = await detail(sub.publicId);
    assert.equal(waiting.status, 'past_due');
    assert.equal(
      waiting.cycles[0].next_attempt_at,
      row.test_clock_at,
      "due now, on the subscription's clock",
    );

    // One pass of the worker: the period paid, no try made (no attempt at the provider, no try counted).
    await runRenewals(server.ctx, row);
    state = await detail(sub.publicId);
    assert.equal(state.status, 'active');
    assert.deepEqual(
      [state.cycles[0].status, state.cycles[0].attempts, state.cycles[0].next_attempt_at],
      ['paid', 2, null],
    );
    const atProvider = await server.ctx.providers.simulator.getPayment(payment.provider_payment_id ?? '');
    assert.equal(atProvider?.attempts.length, attemptsAtProvider, 'no call to the provider');
    const operations = await server.ctx.db
      .selectFrom('provider_operations')
      .select('idempotency_key')
      .where('subject_type', '=', 'subscription_cycle')
      .where('reference', '=', payment.public_id)
      .execute();
    assert.equal(operations.length, 2, 'tries 1 and 2 only');
    assert.equal((await settlements([payment.id])).length, 1, 'settled once');
    const receipts = (await mailsOf(sub.id)).filter((mail) => /Subject: Receipt/.test(mail));
    assert.equal(receipts.length, 1);
    // Later passes leave it so.
    state = await advance(sub.publicId, 5);
    assert.deepEqual([state.status, state.cycles[0].status, state.cycles[0].attempts], ['active', 'paid', 2]);
    assert.equal((await settlements([payment.id])).length, 1);
  });

  test('past due with a cancel at the period end: canceled then (merchant), the cycle void, no try after', async () => {
    const sub = await subscribeWithSavedCard(server, {
      organizationId: owner.organizationId,
      planPublicId: sandboxWeekly,
      cardNumber: INSUFFICIENT,
      anchorAt: WEEK_ANCHOR.toISOString(),
      testClock: true,
    });
    let state = await advance(sub.publicId, 1);
    assert.equal(state.status, 'past_due');
    assert.equal(state.cycles[0].attempts, 2);
    await cancelAtPeriodEnd(sub.publicId);
    // Tries at +3 days (before the end) still run; the one due at +7 days, the period's end, does not.
    state = await advance(sub.publicId, 8);
    assert.equal(state.status, 'canceled');
    assert.equal(state.cancel_reason, 'merchant');
    assert.equal(state.canceled_at, WEEK_END);
    assert.equal(state.cycles.length, 1);
    assert.deepEqual(
      [state.cycles[0].status, state.cycles[0].attempts, state.cycles[0].next_attempt_at],
      ['void', 3, null],
    );
    const [payment] = await paymentsOf(sub.id);
    assert.equal(payment.status, 'canceled');
    // The customer's card would now pay: nothing is ever charged again (the +14 days try is gone).
    await cardSucceeds(sub.paymentMethodId);
    state = await advance(sub.publicId, 14);
    assert.equal(state.cycles.length, 1);
    assert.equal(state.cycles[0].attempts, 3);
    assert.equal(state.cancel_reason, 'merchant');
    assert.deepEqual(
      (await paymentsOf(sub.id)).map((row) => row.status),
      ['canceled'],
    );
    const attempts = await server.ctx.db
      .selectFrom('deposit_attempts')
      .select('status')
      .where('payment_id', '=', payment.id)
      .execute();
    assert.equal(attempts.length, 3, 'tries at +0, +1 and +3 days only');
  });

  test('a try in flight at the period end of a cancel: the cancel waits; a late success is kept, canceled at the period end', async () => {
    const sub = await subscribeWithSavedCard(server, {
      organizationId: owner.organizationId,
      planPublicId: sandboxWeekly,
      cardNumber: INSUFFICIENT,
      anchorAt: WEEK_ANCHOR.toISOString(),
      testClock: true,
    });
    await advance(sub.publicId, 1);
    await cancelAtPeriodEnd(sub.publicId);
    // The third try (at +3 days) is charged, but its answer is lost: in flight across the period's end.
    await cardSucceeds(sub.paymentMethodId);
    const simulator = server.ctx.providers.simulator as unknown as { sim: { fault: string | null } };
    simulator.sim.fault = 'timeout_after_success';
    let state: Subscription;
    try {
      state = await advance(sub.publicId, 2);
    } finally {
      simulator.sim.fault = null;
    }
    assert.equal(state.cycles[0].attempts, 3);
    assert.equal(state.cycles[0].next_attempt_at, null);
    state = await advance(sub.publicId, 6);
    assert.equal(state.status, 'past_due', 'the cancel waits for the answer');
    assert.equal(state.cycles[0].attempts, 3, 'no try at or after the period end');
    // The reconciler reads the charge back (after the period's end): the period it paid is kept.
    const [cycle] = await server.ctx.db
      .selectFrom('subscription_cycles')
      .select('id')
      .where('subscription_id', '=', sub.id)
      .execute();
    const [operation] = await server.ctx.db
      .selectFrom('provider_operations')
      .selectAll()
      .where('subject_type', '=', 'subscription_cycle')
      .where('subject_id', '=', cycle.id)
      .where('state', '=', 'unknown')
      .execute();
    assert.ok(operation, 'the third try is being reconciled');
    assert.equal(await reconcileOperation(server.ctx, operationHandlers, operation), true);
    state = await detail(sub.publicId);
    assert.equal(state.status, 'canceled');
    assert.equal(state.cancel_reason, 'merchant');
    assert.equal(state.canceled_at, WEEK_END);
    assert.deepEqual([state.cycles[0].status, state.cycles[0].attempts], ['paid', 3]);
    const payments = await paymentsOf(sub.id);
    assert.deepEqual(
      payments.map((row) => row.status),
      ['paid'],
    );
    assert.equal((await settlements([payments[0].id])).length, 1);
    // The charge was made (+3 days) before canceled_at; nothing follows.
    state = await advance(sub.publicId, 14);
    assert.equal(state.cycles.length, 1);
    assert.equal(state.cycles[0].attempts, 3);
  });

  test('a try in flight at the period end of a cancel that is then declined: not dunned, canceled at the period end (merchant)', async () => {
    const sub = await subscribeWithSavedCard(server, {
      organizationId: owner.organizationId,
      planPublicId: sandboxWeekly,
      cardNumber: INSUFFICIENT,
      anchorAt: WEEK_ANCHOR.toISOString(),
      testClock: true,
    });
    await advance(sub.publicId, 1);
    await cancelAtPeriodEnd(sub.publicId);
    // The third try (at +3 days) is declined, but its answer is lost: in flight across the period's end.
    const simulator = server.ctx.providers.simulator;
    const charge = simulator.chargeSavedCard.bind(simulator);
    simulator.chargeSavedCard = async (request) => {
      await charge(request);
      throw new Error('the answer was lost');
    };
    let state: Subscription;
    try {
      state = await advance(sub.publicId, 2);
    } finally {
      simulator.chargeSavedCard = charge;
    }
    assert.deepEqual([state.cycles[0].attempts, state.cycles[0].next_attempt_at], [3, null]);
    state = await advance(sub.publicId, 6);
    assert.equal(state.status, 'past_due', 'the cancel waits for the answer');
    const [operation] = await server.ctx.db
      .selectFrom('provider_operations')
      .selectAll()
      .where('subject_type', '=', 'subscription_cycle')
      .where('state', '=', 'unknown')
      .where('reference', '=', (await paymentsOf(sub.id))[0].public_id)
      .execute();
    assert.ok(operation, 'the third try is being reconciled');
    assert.equal(await reconcileOperation(server.ctx, operationHandlers, operation), true);
    assert.equal(operation.idempotency_key.endsWith('-3'), true);
    state = await detail(sub.publicId);
    assert.deepEqual(
      [state.status, state.cancel_reason, state.canceled_at],
      ['canceled', 'merchant', WEEK_END],
    );
    assert.deepEqual(
      [state.cycles[0].status, state.cycles[0].attempts, state.cycles[0].next_attempt_at],
      ['void', 3, null],
    );
    assert.deepEqual(
      (await paymentsOf(sub.id)).map((row) => row.status),
      ['canceled'],
    );
    state = await advance(sub.publicId, 14);
    assert.equal(state.cycles[0].attempts, 3, 'never tried again');
  });

  test('a renewal try flagged after its last read is on the payment review and does not block cancel now', async () => {
    const sub = await subscribeWithSavedCard(server, {
      organizationId: owner.organizationId,
      planPublicId: sandboxWeekly,
      cardNumber: INSUFFICIENT,
      anchorAt: WEEK_ANCHOR.toISOString(),
      testClock: true,
    });
    await advance(sub.publicId, 1);
    // The third try is charged, its answer lost; every read of it fails until the last: flagged.
    await cardSucceeds(sub.paymentMethodId);
    const simulator = server.ctx.providers.simulator as unknown as { sim: { fault: string | null } };
    simulator.sim.fault = 'timeout_after_success';
    try {
      await advance(sub.publicId, 2);
    } finally {
      simulator.sim.fault = null;
    }
    const [cycle] = await server.ctx.db
      .selectFrom('subscription_cycles')
      .select('id')
      .where('subscription_id', '=', sub.id)
      .execute();
    const operationOfTry = () =>
      server.ctx.db
        .selectFrom('provider_operations')
        .selectAll()
        .where('idempotency_key', '=', `kassa-renew-${cycle.id}-3`)
        .executeTakeFirstOrThrow();
    await server.ctx.db
      .updateTable('provider_operations')
      .set({ reads: server.ctx.config.reconcileScheduleMs.length - 1 })
      .where('id', '=', (await operationOfTry()).id)
      .execute();
    const unreachable = {
      renewal_charge: {
        read: async () => {
          throw new Error('provider unreachable');
        },
      },
    };
    assert.equal(await reconcileOperation(server.ctx, unreachable, await operationOfTry()), false);
    assert.equal((await operationOfTry()).state, 'flagged');
    // Its last read comes a day after the try: the try's lease has long run out.
    await server.ctx.db
      .updateTable('subscription_cycles')
      .set({ lease_until: new Date(Date.now() - 1000).toISOString() })
      .where('id', '=', cycle.id)
      .execute();
    // The operator sees it on the renewal payment, in the detail and in the list.
    const [payment] = await paymentsOf(sub.id);
    type Review = { state: string; operation: string; reason: string | null } | null;
    const reviewOf = async () => {
      const shown = await call<{ provider_review: Review }>(
        server,
        'GET',
        `/api/payments/${payment.public_id}/`,
        { token: owner.token },
      );
      assert.equal(shown.status, 200, shown.text);
      return shown.body.provider_review;
    };
    const review = await reviewOf();
    assert.deepEqual([review?.state, review?.operation], ['flagged', `kassa-renew-${cycle.id}-3`]);
    assert.match(review?.reason ?? '', /provider unreachable/);
    const list = await call<{ results: { id: string; provider_review: Review }[] }>(
      server,
      'GET',
      '/api/payments/?environment=sandbox',
      { token: owner.token },
    );
    assert.equal(list.status, 200, list.text);
    const listed = list.body.results.find((item) => item.id === payment.public_id);
    assert.equal(listed?.provider_review?.state, 'flagged', list.text);
    // Nobody reads a flagged try again: it is not in flight, so cancel now is not a 409 for ever.
    const canceled = await call<Subscription>(server, 'POST', `/api/subscriptions/${sub.publicId}/cancel/`, {
      token: owner.token,
      body: { at_period_end: false },
    });
    assert.equal(canceled.status, 200, canceled.text);
    assert.equal(canceled.body.status, 'canceled');
    assert.equal(canceled.body.cycles[0].status, 'void');
    // The provider shows the charge later (a sync or a webhook): a conflict on the canceled payment, never
    // paid or settled, and the payment's review says so first.
    const state = await server.ctx.providers.simulator.findPayment(payment.public_id);
    assert.equal(state?.outcome, 'PAYMENT_SUCCESS');
    if (!state) return;
    await server.ctx.db
      .transaction()
      .execute((trx) => applyProviderState(trx, payment.id, state, new Date().toISOString()));
    const [after] = await paymentsOf(sub.id);
    assert.equal(after.status, 'canceled');
    assert.ok(after.provider_conflict, 'the late charge is a provider conflict');
    assert.equal((await settlements([payment.id])).length, 0);
    assert.deepEqual([(await reviewOf())?.state, (await reviewOf())?.operation], ['flagged', 'payment']);
  });

  test("advance-clock: sandbox only, 1 to 400 days, the organization's own subscriptions", async () => {
    const production = await subscribeWithSavedCard(server, {
      organizationId: owner.organizationId,
      planPublicId: monthly,
      cardNumber: GOOD,
      anchorAt: new Date(Date.now() + 30 * DAY).toISOString(),
    });
    const refused = await call<{ detail: string }>(
      server,
      'POST',
      `/api/subscriptions/${production.publicId}/advance-clock/`,
      { token: owner.token, body: { days: 1 } },
    );
    assert.equal(refused.status, 400, refused.text);
    assert.match(refused.body.detail, /sandbox/);
    const sub = await sandboxSubscription(GOOD);
    for (const body of [
      {},
      { days: 0 },
      { days: 401 },
      { days: 1.5 },
      { days: '3' },
      { days: 1, extra: true },
    ]) {
      const response = await call<{ detail: string }>(
        server,
        'POST',
        `/api/subscriptions/${sub.publicId}/advance-clock/`,
        { token: owner.token, body },
      );
      assert.equal(response.status, 400, JSON.stringify(body));
      assert.equal(typeof response.body.detail, 'string');
    }
    assert.equal((await paymentsOf(sub.id)).length, 0, 'a refused call charged nothing');
    const other = await createTestMerchant(server, 'Other');
    const foreign = await call(server, 'POST', `/api/subscriptions/${sub.publicId}/advance-clock/`, {
      token: other.token,
      body: { days: 1 },
    });
    assert.equal(foreign.status, 404);
    assert.equal((await paymentsOf(sub.id)).length, 0);
  });

  test('a worker down for three periods charges the current one once; the skipped ones are void', async () => {
    const anchor = new Date(Date.now() - 100 * DAY);
    const sub = await subscribeWithSavedCard(server, {
      organizationId: owner.organizationId,
      planPublicId: monthly,
      cardNumber: GOOD,
      anchorAt: anchor.toISOString(),
    });
    await runRenewals(server.ctx);
    await runRenewals(server.ctx);
    const state = await detail(sub.publicId);
    const statuses = state.cycles.map((cycle) => [cycle.period_index, cycle.status]);
    assert.equal(statuses[0][1], 'paid');
    assert.ok(
      statuses.slice(1).every(([, status]) => status === 'void'),
      JSON.stringify(statuses),
    );
    assert.equal(statuses.length, Number(statuses[0][0]) + 1);
    assert.ok(statuses.length >= 4);
    assert.equal((await paymentsOf(sub.id)).length, 1);
    assert.equal(state.status, 'active');
  });

  test('past-due subscriptions waiting on their dunning never hold up the renewal of others', async () => {
    const past = new Date(Date.now() - 2 * DAY).toISOString();
    for (let i = 0; i < 25; i += 1) {
      const waiting = await insertSubscription(server, {
        organizationId: owner.organizationId,
        planPublicId: monthly,
        status: 'past_due',
      });
      await server.ctx.db
        .updateTable('subscriptions')
        .set({ next_renewal_at: past })
        .where('id', '=', waiting.id)
        .execute();
    }
    const due = await subscribeWithSavedCard(server, {
      organizationId: owner.organizationId,
      planPublicId: monthly,
      cardNumber: GOOD,
      anchorAt: new Date(Date.now() - 60_000).toISOString(),
    });
    await runRenewals(server.ctx);
    const state = await detail(due.publicId);
    assert.equal(state.cycles.length, 1);
    assert.equal(state.cycles[0].status, 'paid');
  });

  test('a renewal that cannot start (its organization no longer active) is put off an hour, charging nothing', async () => {
    const other = await createTestMerchant(server, 'Closing Shop');
    const plan = await call<{ id: string }>(server, 'POST', '/api/subscriptions/plans/', {
      token: other.token,
      body: { name: 'Monthly', amount: '3.00', interval: 'month' },
    });
    const stuck = await subscribeWithSavedCard(server, {
      organizationId: other.organizationId,
      planPublicId: plan.body.id,
      cardNumber: GOOD,
      anchorAt: new Date(Date.now() - 60_000).toISOString(),
    });
    await server.ctx.db
      .updateTable('organizations')
      .set({ status: 'suspended' })
      .where('id', '=', other.organizationId)
      .execute();
    const due = await subscribeWithSavedCard(server, {
      organizationId: owner.organizationId,
      planPublicId: monthly,
      cardNumber: GOOD,
      anchorAt: new Date(Date.now() - 30_000).toISOString(),
    });
    await runRenewals(server.ctx);
    await runRenewals(server.ctx);
    const cycle = await server.ctx.db
      .selectFrom('subscription_cycles')
      .selectAll()
      .where('subscription_id', '=', stuck.id)
      .executeTakeFirstOrThrow();
    assert.equal(cycle.status, 'processing');
    assert.equal(cycle.attempts, 0);
    assert.equal(cycle.leased_by, null);
    const putOffMs = Date.parse(cycle.next_attempt_at ?? '') - Date.now();
    assert.ok(putOffMs > 59 * 60_000 && putOffMs <= 3_600_000, `put off ${putOffMs} ms`);
    assert.equal((await paymentsOf(stuck.id)).length, 0);
    assert.equal((await detail(due.publicId)).cycles[0].status, 'paid', 'the others go on');
  });

  test('eight concurrent renewal passes against 100 due subscriptions charge each exactly once', async () => {
    const anchor = new Date(Date.now() - 60_000).toISOString();
    const subs = [];
    for (let i = 0; i < 100; i += 1) {
      subs.push(
        await subscribeWithSavedCard(server, {
          organizationId: owner.organizationId,
          planPublicId: monthly,
          cardNumber: GOOD,
          anchorAt: anchor,
        }),
      );
    }
    const ids = subs.map((sub) => sub.id);
    const pending = async () =>
      Number(
        (
          await server.ctx.db
            .selectFrom('subscription_cycles')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('subscription_id', 'in', ids)
            .where('status', '=', 'paid')
            .executeTakeFirstOrThrow()
        ).n,
      );
    for (let round = 0; round < 20 && (await pending()) < 100; round += 1) {
      await Promise.all(Array.from({ length: 8 }, () => runRenewals(server.ctx)));
    }
    assert.equal(await pending(), 100);
    const payments = await server.ctx.db
      .selectFrom('payments')
      .select(['id', 'public_id', 'status'])
      .where('subscription_id', 'in', ids)
      .execute();
    assert.equal(payments.length, 100);
    assert.ok(payments.every((payment) => payment.status === 'paid'));
    assert.equal((await settlements(payments.map((payment) => payment.id))).length, 100);
    const charges = await simulatorDb(server.ctx.db)
      .selectFrom('sim_payments')
      .select('attempts')
      .where(
        'reference',
        'in',
        payments.map((payment) => payment.public_id),
      )
      .execute();
    assert.equal(charges.length, 100);
    const attempts = charges.map((charge) => (JSON.parse(charge.attempts) as unknown[]).length);
    assert.deepEqual([...new Set(attempts)], [1], 'one off-session charge per period');
  });

  test('only the interface event types were ever emitted: renewals are transaction.status_changed, their refunds refund.status_changed', async () => {
    const types = await server.ctx.db
      .selectFrom('events')
      .select('type')
      .distinct()
      .where('organization_id', '=', owner.organizationId)
      .execute();
    const interfaceTypes = [
      'transaction.status_changed',
      'refund.status_changed',
      'payout.status_changed',
      'webhook.test',
    ];
    assert.ok(types.length > 0);
    for (const { type } of types) assert.ok(interfaceTypes.includes(type), type);
    assert.ok(types.some((row) => row.type === 'transaction.status_changed'));
  });
});
