// A process keeps serving when a migration adds columns while it runs (another process, or an operator,
// ran it: a rolling upgrade). On PostgreSQL the hot statements go by name (src/db/prepared.ts), and a
// named statement that read `*` would be refused at every call once its table had a column more
// ("cached plan must not change result type"), until the process restarted; the statements that read
// whole rows name their columns instead. The same calls are checked on SQLite.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { createCheckout, pay, syncStatus } from './helpers/checkout.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  DB_KIND,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';

let server: TestServer;
before(async () => {
  server = await startTestServer({ worker: false });
});
after(() => server?.close());

test(`statements named before a migration added columns still run after it (${DB_KIND})`, async () => {
  const merchant = await createTestMerchant(server);
  const key = await createTestKey(server, merchant);
  const checkout = await createCheckout(server, key);
  const first = await pay(server, checkout.token);
  assert.equal(first.status, 200, first.text);
  const paymentId = (first.body as { transaction_id: string }).transaction_id;

  // Each read twice before the change: the second sight names a statement (prepared.ts).
  const reads = async () => {
    const answers = [];
    for (let round = 0; round < 2; round++) {
      answers.push(await call(server, 'GET', `/api/transactions/${paymentId}/`, { apiKey: key }));
      answers.push(await call(server, 'GET', `/api/payments/${paymentId}/`, { token: merchant.token }));
      answers.push(await call(server, 'GET', `/api/checkout/${checkout.token}/`));
      answers.push(await syncStatus(server, checkout.token));
    }
    return answers.map((answer) => [answer.status, answer.body]);
  };
  const before = await reads();
  for (const [status, body] of before) assert.equal(status, 200, JSON.stringify(body));

  for (const table of ['payments', 'deposit_attempts', 'checkout_sessions', 'api_keys', 'organizations'])
    await sql`alter table ${sql.table(table)} add column added_by_a_later_migration text`.execute(
      server.ctx.db,
    );

  assert.deepEqual(await reads(), before);
  // A new checkout paid after the change goes through the whole flow.
  const next = await createCheckout(server, key);
  const paid = await pay(server, next.token);
  assert.equal(paid.status, 200, paid.text);
  assert.equal((paid.body as { payment_status: string }).payment_status, 'paid');
});
