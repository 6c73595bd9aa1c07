// Writes handed to deferWrite in a transaction (src/db/write-behind.ts): on PostgreSQL they are held and
// sent as one statement before the transaction's next statement or its commit; on SQLite they run at
// once. Either way the transaction reads its own writes, fails whole when one of them fails, and loses
// none. The tables are the test's own, in the service's database (its schema on PostgreSQL), written
// through the service's own Kysely instance (one pool connection, so a leftover would show).
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { type Generated, type Kysely, sql } from 'kysely';
import type { Database } from '../src/db/database.ts';
import { deferWrite } from '../src/db/write-behind.ts';
import { deferEvent } from '../src/modules/events/emit.ts';
import { createTestMerchant, DB_KIND, startTestServer, type TestServer } from './helpers/server.ts';

type OwnTables = {
  wb_items: { id: number; label: string; amount: number };
  wb_log: { id: number; item_id: number; text: string };
};

const postgres = DB_KIND === 'postgres';

describe('write-behind in transactions', () => {
  let server: TestServer;
  let db: Kysely<Database & OwnTables>;

  before(async () => {
    server = await startTestServer({ worker: false, env: { KASSA_DB_POOL_SIZE: '1' } });
    db = server.ctx.db.withTables<OwnTables>();
    await sql`create table wb_items (id integer primary key, label text not null,
      amount integer not null check (amount >= 0))`.execute(db);
    await sql`create table wb_log (id integer primary key, item_id integer not null references wb_items (id),
      text text not null unique)`.execute(db);
  });
  after(() => server.close());
  beforeEach(async () => {
    await db.deleteFrom('wb_log').execute();
    await db.deleteFrom('wb_items').execute();
  });

  /** The statements `work` sends, as kassa_db_statements_total counts them. */
  async function counted<T>(work: () => Promise<T>): Promise<{ result: T; statements: number }> {
    const before = server.ctx.outbox.statements;
    const result = await work();
    return { result, statements: server.ctx.outbox.statements - before };
  }

  // Plain objects (node:sqlite's rows have no prototype).
  const plain = <T extends object>(rows: T[]) => rows.map((row) => ({ ...row }));
  const items = async () => plain(await db.selectFrom('wb_items').selectAll().orderBy('id').execute());
  const logs = async () =>
    plain(await db.selectFrom('wb_log').select(['id', 'item_id', 'text']).orderBy('id').execute());

  test('a read after held writes sees them; on PostgreSQL the writes go as one statement', async () => {
    const { result, statements } = await counted(() =>
      db.transaction().execute(async (trx) => {
        await deferWrite(trx, trx.insertInto('wb_items').values({ id: 1, label: 'a', amount: 10 }));
        // Another table, whose foreign key names the row above: checked at the end of the statement.
        await deferWrite(trx, trx.insertInto('wb_log').values({ id: 1, item_id: 1, text: 'made' }));
        const seen = await trx.selectFrom('wb_items').select('label').where('id', '=', 1).executeTakeFirst();
        const log = await trx.selectFrom('wb_log').select('text').where('item_id', '=', 1).executeTakeFirst();
        return { seen: { ...seen }, log: { ...log } };
      }),
    );
    assert.deepEqual(result, { seen: { label: 'a' }, log: { text: 'made' } });
    // BEGIN, the two writes (one statement on PostgreSQL), the two reads, COMMIT.
    assert.equal(statements, postgres ? 5 : 6);
    assert.deepEqual(await items(), [{ id: 1, label: 'a', amount: 10 }]);
  });

  test('held writes are flushed at the commit, counted as one statement', async () => {
    const { statements } = await counted(() =>
      db.transaction().execute(async (trx) => {
        await deferWrite(trx, trx.insertInto('wb_items').values({ id: 1, label: 'a', amount: 10 }));
        await deferWrite(trx, trx.insertInto('wb_log').values({ id: 1, item_id: 1, text: 'made' }));
      }),
    );
    assert.equal(statements, postgres ? 3 : 4);
    assert.equal((await logs()).length, 1);
  });

  test('two writes to one row are both applied', async () => {
    await db.insertInto('wb_items').values({ id: 1, label: 'a', amount: 10 }).execute();
    const { statements } = await counted(() =>
      db.transaction().execute(async (trx) => {
        await deferWrite(trx, trx.updateTable('wb_items').set({ label: 'b' }).where('id', '=', 1));
        await deferWrite(
          trx,
          trx
            .updateTable('wb_items')
            .set({ amount: sql<number>`amount + ${5}` })
            .where('id', '=', 1),
        );
      }),
    );
    assert.deepEqual(await items(), [{ id: 1, label: 'b', amount: 15 }]);
    // On PostgreSQL the first is flushed before the second is held: one write per table per statement.
    assert.equal(statements, 4);
  });

  test('a held write that reads what an earlier one wrote sees it', async () => {
    await db.transaction().execute(async (trx) => {
      await deferWrite(trx, trx.insertInto('wb_items').values({ id: 2, label: 'copied', amount: 1 }));
      await deferWrite(
        trx,
        trx
          .insertInto('wb_log')
          .columns(['id', 'item_id', 'text'])
          .expression(trx.selectFrom('wb_items').select(['id', 'id', 'label']).where('id', '=', 2)),
      );
    });
    assert.deepEqual(await logs(), [{ id: 2, item_id: 2, text: 'copied' }]);
  });

  test('a held write that fails fails the transaction, and nothing of it is written', async () => {
    await db.insertInto('wb_items').values({ id: 1, label: 'a', amount: 10 }).execute();
    await assert.rejects(
      db.transaction().execute(async (trx) => {
        await deferWrite(trx, trx.insertInto('wb_items').values({ id: 3, label: 'c', amount: 3 }));
        await deferWrite(trx, trx.insertInto('wb_log').values({ id: 3, item_id: 3, text: 'c' }));
        // Below zero: the CHECK constraint refuses it (at the commit, on PostgreSQL).
        await deferWrite(
          trx,
          trx
            .updateTable('wb_items')
            .set({ amount: sql<number>`amount - ${11}` })
            .where('id', '=', 1),
        );
      }),
      (error: Error & { code?: string }) => {
        assert.match(error.message, /check constraint/i);
        if (postgres) assert.equal(error.code, '23514', 'the database error itself');
        return true;
      },
    );
    assert.deepEqual(await items(), [{ id: 1, label: 'a', amount: 10 }]);
    assert.deepEqual(await logs(), []);
  });

  test('the error of a held write surfaces at the next statement, and the transaction cannot commit', async () => {
    await db.insertInto('wb_items').values({ id: 1, label: 'a', amount: 10 }).execute();
    let surfaced: unknown = null;
    await assert.rejects(
      db.transaction().execute(async (trx) => {
        await deferWrite(trx, trx.insertInto('wb_items').values({ id: 4, label: 'd', amount: 4 }));
        // The same primary key again: a unique violation.
        await deferWrite(trx, trx.insertInto('wb_log').values({ id: 5, item_id: 1, text: 'x' }));
        await deferWrite(trx, trx.insertInto('wb_items').values({ id: 1, label: 'again', amount: 1 }));
        try {
          await trx.selectFrom('wb_items').select('id').execute();
        } catch (error) {
          // A caller that catches its own statement's errors catches this one too, and goes on.
          surfaced = error;
        }
      }),
      /unique|duplicate key/i,
    );
    assert.ok(surfaced !== null || !postgres, 'on PostgreSQL the read raised the held write error');
    assert.deepEqual(await items(), [{ id: 1, label: 'a', amount: 10 }]);
    assert.deepEqual(await logs(), []);
  });

  test('a rollback drops the held writes: the next transaction on the connection does not send them', async () => {
    const { statements } = await counted(() =>
      assert.rejects(
        db.transaction().execute(async (trx) => {
          await deferWrite(trx, trx.insertInto('wb_items').values({ id: 6, label: 'f', amount: 6 }));
          throw new Error('changed my mind');
        }),
        /changed my mind/,
      ),
    );
    // BEGIN and ROLLBACK only on PostgreSQL: the write was never sent.
    assert.equal(statements, postgres ? 2 : 3);
    const next = await counted(() =>
      db.transaction().execute((trx) => trx.selectFrom('wb_items').select('id').execute()),
    );
    assert.deepEqual(next, { result: [], statements: 3 }, 'BEGIN, the read, COMMIT: nothing left over');
    assert.deepEqual(await items(), []);
  });

  test('a rollback to a savepoint drops the writes held after it, and keeps the ones before', async () => {
    const trx = await db.startTransaction().execute();
    await deferWrite(trx, trx.insertInto('wb_items').values({ id: 8, label: 'kept', amount: 8 }));
    const savepoint = await trx.savepoint('wb').execute();
    await deferWrite(
      savepoint,
      savepoint.insertInto('wb_items').values({ id: 9, label: 'dropped', amount: 9 }),
    );
    const back = await savepoint.rollbackToSavepoint('wb').execute();
    await deferWrite(back, back.insertInto('wb_log').values({ id: 8, item_id: 8, text: 'after' }));
    await back.commit().execute();
    assert.deepEqual(await items(), [{ id: 8, label: 'kept', amount: 8 }]);
    assert.deepEqual(await logs(), [{ id: 8, item_id: 8, text: 'after' }]);
  });

  test('outside a transaction a deferred write runs at once', async () => {
    const { statements } = await counted(() =>
      deferWrite(db, db.insertInto('wb_items').values({ id: 10, label: 'now', amount: 1 })),
    );
    assert.equal(statements, 1);
    assert.equal((await items()).length, 1);
  });

  test('a held event insert wakes the outbox at the commit, not before', async () => {
    const merchant = await createTestMerchant(server);
    const woken: string[] = [];
    const unsubscribe = server.ctx.outbox.subscribe((wrote) => woken.push(wrote));
    try {
      await server.ctx.db.transaction().execute(async (trx) => {
        await deferEvent(trx, {
          organizationId: merchant.organizationId,
          environment: 'sandbox',
          type: 'webhook.test',
          subject: null,
          payload: { note: 'held' },
          now: new Date().toISOString(),
        });
        assert.deepEqual(woken, [], 'not before the commit');
      });
    } finally {
      unsubscribe();
    }
    assert.deepEqual(woken, ['events']);
    const row = await db
      .selectFrom('events')
      .select('payload')
      .where('organization_id', '=', merchant.organizationId)
      .executeTakeFirstOrThrow();
    assert.match(row.payload, /"note":"held"/);
  });

  test('held writes run in the order they were handed over (PostgreSQL)', { skip: !postgres }, async () => {
    await sql`create sequence if not exists wb_order`.execute(db);
    await sql`create table if not exists wb_first (n bigint not null default nextval('wb_order'), at text)`.execute(
      db,
    );
    await sql`create table if not exists wb_second (n bigint not null default nextval('wb_order'), at text)`.execute(
      db,
    );
    type Ordered = { n: Generated<number>; at: string };
    const own = db.withTables<{ wb_first: Ordered; wb_second: Ordered }>();
    await own.transaction().execute(async (trx) => {
      await deferWrite(trx, trx.insertInto('wb_first').values({ at: 'first' }));
      await deferWrite(trx, trx.insertInto('wb_second').values({ at: 'second' }));
    });
    const first = await own.selectFrom('wb_first').select('n').executeTakeFirstOrThrow();
    const second = await own.selectFrom('wb_second').select('n').executeTakeFirstOrThrow();
    assert.ok(first.n < second.n, `the first write ran first (${first.n}, ${second.n})`);
  });
});
