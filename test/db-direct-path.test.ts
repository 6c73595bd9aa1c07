// Prepared queries on the database itself skip Kysely's executor (src/db/prepared.ts, the direct path).
// On SQLite there is one connection: while another request's transaction is open on it, a direct
// statement would run inside that transaction (see its uncommitted rows, or be rolled back with it), so
// the path must wait for it like any other query. On PostgreSQL the path takes a pool connection of its
// own. Either way a read outside the transaction never sees what the transaction has not committed.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { randomBase62, sha256Hex } from '../src/lib/ids.ts';
import { findByHash } from '../src/modules/api-keys/store.ts';
import { createTestMerchant, startTestServer, type TestServer } from './helpers/server.ts';

describe('the direct path of prepared queries', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ worker: false });
  });
  after(() => server.close());

  test("a prepared read outside a transaction never sees the transaction's uncommitted row", async () => {
    const merchant = await createTestMerchant(server, 'Direct Shop');
    const hash = sha256Hex(`kassa_live_${randomBase62(40)}`);
    const { promise: insertedYet, resolve: inserted } = Promise.withResolvers<void>();
    const { promise: released, resolve: release } = Promise.withResolvers<void>();
    const transaction = server.ctx.db
      .transaction()
      .execute(async (trx) => {
        await trx
          .insertInto('api_keys')
          .values({
            organization_id: merchant.organizationId,
            name: 'Uncommitted',
            prefix: 'kassa_live_xx',
            key_hash: hash,
            scopes: '',
            environment: 'production',
            status: 'active',
            created_at: new Date().toISOString(),
            last_used_at: null,
            revoked_at: null,
          })
          .execute();
        inserted();
        await released;
        throw new Error('rolled back on purpose');
      })
      .catch((error: Error) => error.message);
    await insertedYet;
    const read = findByHash(server.ctx.db, hash);
    // Long enough for a read that does not wait to have answered.
    const early = await Promise.race([
      read,
      new Promise((resolve) => setTimeout(() => resolve('waiting'), 100)),
    ]);
    release();
    assert.equal(await transaction, 'rolled back on purpose');
    assert.equal(await read, undefined, 'the row was never committed');
    assert.ok(early === 'waiting' || early === undefined, `the read answered ${JSON.stringify(early)}`);
  });
});
