// The outbox claim (src/modules/webhooks/worker-store.ts, claimableEventIds): claims take disjoint
// batches in id order, a leased event is not taken again until its lease lapses, and on PostgreSQL a
// claim whose window other claims hold at that moment takes events past it instead of coming back
// empty while events wait (the claim reads a bounded window of ids, so that its cost never grows with
// the backlog: docs/performance.md "The claim's plan").
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isPostgres } from '../src/db/connection.ts';
import { emitEvent } from '../src/modules/events/emit.ts';
import { type AttemptRecord, recordAttempts } from '../src/modules/webhooks/outcomes.ts';
import {
  type ClaimedDelivery,
  dispatchEvents,
  type Lease,
  recoverLapsedLeases,
} from '../src/modules/webhooks/worker-store.ts';
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

  /** An organization's events not yet dispatched, lowest id first. */
  async function undispatchedOf(organization: number): Promise<number[]> {
    const rows = await server.ctx.db
      .selectFrom('events')
      .select('id')
      .where('organization_id', '=', organization)
      .where('dispatched_at', 'is', null)
      .orderBy('id')
      .execute();
    return rows.map((row) => row.id);
  }

  /** A claimed first delivery's outcome: sent at `at`, answered 200. */
  function deliveredFirst(delivery: ClaimedDelivery, at: string): AttemptRecord {
    return {
      deliveryRowId: null,
      deliveryId: delivery.deliveryId,
      eventType: delivery.eventType,
      first: delivery.first,
      attempt: 1,
      attemptedAt: at,
      url: 'https://receiver.example/hook',
      responseStatus: 200,
      durationMs: 3,
      error: null,
      responseBody: null,
      outcome: { status: 'delivered' },
    };
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

  test("a claim dispatches its events at once under one lease; a lapsed lease's unsent events are claimed again, once", async () => {
    // What the tests before left waiting (an organization with no endpoint: dispatched, no lease).
    while ((await dispatchEvents(server.ctx.db, lease('drain', Date.now()), BATCH, noDeliveryId)).events > 0);
    assert.deepEqual(await server.ctx.db.selectFrom('webhook_leases').select('id').execute(), []);
    // An organization with an endpoint: its events are sent, so the claim names them in its lease.
    const shop = (await createTestMerchant(server, 'Lease Shop')).organizationId;
    const at = new Date().toISOString();
    await server.ctx.db
      .insertInto('webhook_endpoints')
      .values({
        organization_id: shop,
        endpoint_url: 'https://receiver.example/hook',
        secret_encrypted: 'unused',
        created_at: at,
        updated_at: at,
        secret_rotated_at: at,
      })
      .execute();
    for (let i = 0; i < 4; i++)
      await emitEvent(server.ctx.db, {
        organizationId: shop,
        environment: 'production',
        type: 'webhook.test',
        subject: null,
        payload: { message: 'lease', i },
        now: at,
      });
    const ids = await undispatchedOf(shop);
    assert.equal(ids.length, 4);
    const now = Date.now();
    const leases = async () =>
      (
        await server.ctx.db.selectFrom('webhook_leases').select(['id', 'event_ids']).orderBy('id').execute()
      ).map((row) => ({ id: row.id, events: JSON.parse(row.event_ids) as number[] }));

    const claim = await dispatchEvents(
      server.ctx.db,
      lease('w1', now),
      BATCH,
      (event) => `wh_lease_${event.id}`,
    );
    assert.equal(claim.events, 4);
    const leaseIds = new Set(claim.claimed.map((delivery) => delivery.leaseId));
    assert.equal(leaseIds.size, 1);
    const [leaseId] = leaseIds;
    assert.ok(typeof leaseId === 'number');
    // Dispatched by the claim itself, and named by its one lease row.
    assert.deepEqual(await undispatchedOf(shop), []);
    assert.deepEqual(await leases(), [{ id: leaseId, events: ids }]);

    // The worker wrote two of the four outcomes, then died: the lease was not released.
    const sent = claim.claimed.slice(0, 2);
    await recordAttempts(
      server.ctx.db,
      'w1',
      sent.map((delivery) => deliveredFirst(delivery, at)),
      at,
    );
    // Not lapsed yet: nothing to recover.
    assert.equal(await recoverLapsedLeases(server.ctx.db, new Date(now + 1_000).toISOString()), 0);
    assert.equal((await leases()).length, 1);

    // Lapsed: the two events with no delivery row are claimable again, the two written stay dispatched.
    // On PostgreSQL two workers recover at the same moment; between them, each event is reopened once.
    const later = new Date(now + 61_000).toISOString();
    const recovered = isPostgres(server.ctx.db)
      ? await Promise.all([
          recoverLapsedLeases(server.ctx.db, later),
          recoverLapsedLeases(server.ctx.db, later),
        ])
      : [await recoverLapsedLeases(server.ctx.db, later)];
    assert.equal(
      recovered.reduce((sum, n) => sum + n, 0),
      2,
    );
    assert.deepEqual(await undispatchedOf(shop), ids.slice(2));
    assert.deepEqual(await leases(), []);

    // Claimed again under a new lease, sent under the same webhook ids; the flush releases the lease.
    const again = await dispatchEvents(
      server.ctx.db,
      lease('w2', now + 61_000),
      BATCH,
      (event) => `wh_lease_${event.id}`,
    );
    assert.deepEqual(
      again.claimed.map((delivery) => delivery.first?.eventId),
      ids.slice(2),
    );
    const second = again.claimed[0].leaseId;
    assert.ok(typeof second === 'number' && second !== leaseId);
    assert.deepEqual(await leases(), [{ id: second, events: ids.slice(2) }]);
    await recordAttempts(
      server.ctx.db,
      'w2',
      again.claimed.map((delivery) => deliveredFirst(delivery, later)),
      later,
      [second as number],
    );
    assert.deepEqual(await leases(), []);
    const delivered = await server.ctx.db
      .selectFrom('webhook_deliveries')
      .select(['event_id', 'delivery_id'])
      .where('organization_id', '=', shop)
      .orderBy('event_id')
      .execute();
    assert.deepEqual(
      delivered.map((row) => ({ ...row })),
      ids.map((id) => ({ event_id: id, delivery_id: `wh_lease_${id}` })),
    );
  });
});
