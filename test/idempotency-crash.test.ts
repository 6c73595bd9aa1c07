// A request whose process dies after its change committed, before it answered: the client retries with
// the same Idempotency-Key once the key's lock has run out. The retry must replay the answer of the
// change that was made, never make the change a second time (a second refund of the same request).
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { syncRefund } from '../src/modules/refunds/sync.ts';
import type { PaymentProvider } from '../src/provider/types.ts';
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

/** The real provider, except that refund calls never answer until released (the process is gone). */
function providerThatHangsOnRefunds(real: PaymentProvider) {
  const hung: (() => void)[] = [];
  const provider: PaymentProvider = {
    name: real.name,
    createPayment: (input) => real.createPayment(input),
    getPayment: (id) => real.getPayment(id),
    findPayment: (reference) => real.findPayment(reference),
    createRefund: () =>
      new Promise((_resolve, reject) => {
        hung.push(() => reject(new Error('connection reset')));
      }),
    getRefund: (id) => real.getRefund(id),
    parseWebhook: (body, headers) => real.parseWebhook(body, headers),
  };
  const releaseAll = () => {
    for (const release of hung.splice(0)) release();
  };
  return { provider, releaseAll };
}

test(`a refund retried with its Idempotency-Key after its process died is replayed, not made twice (${DB_KIND})`, async () => {
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

  const real = server.ctx.provider;
  const hanging = providerThatHangsOnRefunds(real);
  server.ctx.provider = hanging.provider;
  // Its own connection, so that "the process died" can drop it: the answer never reaches the client.
  const first = request(`${server.url}${path}`, { method: 'POST', headers, agent: false });
  const firstOutcome = new Promise<string>((resolve) => {
    first.on('response', () => resolve('answered'));
    first.on('error', () => resolve('lost'));
  });
  first.end(body);
  // The refund and its hold committed; then the process "dies" before answering.
  const refund = await eventually(() =>
    server.ctx.db.selectFrom('refunds').selectAll().where('payment_id', '=', payment.id).executeTakeFirst(),
  );
  first.destroy();
  assert.equal(await firstOutcome, 'lost');

  // A surviving worker finishes the refund with the provider meanwhile (pending → processing → completed).
  server.ctx.provider = real;
  await syncRefund(server.ctx, refund);
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
