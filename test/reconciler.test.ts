// Write-ahead operation rows and the reconciler: a provider call whose answer is lost is read back from the
// provider by its key, never made again; one the provider never received is concluded never-made at the
// second read (the checkout may take an attempt again); one that cannot be read is flagged after the last
// read and shown in the dashboard.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CARDS, createCheckout, pay } from './helpers/checkout.ts';
import {
  eventStatuses,
  operationsOf,
  reconcile,
  settlementsOf,
  simAttempts,
} from './helpers/provider-checks.ts';
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
import { assertLedgerBalanced } from './helpers/wallet-fixtures.ts';

type Json = Record<string, unknown>;
/** The reads, counted from the call: 1 min, 5 min, 1 h, 6 h, 20 h (the decisions' schedule, the default). */
const SCHEDULE_MS = [60_000, 300_000, 3_600_000, 21_600_000, 72_000_000];

async function payment(server: TestServer, publicId: string) {
  return server.ctx.db
    .selectFrom('payments')
    .selectAll()
    .where('public_id', '=', publicId)
    .executeTakeFirstOrThrow();
}

describe(`timeout_after_success (${DB_KIND})`, () => {
  let server: TestServer;
  let merchant: Merchant;
  let key: string;
  let offsetMs = 0;
  before(async () => {
    server = await startTestServer({
      worker: false,
      clock: () => new Date(Date.now() + offsetMs),
      env: { KASSA_SIM_FAULT: 'timeout_after_success' },
    });
    merchant = await createTestMerchant(server, 'Timeout Shop');
    key = await createTestKey(server, merchant);
  });
  after(() => server.close());

  test('one charge, found by the reconciler, never a second', async () => {
    const checkout = await createCheckout(server, key);
    const first = await pay(server, checkout.token, CARDS.success);
    assert.equal(first.status, 200, first.text);
    // The simulator recorded the charge and never answered: Kassa does not know, and says so.
    assert.equal(first.body.outcome, 'unknown');
    assert.equal(first.body.payment_status, 'processing');
    assert.equal(first.body.attempt, null);
    const id = first.body.transaction_id as string;
    const row = await payment(server, id);
    const [operation] = await operationsOf(server.ctx, 'payment', row.id);
    assert.deepEqual(
      [operation.kind, operation.idempotency_key, operation.state],
      ['payment_attempt', `kassa-pay-${id}-1`, 'unknown'],
    );
    // The customer cannot make a second charge while the first is unknown.
    const again = await pay(server, checkout.token, CARDS.success);
    assert.equal(again.status, 409, again.text);
    // Before its first read (1 min after the call) the reconciler leaves it alone.
    assert.equal(await reconcile(server.ctx), 0);
    offsetMs += SCHEDULE_MS[0];
    assert.equal(await reconcile(server.ctx), 1);
    const [settled] = await operationsOf(server.ctx, 'payment', row.id);
    assert.deepEqual([settled.state, settled.outcome, settled.reads], ['done', 'succeeded', 1]);
    const paid = await payment(server, id);
    assert.equal(paid.status, 'paid');
    assert.equal((await simAttempts(server.ctx, id)).length, 1, 'one charge at the provider');
    assert.equal(await settlementsOf(server.ctx, paid.id), 1, 'one ledger credit');
    assert.deepEqual(await eventStatuses(server.ctx, id), ['processing', 'paid'], 'one event per change');
    // Paid: a later attempt is refused, and the reconciler has nothing left to do.
    assert.equal((await pay(server, checkout.token, CARDS.success)).status, 410);
    offsetMs += SCHEDULE_MS[4];
    assert.equal(await reconcile(server.ctx), 0);
    assert.equal((await simAttempts(server.ctx, id)).length, 1);
    await assertLedgerBalanced(server.ctx, merchant.organizationId);
  });
});

describe(`operation rows and the reconciler (${DB_KIND})`, () => {
  let server: TestServer;
  let merchant: Merchant;
  let key: string;
  let offsetMs = 0;
  before(async () => {
    server = await startTestServer({ worker: false, clock: () => new Date(Date.now() + offsetMs) });
    merchant = await createTestMerchant(server, 'Reconciled Shop');
    key = await createTestKey(server, merchant);
  });
  after(() => server.close());

  test('each card attempt commits its row first, keyed kassa-pay-{id}-{n}, and records the answer', async () => {
    const checkout = await createCheckout(server, key);
    const declined = await pay(server, checkout.token, CARDS.declined);
    assert.equal(declined.body.outcome, 'failed');
    const paid = await pay(server, checkout.token, CARDS.success);
    assert.equal(paid.body.outcome, 'succeeded');
    const id = paid.body.transaction_id as string;
    const operations = await operationsOf(server.ctx, 'payment', (await payment(server, id)).id);
    assert.deepEqual(
      operations.map((op) => [op.idempotency_key, op.state, op.outcome, op.outcome_code]),
      [
        [`kassa-pay-${id}-1`, 'done', 'failed', 'card_declined'],
        [`kassa-pay-${id}-2`, 'done', 'succeeded', null],
      ],
    );
    const sim = await simAttempts(server.ctx, id);
    assert.deepEqual(
      sim.map((attempt) => attempt.idempotencyKey),
      [`kassa-pay-${id}-1`, `kassa-pay-${id}-2`],
    );
  });

  test('a call that never reached the provider is never-made at the second read; the customer pays again', async () => {
    const simulator = server.ctx.providers.simulator;
    const restore = useProvider(
      server.ctx,
      wrapProvider(simulator, {
        chargeCard: async () => {
          throw new Error('connect ECONNREFUSED');
        },
      }),
    );
    const checkout = await createCheckout(server, key);
    const lost = await pay(server, checkout.token, CARDS.success);
    restore();
    assert.equal(lost.body.outcome, 'unknown');
    const id = lost.body.transaction_id as string;
    const row = await payment(server, id);
    assert.equal(
      (await pay(server, checkout.token, CARDS.success)).status,
      409,
      'the lock waits for the answer',
    );
    offsetMs += SCHEDULE_MS[0];
    await reconcile(server.ctx);
    // The first read finds nothing: perhaps the call is still on its way. It stays unknown.
    let [operation] = await operationsOf(server.ctx, 'payment', row.id);
    assert.deepEqual([operation.state, operation.reads], ['unknown', 1]);
    offsetMs += SCHEDULE_MS[1];
    assert.equal(await reconcile(server.ctx), 1);
    [operation] = await operationsOf(server.ctx, 'payment', row.id);
    assert.deepEqual(
      [operation.state, operation.outcome, operation.outcome_code],
      ['done', 'failed', 'never_reached_provider'],
    );
    const again = await pay(server, checkout.token, CARDS.success);
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.payment_status, 'paid');
    assert.deepEqual(
      (await simAttempts(server.ctx, id)).map((attempt) => attempt.idempotencyKey),
      [`kassa-pay-${id}-2`],
    );
    assert.equal(await settlementsOf(server.ctx, row.id), 1);
  });

  test('no record is not "never made" while the call could still arrive: twice the timeout, with the client\'s retry', async () => {
    const simulator = server.ctx.providers.simulator;
    const restore = useProvider(
      server.ctx,
      wrapProvider(simulator, {
        chargeCard: async () => {
          throw new Error('socket hang up');
        },
      }),
    );
    // Timeouts long enough that the second read (5 min) comes before the call could have arrived and
    // shown: twice 4 min; twice 2 min 10 s and the minute Stripe's search may lag.
    const timeoutMs = server.ctx.config.providerTimeoutMs;
    try {
      for (const timeout of [240_000, 130_000]) {
        server.ctx.config.providerTimeoutMs = timeout;
        const checkout = await createCheckout(server, key);
        const lost = await pay(server, checkout.token, CARDS.success);
        assert.equal(lost.body.outcome, 'unknown');
        const row = await payment(server, lost.body.transaction_id as string);
        offsetMs += SCHEDULE_MS[0];
        await reconcile(server.ctx);
        offsetMs += SCHEDULE_MS[1] - SCHEDULE_MS[0];
        assert.equal(await reconcile(server.ctx), 0, `${timeout} ms: the second read settles nothing`);
        let [operation] = await operationsOf(server.ctx, 'payment', row.id);
        assert.deepEqual([operation.state, operation.reads], ['unknown', 2]);
        offsetMs += SCHEDULE_MS[2] - SCHEDULE_MS[1];
        assert.equal(await reconcile(server.ctx), 1, `${timeout} ms: the third, past all that, does`);
        [operation] = await operationsOf(server.ctx, 'payment', row.id);
        assert.deepEqual([operation.state, operation.outcome_code], ['done', 'never_reached_provider']);
      }
    } finally {
      server.ctx.config.providerTimeoutMs = timeoutMs;
      restore();
    }
  });

  test('reads that keep failing flag the row after the last one, and the dashboard shows it', async () => {
    const simulator = server.ctx.providers.simulator;
    const unreachable = async () => {
      throw new Error('503 Service Unavailable');
    };
    const restore = useProvider(
      server.ctx,
      wrapProvider(simulator, { chargeCard: unreachable, findPayment: unreachable }),
    );
    try {
      const checkout = await createCheckout(server, key);
      const lost = await pay(server, checkout.token, CARDS.success);
      const id = lost.body.transaction_id as string;
      const row = await payment(server, id);
      // A fresh dashboard session each time: the clock moves past a session's life here.
      const session = async () =>
        (
          await call<{ token: string }>(server, 'POST', '/api/auth/login/', {
            body: { email: merchant.email, password: merchant.password },
          })
        ).body.token;
      const detail = async () =>
        call<Json>(server, 'GET', `/api/payments/${id}/`, { token: await session() });
      assert.deepEqual(
        ((await detail()).body.provider_review as Json).state,
        'confirming',
        'being read back meanwhile',
      );
      for (const offset of SCHEDULE_MS) {
        offsetMs += offset;
        await reconcile(server.ctx);
      }
      const [operation] = await operationsOf(server.ctx, 'payment', row.id);
      assert.equal(operation.state, 'flagged');
      assert.equal(operation.reads, SCHEDULE_MS.length);
      assert.match(operation.last_read_error ?? '', /503 Service Unavailable/);
      const review = (await detail()).body.provider_review as Json;
      assert.deepEqual([review.state, review.operation], ['flagged', `kassa-pay-${id}-1`]);
      const list = await call<{ results: Json[] }>(server, 'GET', '/api/payments/', {
        token: await session(),
      });
      const listed = list.body.results.find((item) => item.id === id);
      assert.ok(listed, list.text);
      assert.equal(((listed as Json).provider_review as Json).state, 'flagged');
      // Flagged rows are read no more.
      offsetMs += SCHEDULE_MS[4];
      assert.equal(await reconcile(server.ctx), 0);
    } finally {
      restore();
    }
  });

  test('a refund whose answer was lost is read back by its reference, and never sent twice', async () => {
    const checkout = await createCheckout(server, key);
    const paid = await pay(server, checkout.token, CARDS.success);
    const id = paid.body.transaction_id as string;
    const simulator = server.ctx.providers.simulator;
    let sent = 0;
    const restore = useProvider(
      server.ctx,
      wrapProvider(simulator, {
        async createRefund(input) {
          sent += 1;
          await simulator.createRefund(input);
          throw new Error('socket hang up');
        },
      }),
    );
    const refund = await call<Json>(server, 'POST', `/api/transactions/${id}/refund/`, {
      apiKey: key,
      body: { amount: '10.00', reason: 'lost answer' },
    });
    restore();
    assert.equal(refund.status, 200, refund.text);
    assert.equal(refund.body.status, 'pending');
    const refundId = refund.body.refund_id as number;
    offsetMs += SCHEDULE_MS[0];
    assert.equal(await reconcile(server.ctx), 1);
    const [operation] = await operationsOf(server.ctx, 'refund', refundId);
    // By then the simulator has completed it (KASSA_SIM_REFUND_DELAY_MS): the read records that.
    assert.deepEqual([operation.state, operation.outcome], ['done', 'succeeded']);
    const row = await server.ctx.db
      .selectFrom('refunds')
      .selectAll()
      .where('id', '=', refundId)
      .executeTakeFirstOrThrow();
    assert.equal(row.status, 'completed');
    assert.equal(sent, 1);
    await assertLedgerBalanced(server.ctx, merchant.organizationId);
  });

  test('a refund that never reached the provider fails at the second read and its hold is released', async () => {
    const checkout = await createCheckout(server, key);
    const paid = await pay(server, checkout.token, CARDS.success);
    const id = paid.body.transaction_id as string;
    const restore = useProvider(
      server.ctx,
      wrapProvider(server.ctx.providers.simulator, {
        createRefund: async () => {
          throw new Error('connect ECONNREFUSED');
        },
      }),
    );
    const refund = await call<Json>(server, 'POST', `/api/transactions/${id}/refund/`, {
      apiKey: key,
      body: { reason: 'never sent' },
    });
    restore();
    const refundId = refund.body.refund_id as number;
    offsetMs += SCHEDULE_MS[0];
    await reconcile(server.ctx);
    offsetMs += SCHEDULE_MS[1];
    await reconcile(server.ctx);
    const row = await server.ctx.db
      .selectFrom('refunds')
      .selectAll()
      .where('id', '=', refundId)
      .executeTakeFirstOrThrow();
    assert.deepEqual(
      [row.status, row.error_message],
      ['failed', 'The refund never reached the provider; nothing was refunded.'],
    );
    assert.equal((await payment(server, id)).status, 'paid');
    await assertLedgerBalanced(server.ctx, merchant.organizationId);
  });
});
