// The outbox claim (src/modules/webhooks/worker-store.ts, claimableEventIds): claims take disjoint
// batches in id order, a leased event is not taken again until its lease lapses, and on PostgreSQL a
// claim whose window other claims hold at that moment takes events past it instead of coming back
// empty while events wait (the claim reads a bounded window of ids, so that its cost never grows with
// the backlog: docs/performance.md "The claim's plan").
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isPostgres } from '../src/db/connection.ts';
import { emitEvent } from '../src/modules/events/emit.ts';
import { dispatchEvents, type Lease } from '../src/modules/webhooks/worker-store.ts';
import { createTestMerchant, startTestServer, type TestServer } from './helpers/server.ts';

const BATCH = 64;

describe('the outbox claim', () => {
  let server: TestServer;
  let organizationId: number;
  before(async () => {
    server = await startTestServer({ worker: false });
    organizationId = (await createTestMerchant(server, 'Claim Shop')).organizationId;
  });
  after(() => server.close());

  /** Commits `count` events in one transaction; returns their ids, lowest first. */
  async function commitEvents(count: number): Promise<number[]> {
    const now = new Date().toISOString();
    await server.ctx.db.transaction().execute(async (trx) => {
      for (let i = 0; i < count; i++)
        await emitEvent(trx, {
          organizationId,
          environment: 'production',
          type: 'webhook.test',
          subject: null,
          payload: { message: 'claim', i },
          now,
        });
    });
    return undispatchedIds();
  }

  /** The events not yet dispatched, lowest id first. */
  async function undispatchedIds(): Promise<number[]> {
    const rows = await server.ctx.db
      .selectFrom('events')
      .select('id')
      .where('dispatched_at', 'is', null)
      .orderBy('id')
      .execute();
    return rows.map((row) => row.id);
  }

  function lease(workerId: string, nowMs: number): Lease {
    return { workerId, now: new Date(nowMs).toISOString(), until: new Date(nowMs + 60_000).toISOString() };
  }

  const noDeliveryId = () => 'unused';

  test('successive claims take disjoint batches in id order; a leased event waits for its lease to lapse', async () => {
    const ids = await commitEvents(3 * BATCH);
    const now = Date.now();
    // Leased and held (as a worker mid-send holds them): set the lease by hand on the first batch.
    await server.ctx.db
      .updateTable('events')
      .set({ locked_by: 'another worker', locked_until: new Date(now + 60_000).toISOString() })
      .where('id', 'in', ids.slice(0, BATCH))
      .execute();
    const first = await dispatchEvents(server.ctx.db, lease('w1', now), BATCH, noDeliveryId);
    assert.equal(first.events, BATCH);
    const second = await dispatchEvents(server.ctx.db, lease('w2', now), BATCH, noDeliveryId);
    assert.equal(second.events, BATCH);
    // The two claims took the second and third batches (the first is leased), and marked them
    // dispatched (the organization has no endpoint, so nothing is sent); the held batch is left.
    assert.deepEqual(await undispatchedIds(), ids.slice(0, BATCH));
    const none = await dispatchEvents(server.ctx.db, lease('w3', now), BATCH, noDeliveryId);
    assert.equal(none.events, 0, 'a leased event is not claimed while its lease holds');
    // Once the lease lapses, the held batch is claimed again.
    const lapsed = await dispatchEvents(server.ctx.db, lease('w3', now + 61_000), BATCH, noDeliveryId);
    assert.equal(lapsed.events, BATCH);
    assert.deepEqual(await undispatchedIds(), []);
  });

  test('a claim whose window claims running at the same moment hold takes events past it', async (t) => {
    if (!isPostgres(server.ctx.db)) {
      t.skip('SQLite has one writer: two claims never run at the same moment');
      return;
    }
    const ids = await commitEvents(5 * BATCH);
    const now = Date.now();
    // Three claims in open transactions lock the window's rows (a batch of 64 reads 64 × 2 + 64 ids).
    const held = [0, 1, 2].map(() => ({
      claimed: Promise.withResolvers<number>(),
      release: Promise.withResolvers<void>(),
    }));
    const transactions = held.map(({ claimed, release }, i) =>
      server.ctx.db.transaction().execute(async (trx) => {
        claimed.resolve((await dispatchEvents(trx, lease(`held ${i}`, now), BATCH, noDeliveryId)).events);
        await release.promise;
      }),
    );
    assert.deepEqual(await Promise.all(held.map(({ claimed }) => claimed.promise)), [BATCH, BATCH, BATCH]);
    const fourth = await dispatchEvents(server.ctx.db, lease('w4', now), BATCH, noDeliveryId);
    for (const { release } of held) release.resolve();
    await Promise.all(transactions);
    assert.equal(fourth.events, BATCH, 'the fourth claim takes a full batch past the held window');
    // The three held claims took the first 192 events between them, the fourth the next 64 (all marked
    // dispatched: the organization has no endpoint); the last 64 wait.
    assert.deepEqual(await undispatchedIds(), ids.slice(4 * BATCH));
  });
});
