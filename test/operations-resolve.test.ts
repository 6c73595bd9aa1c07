// Resolving a flagged provider call of any kind but a renewal try (kassa operation list / kassa operation
// resolve), on both databases, with the simulator: a card attempt, a refund and a trial's card setup whose
// answer was lost, and which the reconciler could not read back by its last read. Kassa reads the provider
// once more and records what it shows through the call's own path, as the reconciler would: a charge paid
// and settled once, a refund completed (the wallet debited once), a call that never reached the provider
// failed (the checkout's slot freed, the refund's hold released once); an answer that is not final (a
// charge or a card waiting for 3-D Secure, a refund processing) recorded as the reconciler records it and
// said still waiting (exit 1), never charged again, then followed to its end (the customer's approval,
// the refund sync); the reconciler reads a waiting setup as its answer, not as never made. A provider
// that cannot be read, a call that may still arrive, and anything not flagged are refused with nothing
// changed. Every resolution is audited (actor operator); two operators at once resolve a call once. With
// the fake Stripe: the PaymentIntent of the hosted page (payment_open) found by Stripe's search, or never
// made and opened again under the same key, one PaymentIntent either way.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { commands } from '../src/cli/commands.ts';
import { DomainError } from '../src/http/errors.ts';
import { syncRefunds } from '../src/modules/refunds/sync.ts';
import { reconcileOperation } from '../src/provider/operations/reconciler.ts';
import { resolveFlaggedOperation } from '../src/provider/operations/resolve.ts';
import { operationByKey, recordOperation } from '../src/provider/operations/store.ts';
import type { OperationRow } from '../src/provider/operations/table.ts';
import { simulatorDb } from '../src/provider/simulator/store.ts';
import type { PaymentProvider } from '../src/provider/types.ts';
import { operationHandlers } from '../src/worker/loops.ts';
import {
  billing,
  CARDS,
  createCheckout,
  type Json,
  pay,
  paymentRow as paymentOf,
  syncStatus,
} from './helpers/checkout.ts';
import { assertRefused, kassa, refusedArguments } from './helpers/cli.ts';
import type { FakeStripe } from './helpers/fake-stripe/server.ts';
import { flagAfterLastRead, operationsOf, settlementsOf, simAttempts } from './helpers/provider-checks.ts';
import { useProvider, wrapProvider } from './helpers/providers.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  DB_KIND,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import { startWithStripe } from './helpers/stripe.ts';
import { assertLedgerBalanced } from './helpers/wallet-fixtures.ts';

const THREE_DS = '4000002760003184';
const HOUR = 3_600_000;

/** The call is as old as a flagged one is (its last read is 20 hours after it): it can no longer arrive. */
function ageCall(server: TestServer, key: string) {
  return server.ctx.db
    .updateTable('provider_operations')
    .set({ created_at: new Date(Date.now() - 20 * HOUR).toISOString() })
    .where('idempotency_key', '=', key)
    .execute();
}

describe(`resolving flagged provider calls (${DB_KIND})`, () => {
  let server: TestServer;
  let owner: Merchant;
  let apiKey: string;

  before(async () => {
    // A refund stays processing at the simulator until a test says it is decided (completes_at).
    server = await startTestServer({ worker: false, env: { KASSA_SIM_REFUND_DELAY_MS: String(24 * HOUR) } });
    owner = await createTestMerchant(server, 'Flagged Shop');
    apiKey = await createTestKey(server, owner);
  });
  after(() => server.close());

  const db = () => server.ctx.db;
  const resolve = (key: string) => resolveFlaggedOperation(server.ctx, operationHandlers, key);
  const operation = async (key: string) => (await operationByKey(db(), key)) ?? assert.fail(`no ${key}`);
  const paymentRow = (publicId: string) => paymentOf(server, publicId);
  const refundRow = (id: number) =>
    db().selectFrom('refunds').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const sessionOf = (payment: { checkout_session_id: number }) =>
    db()
      .selectFrom('checkout_sessions')
      .selectAll()
      .where('id', '=', payment.checkout_session_id)
      .executeTakeFirstOrThrow();
  const audits = (key: string) =>
    db()
      .selectFrom('audit_log')
      .selectAll()
      .where('action', '=', 'provider_operation.resolved')
      .execute()
      .then((rows) => rows.filter((row) => (JSON.parse(row.details) as Json).operation === key));
  const movements = (refundId: number) =>
    db()
      .selectFrom('wallet_movements')
      .select('kind')
      .where('reference_id', '=', refundId)
      .where('kind', 'in', ['refund_hold', 'refund_debit', 'refund_release'])
      .orderBy('id')
      .execute()
      .then((rows) => rows.map((row) => row.kind));
  const age = (key: string) => ageCall(server, key);
  const refusal = async (promise: Promise<unknown>, status: number, pattern: RegExp) => {
    await assert.rejects(promise, (error: Error) => {
      assert.ok(error instanceof DomainError, String(error));
      assert.equal(error.status, status, error.message);
      assert.match(error.message, pattern);
      return true;
    });
  };
  /** The customer approves the 3-D Secure challenge their checkout page shows. */
  const approve = async (token: string) => {
    const page = await call<Json>(server, 'GET', `/api/checkout/${token}/`);
    const action = page.body.next_action as { url: string } | null;
    assert.ok(action?.url, page.text);
    const approved = await call<Json>(server, 'POST', action.url, { body: { answer: 'approve' } });
    assert.equal(approved.status, 200, approved.text);
  };
  /** Nothing changed: still flagged, and no resolution audited. */
  const unchanged = async (key: string) => {
    assert.equal((await operation(key)).state, 'flagged', 'still flagged');
    assert.deepEqual(await audits(key), [], 'a refusal is no resolution');
  };

  /** A card attempt made through the simulator with `chargeCard` wrapped; its answer lost, then flagged. */
  const attemptAnswerLost = async (
    chargeCard: PaymentProvider['chargeCard'],
    cardNumber: string = CARDS.success,
  ) => {
    const checkout = await createCheckout(server, apiKey);
    const restore = useProvider(server.ctx, wrapProvider(server.ctx.providers.simulator, { chargeCard }));
    let lost: Awaited<ReturnType<typeof pay>>;
    try {
      lost = await pay(server, checkout.token, cardNumber);
    } finally {
      restore();
    }
    assert.equal(lost.body.outcome, 'unknown', lost.text);
    const transactionId = lost.body.transaction_id as string;
    const key = `kassa-pay-${transactionId}-1`;
    await flagAfterLastRead(server.ctx, key, 'simulator unreachable');
    return { checkout, transactionId, key };
  };
  const reached: PaymentProvider['chargeCard'] = async (input) => {
    await server.ctx.providers.simulator.chargeCard(input);
    throw new Error('socket hang up');
  };
  const neverSent: PaymentProvider['chargeCard'] = async () => {
    throw new Error('connect ECONNREFUSED');
  };

  test('a charge whose answer was lost: listed, then kassa operation resolve records it paid and settled once; again is refused', async () => {
    const { transactionId, key } = await attemptAnswerLost(reached);
    assert.equal((await paymentRow(transactionId)).status, 'processing');

    const listed = await kassa(['operation', 'list', '--org', owner.slug], server.env);
    assert.equal(listed.code, 0, listed.stderr);
    const rows = JSON.parse(listed.stdout) as Json[];
    assert.deepEqual(
      rows.map((row) => [row.operation, row.kind, row.organization, row.reference, row.why, row.resolve]),
      [[key, 'payment_attempt', owner.slug, transactionId, 'unknown', `kassa operation resolve ${key}`]],
    );
    assert.match(String(rows[0].reason), /simulator unreachable/);

    const resolved = await kassa(['operation', 'resolve', key], server.env);
    assert.equal(resolved.code, 0, resolved.stderr);
    const answer = JSON.parse(resolved.stdout) as Json;
    assert.deepEqual(
      [answer.operation, answer.kind, answer.organization, answer.outcome, answer.outcome_code],
      [key, 'payment_attempt', owner.slug, 'succeeded', null],
    );
    assert.deepEqual(
      [answer.transaction_id, answer.payment_status, answer.provider_conflict],
      [transactionId, 'paid', null],
    );
    assert.match(String(answer.provider_shows), /^charged \(simpay_\w+, PAYMENT_SUCCESS\)$/);
    const settled = await operation(key);
    assert.deepEqual(
      [settled.state, settled.outcome, settled.provider_object_id],
      ['done', 'succeeded', answer.provider_object_id],
    );
    const paid = await paymentRow(transactionId);
    assert.deepEqual([paid.status, paid.provider_payment_id], ['paid', answer.provider_object_id]);
    assert.equal(await settlementsOf(server.ctx, paid.id), 1, 'settled once');
    assert.equal((await simAttempts(server.ctx, transactionId)).length, 1, 'charged once');
    assert.equal((await sessionOf(paid)).attempt_locked_until, null, "the checkout's slot is free");
    const [entry, ...more] = await audits(key);
    assert.equal(more.length, 0);
    assert.deepEqual(
      [entry.actor_type, entry.organization_id, entry.target_type, entry.target_id],
      ['operator', owner.organizationId, 'payment', transactionId],
    );
    const details = JSON.parse(entry.details) as Json;
    assert.deepEqual(
      [details.kind, details.outcome, details.payment_status, details.provider_shows],
      ['payment_attempt', 'succeeded', 'paid', answer.provider_shows],
    );
    const review = await call<Json>(server, 'GET', `/api/payments/${transactionId}/`, { token: owner.token });
    assert.equal(review.body.provider_review, null, 'nothing left to review');

    const again = await kassa(['operation', 'resolve', key], server.env);
    assert.deepEqual(
      [again.code, again.stderr.trim()],
      [
        1,
        `kassa: ${key} is not flagged: it is done (succeeded). Only a flagged provider call can be resolved.`,
      ],
    );
    assert.equal(await settlementsOf(server.ctx, paid.id), 1);
    assert.equal((await audits(key)).length, 1);
    const empty = await kassa(['operation', 'list', '--org', owner.slug], server.env);
    assert.deepEqual(JSON.parse(empty.stdout), []);
    await assertLedgerBalanced(server.ctx, owner.organizationId);
  });

  test('two operators resolving the same charge at once: one resolution, one refusal, settled once', async () => {
    const { transactionId, key } = await attemptAnswerLost(reached);
    const results = await Promise.allSettled([resolve(key), resolve(key), resolve(key)]);
    assert.deepEqual(results.map((result) => result.status).sort(), ['fulfilled', 'rejected', 'rejected']);
    for (const result of results) {
      if (result.status === 'rejected')
        assert.match(String(result.reason), new RegExp(`${key} is not flagged: it is done \\(succeeded\\)`));
    }
    const paid = await paymentRow(transactionId);
    assert.equal(paid.status, 'paid');
    assert.equal(await settlementsOf(server.ctx, paid.id), 1);
    assert.equal((await audits(key)).length, 1);
    await assertLedgerBalanced(server.ctx, owner.organizationId);
  });

  test('an attempt that never reached the provider: refused while it may still arrive, then failed with its slot freed; the customer pays again once', async () => {
    const { checkout, transactionId, key } = await attemptAnswerLost(neverSent);
    assert.deepEqual(await simAttempts(server.ctx, transactionId), [], 'the simulator has nothing');
    assert.equal((await pay(server, checkout.token)).status, 409, 'the slot waits for the answer');

    await refusal(
      resolve(key),
      409,
      new RegExp(
        `^simulator has no trace of ${key} yet, but the call may still reach it until [-:.TZ\\d]+\\. Nothing changed; resolve it after that\\.$`,
      ),
    );
    await unchanged(key);

    await age(key);
    const resolved = await resolve(key);
    assert.deepEqual(
      [resolved.outcome, resolved.outcome_code, resolved.payment_status, resolved.provider_shows],
      ['failed', 'never_reached_provider', 'processing', `no payment for ${transactionId}`],
    );
    assert.deepEqual(
      [(await operation(key)).state, (await operation(key)).outcome_code],
      ['done', 'never_reached_provider'],
    );
    const payment = await paymentRow(transactionId);
    assert.equal((await sessionOf(payment)).attempt_locked_until, null, 'the customer may try again');
    const again = await pay(server, checkout.token);
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.payment_status, 'paid');
    assert.deepEqual(
      (await simAttempts(server.ctx, transactionId)).map((attempt) => attempt.idempotencyKey),
      [`kassa-pay-${transactionId}-2`],
      'charged once, by the new attempt',
    );
    assert.equal(await settlementsOf(server.ctx, payment.id), 1);
    await refusal(resolve(key), 409, /is not flagged: it is done \(failed: never_reached_provider\)/);
    assert.equal((await audits(key)).length, 1);
  });

  test('a declined attempt: the decline is recorded, the payment still takes attempts', async () => {
    const { checkout, key } = await attemptAnswerLost(reached, CARDS.declined);
    const resolved = await resolve(key);
    assert.deepEqual(
      [resolved.outcome, resolved.outcome_code, resolved.payment_status],
      ['failed', 'card_declined', 'processing'],
    );
    assert.match(resolved.provider_shows, /^declined \(card_declined; simpay_\w+, PROCESSING\)$/);
    assert.equal((await operation(key)).outcome_code, 'card_declined');
    assert.equal((await pay(server, checkout.token)).body.payment_status, 'paid');
  });

  test("an attempt waiting for 3-D Secure is recorded as the reconciler records it and said still waiting (exit 1), never charged again; the customer's approval pays it; a provider that cannot be read is refused", async () => {
    const { checkout, transactionId, key } = await attemptAnswerLost(reached, THREE_DS);
    const unreadable = useProvider(
      server.ctx,
      wrapProvider(server.ctx.providers.simulator, {
        findPayment: async () => {
          throw new Error('503 Service Unavailable');
        },
      }),
    );
    try {
      await refusal(
        resolve(key),
        502,
        new RegExp(
          `^Kassa could not read ${key} back from simulator \\(503 Service Unavailable\\)\\. Nothing changed; resolve it once the provider answers\\.$`,
        ),
      );
    } finally {
      unreadable();
    }
    await unchanged(key);
    assert.equal((await paymentRow(transactionId)).provider_payment_id, null, 'nothing recorded');

    const resolved = await kassa(['operation', 'resolve', key], server.env);
    assert.equal(resolved.code, 1, 'not final: as the other answers that are not final');
    assert.equal(
      resolved.stderr.trim(),
      `kassa: ${key} is still waiting for the customer's authentication. Recorded as the reconciler records it (no longer flagged); the provider decides the rest, and Kassa follows it.`,
    );
    const answer = JSON.parse(resolved.stdout) as Json;
    assert.deepEqual(
      [answer.outcome, answer.outcome_code, answer.waiting, answer.payment_status],
      ['requires_action', null, "still waiting for the customer's authentication", 'processing'],
    );
    assert.match(
      String(answer.provider_shows),
      /^waiting for the customer's authentication \(simpay_\w+, PROCESSING\)$/,
    );
    // What the reconciler records of the same answer: the row settled with it, the provider payment
    // applied, the checkout's slot freed.
    const settled = await operation(key);
    assert.deepEqual(
      [settled.state, settled.outcome, settled.provider_object_id],
      ['done', 'requires_action', answer.provider_object_id],
    );
    const payment = await paymentRow(transactionId);
    assert.equal(payment.provider_payment_id, answer.provider_object_id);
    assert.equal((await sessionOf(payment)).attempt_locked_until, null);
    assert.equal((await simAttempts(server.ctx, transactionId)).length, 1, 'never charged again');
    assert.equal((await audits(key)).length, 1);
    await refusal(resolve(key), 409, /is not flagged: it is done \(requires_action\)/);

    // The customer's page shows the challenge; their approval pays it, once.
    await approve(checkout.token);
    await syncStatus(server, checkout.token);
    const paid = await paymentRow(transactionId);
    assert.equal(paid.status, 'paid');
    assert.equal(await settlementsOf(server.ctx, paid.id), 1);
    assert.equal((await simAttempts(server.ctx, transactionId)).length, 1, 'charged once');
    await assertLedgerBalanced(server.ctx, owner.organizationId);
  });

  test('an attempt the provider no longer waits on once canceled there is recorded failed', async () => {
    const { transactionId, key } = await attemptAnswerLost(reached, THREE_DS);
    // The operator cancels it at the provider: the attempt is decided, and recorded so.
    const found = await server.ctx.providers.simulator.findPayment(transactionId);
    await server.ctx.providers.simulator.cancelPayment(found?.providerPaymentId as string);
    const resolved = await resolve(key);
    assert.deepEqual(
      [resolved.outcome, resolved.payment_status, resolved.waiting],
      ['failed', 'canceled', null],
    );
    assert.equal((await operation(key)).state, 'done');
  });

  /** A refund of a paid payment sent through `createRefund` (wrapped); its answer lost, then flagged. */
  const refundAnswerLost = async (createRefund: PaymentProvider['createRefund']) => {
    const checkout = await createCheckout(server, apiKey);
    const paid = await pay(server, checkout.token);
    assert.equal(paid.body.payment_status, 'paid', paid.text);
    const transactionId = paid.body.transaction_id as string;
    const restore = useProvider(server.ctx, wrapProvider(server.ctx.providers.simulator, { createRefund }));
    let refund: Awaited<ReturnType<typeof call<Json>>>;
    try {
      refund = await call<Json>(server, 'POST', `/api/transactions/${transactionId}/refund/`, {
        apiKey,
        body: { amount: '10.00', reason: 'flagged' },
      });
    } finally {
      restore();
    }
    assert.equal(refund.status, 200, refund.text);
    assert.equal(refund.body.status, 'pending');
    const refundId = refund.body.refund_id as number;
    const publicId = refund.body.id as string;
    const key = `kassa-refund-${publicId}`;
    await flagAfterLastRead(server.ctx, key, 'simulator unreachable');
    return { transactionId, refundId, publicId, key };
  };

  /** The bank decides a processing refund at the simulator (its delay runs out). */
  const bankDecides = (publicId: string) =>
    simulatorDb(db())
      .updateTable('sim_refunds')
      .set({ completes_at: new Date(Date.now() - 1000).toISOString() })
      .where('reference', '=', publicId)
      .execute();
  const sentThenLost: PaymentProvider['createRefund'] = async (input) => {
    await server.ctx.providers.simulator.createRefund(input);
    throw new Error('socket hang up');
  };

  test('a refund still processing at the provider is recorded so, as the reconciler records it (exit 1, still processing), and the refund sync completes it once', async () => {
    const { refundId, publicId, key } = await refundAnswerLost(sentThenLost);
    const resolved = await kassa(['operation', 'resolve', key], server.env);
    assert.equal(resolved.code, 1);
    assert.match(
      resolved.stderr,
      new RegExp(`^kassa: ${key} is still processing at the provider\\. Recorded`),
    );
    const answer = JSON.parse(resolved.stdout) as Json;
    assert.deepEqual(
      [answer.outcome, answer.waiting, answer.refund_id],
      ['pending', 'still processing at the provider', publicId],
    );
    assert.match(String(answer.provider_shows), /^refund processing \(simref_\w+\)$/);
    assert.deepEqual([(await operation(key)).state, (await operation(key)).outcome], ['done', 'pending']);
    const processing = await refundRow(refundId);
    assert.equal(processing.provider_refund_id, answer.provider_object_id);
    assert.deepEqual(await movements(refundId), ['refund_hold'], 'held while the bank decides');

    await bankDecides(publicId);
    await syncRefunds(server.ctx);
    await syncRefunds(server.ctx);
    assert.equal((await refundRow(refundId)).status, 'completed');
    assert.deepEqual(await movements(refundId), ['refund_hold', 'refund_debit'], 'debited once');
    assert.equal((await audits(key)).length, 1);
    await assertLedgerBalanced(server.ctx, owner.organizationId);
  });

  test('a refund the provider completed: concurrently resolved, recorded completed and the wallet debited once', async () => {
    const { transactionId, refundId, publicId, key } = await refundAnswerLost(sentThenLost);
    await bankDecides(publicId);
    const results = await Promise.allSettled([resolve(key), resolve(key)]);
    assert.deepEqual(results.map((result) => result.status).sort(), ['fulfilled', 'rejected']);
    const resolved = results.find((result) => result.status === 'fulfilled')?.value;
    assert.deepEqual(
      [
        resolved?.outcome,
        resolved?.waiting,
        resolved?.refund_id,
        resolved?.refund_status,
        resolved?.transaction_id,
      ],
      ['succeeded', null, publicId, 'completed', transactionId],
    );
    assert.match(String(resolved?.provider_shows), /^refund completed \(simref_\w+\)$/);
    const refund = await refundRow(refundId);
    assert.deepEqual([refund.status, refund.provider_refund_id], ['completed', resolved?.provider_object_id]);
    assert.deepEqual(await movements(refundId), ['refund_hold', 'refund_debit'], 'debited once');
    assert.equal((await paymentRow(transactionId)).refunded_amount, 1000);
    const [entry, ...more] = await audits(key);
    assert.equal(more.length, 0);
    assert.deepEqual(
      [entry.actor_type, entry.target_type, entry.target_id],
      ['operator', 'refund', publicId],
    );
    await assertLedgerBalanced(server.ctx, owner.organizationId);
  });

  test('a refund that never reached the provider fails once, concurrently resolved: its hold released once, its amount refundable again', async () => {
    const { transactionId, refundId, key } = await refundAnswerLost(async () => {
      throw new Error('connect ECONNREFUSED');
    });
    await refusal(resolve(key), 409, /may still reach it until/);
    await unchanged(key);
    assert.equal((await paymentRow(transactionId)).status, 'refund_pending');

    await age(key);
    const results = await Promise.allSettled([resolve(key), resolve(key), resolve(key)]);
    assert.deepEqual(results.map((result) => result.status).sort(), ['fulfilled', 'rejected', 'rejected']);
    const resolved = results.find((result) => result.status === 'fulfilled')?.value;
    assert.deepEqual(
      [resolved?.outcome_code, resolved?.refund_status, resolved?.payment_status, resolved?.provider_shows],
      ['never_reached_provider', 'failed', 'paid', `no refund for ${resolved?.refund_id}`],
    );
    const refund = await refundRow(refundId);
    assert.deepEqual(
      [refund.status, refund.error_message],
      ['failed', 'The refund never reached the provider; nothing was refunded.'],
    );
    assert.deepEqual(await movements(refundId), ['refund_hold', 'refund_release'], 'released once');
    assert.equal((await audits(key)).length, 1);
    await assertLedgerBalanced(server.ctx, owner.organizationId);
    // The amount is refundable again: the whole payment, that refund's 10.00 included.
    const whole = await call<Json>(server, 'POST', `/api/transactions/${transactionId}/refund/`, {
      apiKey,
      body: { reason: 'again' },
    });
    assert.equal(whole.status, 200, whole.text);
    assert.equal(whole.body.amount, '50.00');
  });

  let plan: Awaited<ReturnType<typeof call<{ id: string }>>> | undefined;
  /** A trial signup whose card is saved through `setupCard` (wrapped); its answer lost, then flagged (if `flag`). */
  const signup = async (
    setupCard: PaymentProvider['setupCard'],
    cardNumber: string = CARDS.success,
    flag = true,
  ) => {
    plan ??= await call<{ id: string }>(server, 'POST', '/api/subscriptions/plans/', {
      token: owner.token,
      body: { name: 'Trial', amount: '9.00', interval: 'month', trial_days: 14 },
    });
    assert.equal(plan.status, 201, plan.text);
    const email = `trial-${Math.random().toString(36).slice(2)}@example.com`;
    const started = await call<{ token: string; checkout_id: string }>(
      server,
      'POST',
      `/api/subscriptions/public/${plan.body.id}/start/`,
      { body: billing({ billing_email: email }) },
    );
    assert.equal(started.status, 201, started.text);
    const restore = useProvider(server.ctx, wrapProvider(server.ctx.providers.simulator, { setupCard }));
    try {
      const lost = await pay(server, started.body.token, cardNumber);
      assert.equal(lost.body.outcome, 'unknown', lost.text);
    } finally {
      restore();
    }
    const session = await db()
      .selectFrom('checkout_sessions')
      .selectAll()
      .where('public_id', '=', started.body.checkout_id)
      .executeTakeFirstOrThrow();
    const [{ idempotency_key: key }] = await operationsOf(server.ctx, 'checkout_session', session.id);
    if (flag) await flagAfterLastRead(server.ctx, key, 'simulator unreachable');
    const subscriptions = () =>
      db()
        .selectFrom('subscriptions')
        .select('status')
        .where('customer_email', '=', email)
        .execute()
        .then((rows) => rows.map((row) => row.status));
    return { started: started.body, session, key, subscriptions };
  };

  const savedThenLost: PaymentProvider['setupCard'] = async (input) => {
    await server.ctx.providers.simulator.setupCard(input);
    throw new Error('socket hang up');
  };

  test("a trial's card saved while its answer was lost: the subscription is made; a setup never made frees the checkout", async () => {
    const saved = await signup(savedThenLost);
    assert.deepEqual(await saved.subscriptions(), []);
    const resolved = await resolve(saved.key);
    assert.deepEqual(
      [resolved.kind, resolved.outcome, resolved.checkout_id, resolved.completed],
      ['signup_setup', 'succeeded', saved.started.checkout_id, true],
    );
    assert.deepEqual(await saved.subscriptions(), ['trialing']);
    assert.equal((await audits(saved.key))[0]?.target_id, saved.started.checkout_id);
    await refusal(resolve(saved.key), 409, /is not flagged: it is done \(succeeded\)/);
    assert.equal((await saved.subscriptions()).length, 1);

    const never = await signup(async () => {
      throw new Error('connect ECONNREFUSED');
    });
    await age(never.key);
    const failed = await resolve(never.key);
    assert.deepEqual([failed.outcome_code, failed.completed], ['never_reached_provider', false]);
    const session = await db()
      .selectFrom('checkout_sessions')
      .selectAll()
      .where('id', '=', never.session.id)
      .executeTakeFirstOrThrow();
    assert.equal(session.attempt_locked_until, null, 'the customer may save a card again');
    assert.equal((await pay(server, never.started.token)).body.status, 'SUCCESS');
    assert.deepEqual(await never.subscriptions(), ['trialing']);

    // A card waiting for the customer's 3-D Secure: recorded as its answer would have been (the setup
    // kept for the page, the slot freed), not as "no record", and said plainly (exit 1).
    const waiting = await signup(savedThenLost, THREE_DS);
    const answered = await kassa(['operation', 'resolve', waiting.key], server.env);
    assert.equal(answered.code, 1);
    assert.equal(
      answered.stderr.trim(),
      `kassa: ${waiting.key} is still waiting for the customer's authentication. Recorded as the reconciler records it (no longer flagged); the provider decides the rest, and Kassa follows it.`,
    );
    const shown = JSON.parse(answered.stdout) as Json;
    assert.deepEqual(
      [shown.outcome, shown.waiting, shown.completed],
      ['requires_action', "still waiting for the customer's authentication", false],
    );
    assert.match(String(shown.provider_shows), /^setup requires_action \(simseti_\w+\)$/);
    assert.deepEqual(
      [(await operation(waiting.key)).state, (await operation(waiting.key)).outcome],
      ['done', 'requires_action'],
    );
    assert.deepEqual(await waiting.subscriptions(), []);
    await approve(waiting.started.token);
    assert.deepEqual(await waiting.subscriptions(), ['trialing']);
  });

  test("the reconciler reads a trial's card waiting for 3-D Secure as its answer, not as never made: the customer approves it", async () => {
    const { started, session, key, subscriptions } = await signup(savedThenLost, THREE_DS, false);
    // Past any arrival margin, two reads: a setup taken for "no record" would be "never made" here.
    await age(key);
    for (let read = 0; read < 2; read++) {
      await reconcileOperation(server.ctx, operationHandlers, await operation(key));
    }
    const read = await operation(key);
    assert.deepEqual([read.state, read.outcome, read.outcome_code], ['done', 'requires_action', null]);
    const after = await db()
      .selectFrom('checkout_sessions')
      .selectAll()
      .where('id', '=', session.id)
      .executeTakeFirstOrThrow();
    assert.equal(after.signup_setup_id, read.provider_object_id, 'the setup kept for the page');
    assert.equal(after.attempt_locked_until, null);
    await approve(started.token);
    assert.deepEqual(await subscriptions(), ['trialing']);
  });

  test('only a flagged call of a kind Kassa reads back is resolved: unknown keys, renewal tries, other kinds, settled calls and bad arguments are refused', async () => {
    const now = new Date().toISOString();
    const record = (kind: string, idempotencyKey: string) =>
      recordOperation(
        db(),
        {
          kind,
          idempotencyKey,
          provider: 'simulator',
          environment: 'production',
          organizationId: owner.organizationId,
          subjectType: kind === 'renewal_charge' ? 'subscription_cycle' : 'payment',
          subjectId: 1,
          reference: 'TXflagged',
        },
        now,
        server.ctx.config.reconcileScheduleMs,
      );
    const flag = (row: OperationRow) =>
      db()
        .updateTable('provider_operations')
        .set({ state: 'flagged', flagged_at: now, last_read_error: 'unreadable' })
        .where('id', '=', row.id)
        .execute();
    await flag(await record('renewal_charge', 'kassa-renew-0-1'));
    await flag(await record('customer', 'kassa-customer-SUflagged'));
    const { key: doneKey } = await attemptAnswerLost(reached);
    await resolve(doneKey);
    // Independent commands, run side by side: each is its own process.
    await assertRefused(
      ['operation', 'resolve'],
      [
        [['kassa-pay-TX0-1'], 'kassa: No provider operation kassa-pay-TX0-1.'],
        [
          ['kassa-renew-0-1'],
          'kassa: kassa-renew-0-1 is a renewal_charge operation: resolve it with kassa renewal resolve kassa-renew-0-1 paid|not-charged.',
        ],
        [
          ['kassa-customer-SUflagged'],
          'kassa: kassa-customer-SUflagged is a customer operation, which Kassa cannot read back: settle it at the provider.',
        ],
        [
          [doneKey],
          `kassa: ${doneKey} is not flagged: it is done (succeeded). Only a flagged provider call can be resolved.`,
        ],
      ],
      server.env,
    );
    // Every kind is listed, each with the command that settles it.
    const listed = await kassa(['operation', 'list', '--org', owner.slug], server.env);
    assert.deepEqual(
      (JSON.parse(listed.stdout) as Json[]).map((row) => [row.operation, row.kind, row.resolve]),
      [
        ['kassa-renew-0-1', 'renewal_charge', 'kassa renewal resolve kassa-renew-0-1 paid|not-charged'],
        ['kassa-customer-SUflagged', 'customer', null],
      ],
    );
    // kassa doctor points to both commands.
    const doctor = await kassa(['doctor'], server.env);
    assert.match(
      doctor.stdout,
      /^warn {2}2 provider call\(s\) flagged for review \(1 customer, 1 renewal_charge\): see each payment's provider review; kassa operation list, then kassa operation resolve; renewal tries: kassa renewal list, then kassa renewal resolve$/m,
    );
    const renewals = await kassa(
      ['operation', 'list', '--org', owner.slug, '--kind', 'renewal_charge', '--limit', '5'],
      server.env,
    );
    assert.deepEqual(
      (JSON.parse(renewals.stdout) as Json[]).map((row) => row.operation),
      ['kassa-renew-0-1'],
    );
    // Bad arguments stop before the database is opened: run in this process, as main.ts runs a command.
    const resolveArgs = await refusedArguments(commands['operation resolve'], [
      { values: {}, positionals: [] },
      { values: {}, positionals: [doneKey, 'paid'] },
    ]);
    const listArgs = await refusedArguments(commands['operation list'], [
      { values: {}, positionals: ['x'] },
      { values: { limit: '0' }, positionals: [] },
    ]);
    assert.deepEqual([...resolveArgs.codes, ...listArgs.codes], [1, 1, 1, 1]);
    assert.deepEqual(
      [...resolveArgs.errors, ...listArgs.errors],
      [
        'kassa: operation resolve needs the <operation> to resolve (see --help).',
        'kassa: operation resolve needs the <operation> to resolve (see --help).',
        'kassa: operation list takes no arguments (see --help).',
        'kassa: --limit must be a whole number from 1 to 1000, got "0".',
      ],
    );
  });
});

describe(`resolving a flagged PaymentIntent opening on Stripe (${DB_KIND})`, () => {
  let fake: FakeStripe;
  let server: TestServer;
  let close: () => Promise<void>;
  let apiKey: string;
  before(async () => {
    ({ fake, server, close } = await startWithStripe({ worker: false }));
    apiKey = await createTestKey(server, await createTestMerchant(server, 'Flagged Stripe Shop'));
  });
  after(() => close());

  const intentsFor = (reference: string) =>
    [...fake.ledger.intents.values()].filter((intent) => intent.metadata.kassa_transaction_id === reference);
  const page = (token: string) => call<Json>(server, 'GET', `/api/checkout/${token}/`);
  /** The hosted step's PaymentIntent opened through `openPayment` (wrapped), its answer lost, then flagged. */
  const openingLost = async (openPayment: PaymentProvider['openPayment']) => {
    const checkout = await createCheckout(server, apiKey);
    const stripe = server.ctx.providers.named('stripe');
    const restore = useProvider(server.ctx, wrapProvider(stripe, { openPayment }));
    let lost: Awaited<ReturnType<typeof page>>;
    try {
      lost = await page(checkout.token);
    } finally {
      restore();
    }
    assert.equal((lost.body.provider as Json).client_secret, null, lost.text);
    const transactionId = lost.body.transaction_id as string;
    const key = `kassa-pay-${transactionId}`;
    await flagAfterLastRead(server.ctx, key, 'Stripe unreachable');
    return { checkout, transactionId, key };
  };

  test('opened at Stripe while the answer was lost: found by its reference and recorded; one PaymentIntent', async () => {
    const stripe = server.ctx.providers.named('stripe');
    const { checkout, transactionId, key } = await openingLost(async (input) => {
      await stripe.openPayment(input);
      throw new Error('socket hang up');
    });
    assert.equal(intentsFor(transactionId).length, 1);
    const resolved = await resolveFlaggedOperation(server.ctx, operationHandlers, key);
    assert.deepEqual(
      [resolved.kind, resolved.outcome, resolved.payment_status],
      ['payment_open', 'succeeded', 'processing'],
    );
    assert.match(resolved.provider_shows, /^opened \(pi_\w+, PROCESSING\)$/);
    assert.equal(resolved.provider_payment_id, intentsFor(transactionId)[0].id);
    const shown = await page(checkout.token);
    assert.match(String((shown.body.provider as Json).client_secret), /^pi_\w+_secret_/);
    assert.equal(intentsFor(transactionId).length, 1, 'never a second PaymentIntent');
  });

  test('never opened at Stripe: recorded never made, and the page opens it under the same key', async () => {
    const { checkout, transactionId, key } = await openingLost(async () => {
      throw new Error('connect ECONNREFUSED');
    });
    assert.equal(intentsFor(transactionId).length, 0);
    await ageCall(server, key);
    const resolved = await resolveFlaggedOperation(server.ctx, operationHandlers, key);
    assert.deepEqual(
      [resolved.outcome_code, resolved.provider_shows, resolved.provider_payment_id],
      ['never_reached_provider', `no payment for ${transactionId}`, null],
    );
    const shown = await page(checkout.token);
    assert.match(String((shown.body.provider as Json).client_secret), /^pi_\w+_secret_/);
    assert.equal(intentsFor(transactionId).length, 1);
    const operation = await operationByKey(server.ctx.db, key);
    assert.deepEqual(
      [operation?.idempotency_key, operation?.state, operation?.outcome],
      [key, 'done', 'succeeded'],
    );
  });
});
