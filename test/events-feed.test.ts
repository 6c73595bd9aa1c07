// GET /api/organization/events/ read with a cursor, as `kassa listen` follows it: no event is skipped
// when transactions commit their events out of id order (PostgreSQL: ids are taken at insert, not at
// commit).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { emitEvent } from '../src/modules/events/emit.ts';
import { FEED_SETTLE_MS } from '../src/modules/events/routes.ts';
import {
  call,
  createTestMerchant,
  DB_KIND,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';

describe(`the event feed followed with a cursor (${DB_KIND})`, () => {
  let server: TestServer;
  let merchant: Merchant;
  before(async () => {
    server = await startTestServer();
    merchant = await createTestMerchant(server);
  });
  after(() => server.close());

  const emit = (trx: Parameters<typeof emitEvent>[0], subject: string) =>
    emitEvent(trx, {
      organizationId: merchant.organizationId,
      environment: 'sandbox',
      type: 'refund.status_changed',
      subject,
      payload: { refund_id: subject, status: 'processing' },
      now: new Date().toISOString(),
    });

  test('an event whose transaction commits after a later id committed is still returned after the cursor', {
    skip: DB_KIND !== 'postgres' && 'SQLite has one writer: ids commit in order',
  }, async () => {
    let cursor = '0';
    const seen: string[] = [];
    const follow = async () => {
      const page = await call<{ results: { id: number; subject: string }[]; cursor: string }>(
        server,
        'GET',
        `/api/organization/events/?after=${cursor}`,
        { token: merchant.token },
      );
      assert.equal(page.status, 200, page.text);
      seen.push(...page.body.results.map((event) => event.subject));
      cursor = page.body.cursor;
    };

    // T1 takes the lower id and stays open; T2 takes the next id and commits first.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let written = () => {};
    const firstWritten = new Promise<void>((resolve) => {
      written = resolve;
    });
    const first = server.ctx.db.transaction().execute(async (trx) => {
      const id = await emit(trx, 'RF000000000000000A');
      written();
      await held;
      return id;
    });
    await firstWritten;
    const secondId = await server.ctx.db.transaction().execute((trx) => emit(trx, 'RF000000000000000B'));

    // A reader polls while T1 is still open (the cursor must not pass T1's id), then T1 commits.
    await follow();
    release();
    const firstId = await first;
    assert.ok(firstId < secondId);

    const deadline = Date.now() + FEED_SETTLE_MS + 10_000;
    while (seen.length < 2 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      await follow();
    }
    assert.deepEqual(seen, ['RF000000000000000A', 'RF000000000000000B']);
  });

  test('a long-poll returns a new event at once on SQLite, and once it is FEED_SETTLE_MS old on PostgreSQL', async () => {
    const emittedAt = Date.now();
    await server.ctx.db.transaction().execute((trx) => emit(trx, 'RF000000000000000C'));
    const page = await call<{ results: { subject: string }[]; cursor: string }>(
      server,
      'GET',
      '/api/organization/events/?after=0&subject=RF000000000000000C&wait=10',
      { token: merchant.token },
    );
    const waited = Date.now() - emittedAt;
    assert.equal(page.status, 200, page.text);
    assert.deepEqual(
      page.body.results.map((event) => event.subject),
      ['RF000000000000000C'],
    );
    if (DB_KIND === 'postgres') assert.ok(waited >= FEED_SETTLE_MS, `returned after ${waited} ms`);
    else assert.ok(waited < FEED_SETTLE_MS, `returned after ${waited} ms`);
  });
});
