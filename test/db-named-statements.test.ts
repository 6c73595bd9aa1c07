// On PostgreSQL the hot-path queries (src/db/prepared.ts) go to the server as named statements, parsed
// and planned once per connection; KASSA_DB_NAMED_STATEMENTS=false sends them unnamed. Each server here
// has a pool of one connection, so the statements the API prepared are visible in that connection's
// pg_prepared_statements.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
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
});
