// A request that never answers after its change committed (as when its process dies): the client
// retries with the same Idempotency-Key once the key's lock has run out. The retry must replay the
// answer of the change that was made, never make the change a second time (a second refund of the same
// request). Nothing is killed here: the provider's refund call hangs and the client's connection is
// dropped, which leaves the database exactly as a death at that point would. The crash matrix
// (crash-matrix.test.ts) kills real processes at random points.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { syncRefund } from '../src/modules/refunds/sync.ts';
import { reconcileOperation } from '../src/provider/operations/reconciler.ts';
import type { PaymentProvider } from '../src/provider/types.ts';
import { operationHandlers } from '../src/worker/loops.ts';
import { useProvider, wrapProvider } from './helpers/providers.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  DB_KIND,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import { assertLedgerBalanced, eventually, payThroughCheckout } from './helpers/wallet-fixtures.ts';

const LOCK_MS = 200;
let server: TestServer;

before(async () => {
  server = await startTestServer({
    env: { KASSA_IDEMPOTENCY_LOCK_MS: String(LOCK_MS), KASSA_SIM_REFUND_DELAY_MS: '0' },
    worker: false,
  });
});

after(async () => {
  await server.close();
});

/** The real provider, except that a refund, once made, is never answered until released (the process is gone). */
function providerThatHangsOnRefunds(real: PaymentProvider) {
  const hung: (() => void)[] = [];
  let made: () => void = () => {};
  /** Resolves once the provider has made the refund (its answer is then held back). */
  const refundMade = new Promise<void>((resolve) => {
    made = resolve;
  });
  const provider = wrapProvider(real, {
    async createRefund(input) {
      await real.createRefund(input);
      made();
      return new Promise((_resolve, reject) => {
        hung.push(() => reject(new Error('connection reset')));
      });
    },
  });
  const releaseAll = () => {
    for (const release of hung.splice(0)) release();
  };
  return { provider, releaseAll, refundMade };
}

test(`a refund retried with its Idempotency-Key after it went unanswered is replayed, not made twice (${DB_KIND})`, async () => {
  const merchant = await createTestMerchant(server);
  const apiKey = await createTestKey(server, merchant);
  const payment = await payThroughCheckout(server, apiKey, { unitPrice: 100 });
  const path = `/api/transactions/${payment.public_id}/refund/`;
  const headers = {
    authorization: `Api-Key ${apiKey}`,
    'idempotency-key': 'refund-once',
    'content-type': 'application/json',
  };
  const body = JSON.stringify({ amount: '10.00', reason: 'one partial refund' });

  const hanging = providerThatHangsOnRefunds(server.ctx.providers.named('simulator'));
  const restore = useProvider(server.ctx, hanging.provider);
  // Its own connection, so that "the process died" can drop it: the answer never reaches the client.
  const first = request(`${server.url}${path}`, { method: 'POST', headers, agent: false });
  const firstOutcome = new Promise<string>((resolve) => {
    first.on('response', () => resolve('answered'));
    first.on('error', () => resolve('lost'));
  });
  first.end(body);
  // The refund and its hold committed, the provider made the refund; then the process "dies" before
  // answering. (The row alone is not enough: it commits before the provider call, which may not have
  // happened yet when the row is seen.)
  const refund = await eventually(() =>
    server.ctx.db.selectFrom('refunds').selectAll().where('payment_id', '=', payment.id).executeTakeFirst(),
  );
  await hanging.refundMade;
  first.destroy();
  assert.equal(await firstOutcome, 'lost');

  // A surviving worker finishes the refund meanwhile: the reconciler reads it back from the provider by
  // its reference (pending → processing), never sending it again, and the sync completes it.
  restore();
  const [operation] = await server.ctx.db
    .selectFrom('provider_operations')
    .selectAll()
    .where('idempotency_key', '=', `kassa-refund-${refund.public_id}`)
    .execute();
  assert.equal(operation.state, 'in_flight');
  assert.equal(await reconcileOperation(server.ctx, operationHandlers, operation), true);
  const processing = await server.ctx.db
    .selectFrom('refunds')
    .selectAll()
    .where('id', '=', refund.id)
    .executeTakeFirstOrThrow();
  await syncRefund(server.ctx, processing);

  // The client retries the same request once the key's lock has run out.
  await sleep(LOCK_MS + 50);
  const retry = await call<{ refund_id: number; status: string }>(server, 'POST', path, {
    headers,
    body,
  });
  assert.equal(retry.status, 200, retry.text);
  assert.equal(retry.headers.get('idempotent-replayed'), 'true');
  assert.equal(retry.body.refund_id, refund.id);
  const refunds = await server.ctx.db
    .selectFrom('refunds')
    .selectAll()
    .where('payment_id', '=', payment.id)
    .execute();
  assert.deepEqual(
    refunds.map((row) => [row.id, row.status, row.amount]),
    [[refund.id, 'completed', 1000]],
  );
  await assertLedgerBalanced(server.ctx, merchant.organizationId);
  hanging.releaseAll();
});
