// On PostgreSQL the hot-path queries (src/db/prepared.ts) go to the server as named statements, parsed
// and planned once per connection; KASSA_DB_NAMED_STATEMENTS=false sends them unnamed. Each server here
// has a pool of one connection, so the statements the API prepared are visible in that connection's
// pg_prepared_statements.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import { recordAttempts } from '../src/modules/webhooks/outcomes.ts';
import {
  claimDueDeliveries,
  dispatchEvents,
  recoverLapsedLeases,
} from '../src/modules/webhooks/worker-store.ts';
import { call, createTestKey, createTestMerchant, PG_URL, startTestServer } from './helpers/server.ts';

async function preparedAfterTwoGets(env: Record<string, string>) {
  const server = await startTestServer({ worker: false, env: { KASSA_DB_POOL_SIZE: '1', ...env } });
  try {
    const merchant = await createTestMerchant(server);
    const key = await createTestKey(server, merchant);
    for (let i = 0; i < 2; i++) {
      const response = await call(server, 'GET', '/api/transactions/TX0000000000000000/', { apiKey: key });
      assert.equal(response.status, 404, response.text);
    }
    const rows = await sql<{ name: string; statement: string }>`
      select name, statement from pg_prepared_statements where name like 'kassa\_%'`.execute(server.ctx.db);
    return rows.rows;
  } finally {
    await server.close();
  }
}

describe('named statements on PostgreSQL', { skip: PG_URL ? false : 'PostgreSQL only' }, () => {
  test('the API-key lookup and the payment lookup are prepared once, by name', async () => {
    const prepared = await preparedAfterTwoGets({});
    const statements = prepared.map((row) => row.statement);
    assert.ok(
      statements.some((text) => text.includes('from "api_keys" where "key_hash"')),
      `API-key lookup not named: ${JSON.stringify(statements)}`,
    );
    assert.ok(
      statements.some((text) => text.includes('from "payments"')),
      `payment lookup not named: ${JSON.stringify(statements)}`,
    );
    assert.equal(new Set(prepared.map((row) => row.name)).size, prepared.length, 'one name per statement');
  });

  test('KASSA_DB_NAMED_STATEMENTS=false sends them unnamed', async () => {
    assert.deepEqual(await preparedAfterTwoGets({ KASSA_DB_NAMED_STATEMENTS: 'false' }), []);
  });

  test("the webhook worker's claim, due read, flush and lease recovery are prepared once, by name", async () => {
    const server = await startTestServer({ worker: false, env: { KASSA_DB_POOL_SIZE: '1' } });
    try {
      const db = server.ctx.db;
      const now = new Date().toISOString();
      const lease = { workerId: 'named', now, until: new Date(Date.now() + 60_000).toISOString() };
      for (let i = 0; i < 2; i++) {
        await dispatchEvents(db, lease, 16, () => 'unused');
        await claimDueDeliveries(db, lease, 16);
        await recordAttempts(db, 'named', [], now, []);
        await recoverLapsedLeases(db, now);
      }
      const rows = await sql<{ statement: string }>`
        select statement from pg_prepared_statements where name like 'kassa\_%'`.execute(db);
      const statements = rows.rows.map((row) => row.statement);
      for (const start of [
        'with "leased"',
        'select (select "next_attempt_at"',
        'with "outcome"',
        'with "lapsed"',
      ])
        assert.ok(
          statements.some((text) => text.startsWith(start)),
          `${start} … not named: ${JSON.stringify(statements.map((text) => text.slice(0, 60)))}`,
        );
    } finally {
      await server.close();
    }
  });
});
