// How many SQL statements a card payment takes, as the service counts them (kassa_db_statements_total
// at /metrics, BEGIN and COMMIT included): the figure `npm run bench` reports for the pay → sync flow,
// pinned here so that a statement added to the path shows. No worker runs: the count is the requests'.
// On PostgreSQL the answer's transaction sends its writes as one statement (src/db/write-behind.ts).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CARDS, createCheckout, pay, syncStatus } from './helpers/checkout.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  DB_KIND,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';

/**
 * A card payment's request, on each database:
 * - the attempt's transaction: BEGIN, the slot claimed by the checkout's token (no read before it,
 *   checkout-pay-order.test.ts), the payment opened, its event and the write-ahead operation (one
 *   statement on PostgreSQL: recordNewOperation; two on SQLite), COMMIT: 5 (6 on SQLite);
 * - the simulator's own row: 1;
 * - the answer's transaction. PostgreSQL: BEGIN, the payment locked with its attempts, the settlement's
 *   movement (a paid payment), the writes (the attempt, the payment, its event, the reserve, the
 *   entries, the wallet, the operation's outcome, the slot freed) as one statement, COMMIT: 5, or 4 for
 *   a decline (no settlement). SQLite: each write a statement of its own, 12 and 8.
 */
const PAY = DB_KIND === 'postgres' ? { paid: 11, declined: 10 } : { paid: 19, declined: 15 };

describe('statements of a card payment', () => {
  let server: TestServer;
  let apiKey: string;

  before(async () => {
    server = await startTestServer({ worker: false });
    apiKey = await createTestKey(server, await createTestMerchant(server));
    // The first payment of the organization makes its wallet, and the first request of the key reads it.
    const first = await createCheckout(server, apiKey);
    assert.equal((await pay(server, first.token)).status, 200);
  });
  after(() => server.close());

  async function statements(): Promise<number> {
    const text = await (await fetch(`${server.url}/metrics`)).text();
    const match = /^kassa_db_statements_total (\d+)/m.exec(text);
    assert.ok(match, '/metrics reports the statements');
    return Number(match[1]);
  }

  async function counted<T>(work: () => Promise<T>): Promise<{ result: T; statements: number }> {
    const before = await statements();
    const result = await work();
    return { result, statements: (await statements()) - before };
  }

  test('create, pay and sync-status of a paid payment take 1 + 11 + 1 statements on PostgreSQL', async () => {
    const create = await counted(() => createCheckout(server, apiKey));
    const paid = await counted(() => pay(server, create.result.token));
    assert.equal(paid.result.status, 200, paid.result.text);
    assert.equal(paid.result.body.payment_status, 'paid');
    const synced = await counted(() => syncStatus(server, create.result.token));
    assert.equal(synced.result.status, 200, synced.result.text);
    assert.deepEqual(
      { create: create.statements, pay: paid.statements, sync: synced.statements },
      { create: 1, pay: PAY.paid, sync: 1 },
    );
    // What the one statement wrote is all there: the payment paid and settled, with its attempt.
    const transaction = await call(server, 'GET', `/api/transactions/${paid.result.body.transaction_id}/`, {
      apiKey,
    });
    assert.equal(transaction.body.status, 'paid');
    assert.equal((transaction.body.depositAttempts as unknown[]).length, 1);
    const settled = await server.ctx.db
      .selectFrom('payments')
      .innerJoin('wallet_movements', 'wallet_movements.reference_id', 'payments.id')
      .select(['payments.settled_at', 'wallet_movements.amount'])
      .where('payments.public_id', '=', String(paid.result.body.transaction_id))
      .where('wallet_movements.kind', '=', 'settlement')
      .executeTakeFirstOrThrow();
    assert.ok(settled.settled_at !== null && settled.amount > 0);
  });

  test('a declined card takes 10 statements on PostgreSQL', async () => {
    const checkout = await createCheckout(server, apiKey);
    const declined = await counted(() => pay(server, checkout.token, CARDS.declined));
    assert.equal(declined.result.status, 200, declined.result.text);
    assert.equal(declined.result.body.outcome, 'failed');
    assert.equal(declined.statements, PAY.declined);
  });
});
