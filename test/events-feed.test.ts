// GET /api/organization/events/ read with a cursor, as `kassa listen` follows it: no event is skipped
// when transactions commit their events out of id order (PostgreSQL: ids are taken at insert, not at
// commit), however long a transaction stays open, and nothing is held back for a time.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import type { Executor } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { eventFeed } from '../src/db/migrations/027-event-feed.ts';
import { eventFeedSchema } from '../src/db/migrations/028-event-feed-schema.ts';
import { deferEvent, emitEvent } from '../src/modules/events/emit.ts';
import {
  call,
  createTestMerchant,
  DB_KIND,
  type Merchant,
  PG_URL,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';

interface Page {
  results: { id: number; subject: string }[];
  cursor: string;
}

/** A promise and the function that resolves it: one step of a test's interleaving. */
function signal(): { done: Promise<void>; fire: () => void } {
  let fire = () => {};
  const done = new Promise<void>((resolve) => {
    fire = resolve;
  });
  return { done, fire };
}

describe(`the event feed followed with a cursor (${DB_KIND})`, () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  const refundEvent = (merchant: Merchant, subject: string) => ({
    organizationId: merchant.organizationId,
    environment: 'sandbox' as const,
    type: 'refund.status_changed' as const,
    subject,
    payload: { refund_id: subject, status: 'processing' },
    now: new Date().toISOString(),
  });
  const emit = (db: Executor, merchant: Merchant, subject: string) =>
    emitEvent(db, refundEvent(merchant, subject));

  /** Reads the feed from `cursor` on, as a follower does; `query` adds filters. */
  const read = async (merchant: Merchant, cursor: string, query = '') => {
    const page = await call<Page>(server, 'GET', `/api/organization/events/?after=${cursor}${query}`, {
      token: merchant.token,
    });
    assert.equal(page.status, 200, page.text);
    return page;
  };

  /**
   * Waits until the feed returns `count` events from the start. On PostgreSQL an event committed a
   * moment ago waits for any transaction given an id before its own (another test's, the worker's) to
   * end, so a read right after a commit may not return it yet; the tests that page assume it does.
   */
  const settled = async (merchant: Merchant, count: number) => {
    const deadline = Date.now() + 10_000;
    while ((await read(merchant, '0', '&limit=500')).body.results.length < count) {
      assert.ok(Date.now() < deadline, `the feed did not return ${count} events`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };

  /** Follows the feed until `want` events were returned or 10 s passed; returns their subjects. */
  const follower = (merchant: Merchant) => {
    const state = { cursor: '0', seen: [] as string[] };
    const follow = async (want: number) => {
      const deadline = Date.now() + 10_000;
      for (;;) {
        const page = await read(merchant, state.cursor);
        state.seen.push(...page.body.results.map((event) => event.subject));
        state.cursor = page.body.cursor;
        if (state.seen.length >= want || Date.now() > deadline) return state.seen;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    return { state, follow };
  };

  test('an event whose transaction commits after a later id committed is still returned after the cursor', {
    skip: DB_KIND !== 'postgres' && 'SQLite has one writer: ids commit in order',
  }, async () => {
    const merchant = await createTestMerchant(server);
    const { follow } = follower(merchant);
    // T1 takes the lower id and stays open; T2 takes the next id and commits first.
    const held = signal();
    const written = signal();
    const first = server.ctx.db.transaction().execute(async (trx) => {
      const id = await emit(trx, merchant, 'RF000000000000000A');
      written.fire();
      await held.done;
      return id;
    });
    await written.done;
    const secondId = await server.ctx.db
      .transaction()
      .execute((trx) => emit(trx, merchant, 'RF000000000000000B'));

    // A reader polls while T1 is still open: T2's event is not returned past T1's, which would
    // carry the cursor past it.
    assert.deepEqual(await follow(0), []);
    held.fire();
    const firstId = await first;
    assert.ok(firstId < secondId);
    assert.deepEqual(await follow(2), ['RF000000000000000A', 'RF000000000000000B']);
  });

  test('an older transaction that commits a later id while a newer one holds an earlier id: both are returned, each once', {
    skip: DB_KIND !== 'postgres' && 'SQLite has one writer: ids commit in order',
  }, async () => {
    // Y takes its transaction id first, X its own next and writes event A (the lower event id), held
    // open; Y then writes B (the higher event id) and commits. The feed may return B at once (Y is
    // below the snapshot horizon, X is not), and must return A once X commits: a cursor by event id
    // would have passed A for good.
    const merchant = await createTestMerchant(server);
    const { state, follow } = follower(merchant);
    const yStarted = signal();
    const aWritten = signal();
    const releaseX = signal();
    const y = server.ctx.db.transaction().execute(async (trx) => {
      await sql`select pg_current_xact_id()`.execute(trx);
      yStarted.fire();
      await aWritten.done;
      return emit(trx, merchant, 'RF00000000000000YB');
    });
    await yStarted.done;
    const x = server.ctx.db.transaction().execute(async (trx) => {
      const id = await emit(trx, merchant, 'RF00000000000000XA');
      aWritten.fire();
      await releaseX.done;
      return id;
    });
    const bId = await y;
    try {
      assert.deepEqual(await follow(1), ['RF00000000000000YB']);
    } finally {
      releaseX.fire();
    }
    const aId = await x;
    assert.ok(aId < bId, `A (${aId}) holds the earlier event id than B (${bId})`);
    const order = await sql<{ event_id: string; later: boolean }>`
      select event_id, tx > (select tx from event_feed where event_id = ${bId}) as later
      from event_feed where event_id = ${aId}`.execute(server.ctx.db);
    assert.equal(order.rows[0]?.later, true, "X's transaction id is above Y's");
    assert.deepEqual(await follow(2), ['RF00000000000000YB', 'RF00000000000000XA']);
    assert.deepEqual((await read(merchant, state.cursor)).body.results, [], 'nothing is returned twice');
    assert.match(state.cursor, /^\d+-\d+$/, 'a PostgreSQL cursor carries the transaction id');
  });

  test('a new event is returned at once, not held back for a time, and the settle header says 0', async () => {
    const merchant = await createTestMerchant(server);
    const emittedAt = Date.now();
    await server.ctx.db.transaction().execute((trx) => emit(trx, merchant, 'RF000000000000000C'));
    const page = await read(merchant, '0', '&subject=RF000000000000000C&wait=10');
    const waited = Date.now() - emittedAt;
    assert.deepEqual(
      page.body.results.map((event) => event.subject),
      ['RF000000000000000C'],
    );
    // The feed held events back 2000 ms on PostgreSQL before it was ordered by commit.
    assert.ok(waited < 2000, `returned after ${waited} ms`);
    assert.equal(page.headers.get('kassa-feed-settle-ms'), '0');
    // A long-poll that is waiting when the event commits returns it too.
    const polling = read(merchant, page.body.cursor, '&wait=10');
    await new Promise((resolve) => setTimeout(resolve, 100));
    await emit(server.ctx.db, merchant, 'RF000000000000000D');
    assert.deepEqual(
      (await polling).body.results.map((event) => event.subject),
      ['RF000000000000000D'],
    );
  });

  test('a cursor from before the upgrade (a plain id) reads on: the older events after it, then every later one', async () => {
    const merchant = await createTestMerchant(server);
    if (DB_KIND === 'postgres') {
      // Back to the schema before migration 027, whose events had no row in event_feed; the migration
      // then runs again, as an upgrade would, over the events below.
      await sql`drop trigger events_feed on events`.execute(server.ctx.db);
      await sql`drop function kassa_event_feed_record()`.execute(server.ctx.db);
      await sql`drop table event_feed`.execute(server.ctx.db);
    }
    const firstId = await emit(server.ctx.db, merchant, 'RF00000000000000P1');
    await emit(server.ctx.db, merchant, 'RF00000000000000P2');
    if (DB_KIND === 'postgres') {
      await server.ctx.db.transaction().execute(async (trx) => {
        await eventFeed('postgres').up(trx);
        await eventFeedSchema('postgres').up(trx);
      });
      const copied = await sql<{ tx: string }>`select tx::text from event_feed
        where organization_id = ${merchant.organizationId}`.execute(server.ctx.db);
      assert.deepEqual(copied.rows, [{ tx: '0' }, { tx: '0' }], 'the earlier events are copied with tx 0');
    }
    await emit(server.ctx.db, merchant, 'RF00000000000000N3');
    await settled(merchant, 3);
    const page = await read(merchant, String(firstId));
    assert.deepEqual(
      page.body.results.map((event) => event.subject),
      ['RF00000000000000P2', 'RF00000000000000N3'],
    );
    assert.deepEqual((await read(merchant, page.body.cursor)).body.results, []);
    // From the start, the events from before the upgrade come first.
    assert.deepEqual(
      (await read(merchant, '0')).body.results.map((event) => event.subject),
      ['RF00000000000000P1', 'RF00000000000000P2', 'RF00000000000000N3'],
    );
  });

  test('pages of `limit` events with filters read every matching event once, in order', async () => {
    const merchant = await createTestMerchant(server);
    const subjects = ['RF00000000000000L1', 'RF00000000000000L2', 'RF00000000000000L3'];
    for (const subject of subjects) await emit(server.ctx.db, merchant, subject);
    await emitEvent(server.ctx.db, {
      organizationId: merchant.organizationId,
      environment: 'production',
      type: 'refund.status_changed',
      subject: 'RF00000000000000L4',
      payload: {},
      now: new Date().toISOString(),
    });
    await settled(merchant, 4);
    const seen: string[] = [];
    let cursor = '0';
    for (let pages = 0; pages < 5; pages += 1) {
      const page = await read(merchant, cursor, '&limit=2&environment=sandbox');
      seen.push(...page.body.results.map((event) => event.subject));
      cursor = page.body.cursor;
      if (page.body.results.length < 2) break;
    }
    assert.deepEqual(seen, subjects);
    const bySubject = await read(merchant, '0', '&subject=RF00000000000000L2');
    assert.deepEqual(
      bySubject.body.results.map((event) => event.subject),
      ['RF00000000000000L2'],
    );
    // The cursor after the one subject's event, used without the filter, reads on past it.
    assert.deepEqual(
      (await read(merchant, bySubject.body.cursor)).body.results.map((event) => event.subject),
      ['RF00000000000000L3', 'RF00000000000000L4'],
    );
  });

  test('events from every writer are in the feed: written behind, several in one statement, by plain SQL', async () => {
    const merchant = await createTestMerchant(server);
    const now = new Date().toISOString();
    await server.ctx.db.transaction().execute(async (trx) => {
      await deferEvent(trx, refundEvent(merchant, 'RF00000000000000W1'));
      // The held insert goes with this statement (write-behind.ts).
      await emit(trx, merchant, 'RF00000000000000W2');
    });
    const row = (subject: string) =>
      sql`(${merchant.organizationId}, 'sandbox', 'refund.status_changed', ${subject}, '{}', ${now})`;
    await sql`insert into events (organization_id, environment, type, subject, payload, created_at)
      values ${sql.join([row('RF00000000000000S3'), row('RF00000000000000S4')])}`.execute(server.ctx.db);
    await settled(merchant, 4);
    assert.deepEqual(
      (await read(merchant, '0')).body.results.map((event) => event.subject),
      ['RF00000000000000W1', 'RF00000000000000W2', 'RF00000000000000S3', 'RF00000000000000S4'],
    );
    if (DB_KIND === 'postgres') {
      // The order is kept off `events` (migration 027): the webhook worker's dispatch update of an event
      // is not HOT, so each index of `events` costs it an entry per delivery.
      const columns = await sql<{ column_name: string }>`select column_name from information_schema.columns
        where table_schema = current_schema() and table_name = 'events' and column_name = 'tx'`.execute(
        server.ctx.db,
      );
      assert.deepEqual(columns.rows, [], 'events has no tx column');
      const indexes = await sql<{ indexname: string }>`select indexname from pg_indexes
        where schemaname = current_schema() and tablename = 'events' order by indexname`.execute(
        server.ctx.db,
      );
      assert.equal(
        indexes.rows.some((index) => index.indexname.includes('feed')),
        false,
        JSON.stringify(indexes.rows),
      );
    }
  });

  test("an event inserted from a session whose search_path is elsewhere gets its feed row in Kassa's schema", {
    skip: DB_KIND !== 'postgres' && 'SQLite has no schemas and no feed table',
  }, async () => {
    // An operator's insert into `<schema>.events` from a session on `public`, or on another Kassa
    // instance's schema (which has an event_feed of its own): the trigger's insert must not resolve
    // event_feed through that session's search_path (migration 028).
    const merchant = await createTestMerchant(server);
    const schema = server.env.KASSA_DB_SCHEMA as string;
    const other = `${schema}_other`;
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    try {
      await client.query(`create schema ${other}`);
      await client.query(`create table ${other}.event_feed (event_id bigint primary key,
        organization_id bigint not null, tx xid8 not null default pg_current_xact_id())`);
      const now = new Date().toISOString();
      for (const [path, subject] of [
        ['public', 'RF00000000000000O1'],
        [other, 'RF00000000000000O2'],
      ]) {
        await client.query(`set search_path = ${path}`);
        await client.query(
          `insert into ${schema}.events (organization_id, environment, type, subject, payload, created_at)
           values ($1, 'sandbox', 'refund.status_changed', $2, '{}', $3)`,
          [merchant.organizationId, subject, now],
        );
      }
      const stray = await client.query(`select count(*)::int as count from ${other}.event_feed`);
      assert.equal(stray.rows[0].count, 0, "no row went into the other schema's event_feed");
    } finally {
      await client.query(`drop schema if exists ${other} cascade`);
      await client.end();
    }
    await settled(merchant, 2);
    assert.deepEqual(
      (await read(merchant, '0')).body.results.map((event) => event.subject),
      ['RF00000000000000O1', 'RF00000000000000O2'],
    );
  });

  test("a feed row is returned only to its event's own organization", {
    skip: DB_KIND !== 'postgres' && 'SQLite reads events alone',
  }, async () => {
    // A feed row naming another organization than its event's (a row another schema's event wrote here
    // before migration 028) shows nothing to that organization.
    const owner = await createTestMerchant(server);
    const other = await createTestMerchant(server);
    const id = await emit(server.ctx.db, owner, 'RF00000000000000G1');
    await sql`update event_feed set organization_id = ${other.organizationId} where event_id = ${id}`.execute(
      server.ctx.db,
    );
    await emit(server.ctx.db, other, 'RF00000000000000G2');
    await settled(other, 1);
    assert.deepEqual(
      (await read(other, '0')).body.results.map((event) => event.subject),
      ['RF00000000000000G2'],
    );
    // A page of that one row alone is empty, and its cursor moves past it.
    const passed = await read(other, '0', '&limit=1');
    assert.deepEqual(passed.body.results, []);
    assert.notEqual(passed.body.cursor, '0');
    assert.deepEqual(
      (await read(other, passed.body.cursor, '&limit=1')).body.results.map((event) => event.subject),
      ['RF00000000000000G2'],
    );
  });

  test('after a restore into a cluster whose transaction ids are lower, the restored events and a follower read on', {
    skip: DB_KIND !== 'postgres' && 'SQLite has no transaction ids in its feed',
  }, async () => {
    const merchant = await createTestMerchant(server);
    const firstId = await emit(server.ctx.db, merchant, 'RF00000000000000R1');
    await emit(server.ctx.db, merchant, 'RF00000000000000R2');
    await settled(merchant, 2);
    // A dump restored into a fresh cluster keeps the old cluster's transaction ids, above every id the
    // new one has given: simulated by moving this organization's rows a billion ids ahead.
    const moved = await sql<{ tx: string }>`
      update event_feed set tx = (pg_current_xact_id()::text::numeric + 1000000000)::text::xid8
      where organization_id = ${merchant.organizationId} returning tx::text`.execute(server.ctx.db);
    const restoredTx = moved.rows[0]?.tx as string;
    // A follower had read R1 in the old cluster: its cursor carries the old transaction id.
    const oldCursor = `${restoredTx}-${firstId}`;
    assert.deepEqual((await read(merchant, '0')).body.results, [], 'the restored rows are hidden');
    // What runs at every start.
    await migrateToLatest(server.ctx.db, 'postgres');
    const txs = await sql<{ tx: string }>`select tx::text from event_feed
      where organization_id = ${merchant.organizationId}`.execute(server.ctx.db);
    assert.deepEqual(txs.rows, [{ tx: '0' }, { tx: '0' }], 'the restored rows are rebased to tx 0');
    await emit(server.ctx.db, merchant, 'RF00000000000000R3');
    await settled(merchant, 3);
    assert.deepEqual(
      (await read(merchant, '0')).body.results.map((event) => event.subject),
      ['RF00000000000000R1', 'RF00000000000000R2', 'RF00000000000000R3'],
    );
    const page = await read(merchant, oldCursor);
    assert.deepEqual(
      page.body.results.map((event) => event.subject),
      ['RF00000000000000R2', 'RF00000000000000R3'],
      'the old cursor reads on as its id',
    );
    assert.deepEqual((await read(merchant, page.body.cursor)).body.results, []);
  });

  test('a malformed cursor is a 400 with a detail', async () => {
    const merchant = await createTestMerchant(server);
    for (const after of ['1-2-3', '-5', '12345678901234567890-1', '1-1234567890123456', 'abc']) {
      const page = await call(server, 'GET', `/api/organization/events/?after=${after}`, {
        token: merchant.token,
      });
      assert.equal(page.status, 400, `${after}: ${page.text}`);
      assert.equal(typeof page.body.detail, 'string');
    }
  });
});
