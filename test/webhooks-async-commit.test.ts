// The worker's claim and its flush of outcomes commit without waiting for the write-ahead log to reach
// the disk (committedLazily in src/modules/webhooks/worker-store.ts): each statement turns
// `synchronous_commit` off for its own transaction, and for nothing after it, so the API's commits on the
// same pooled connection still wait. PostgreSQL only: SQLite has no such setting (its statement carries
// `true` instead).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Kysely, sql } from 'kysely';
import type { Database } from '../src/db/database.ts';
import { emitEvent } from '../src/modules/events/emit.ts';
import { recordAttempts } from '../src/modules/webhooks/outcomes.ts';
import { dispatchEvents, type Lease } from '../src/modules/webhooks/worker-store.ts';
import { createTestMerchant, DB_KIND, startTestServer, type TestServer } from './helpers/server.ts';
import { setEndpoint } from './webhooks-helpers.ts';

describe('the worker commits its bookkeeping lazily (PostgreSQL)', {
  skip: DB_KIND === 'postgres' ? false : 'PostgreSQL only',
}, () => {
  let server: TestServer;
  let organizationId: number;
  before(async () => {
    server = await startTestServer({ worker: false });
    const merchant = await createTestMerchant(server, 'Lazy Commit Shop');
    organizationId = merchant.organizationId;
    await setEndpoint(server, merchant, 'https://example.com/lazy-commit');
  });
  after(() => server?.close());

  const setting = async (db: Kysely<Database>) =>
    (await sql<{ value: string }>`select current_setting('synchronous_commit') as value`.execute(db)).rows[0]
      .value;

  function lease(): Lease {
    const now = new Date();
    return {
      workerId: 'lazy-commit-test',
      now: now.toISOString(),
      until: new Date(now.getTime() + 60_000).toISOString(),
    };
  }

  const emit = () =>
    emitEvent(server.ctx.db, {
      organizationId,
      environment: 'production',
      type: 'webhook.test',
      subject: null,
      payload: { message: 'lazy commit' },
      now: new Date().toISOString(),
    });

  test('the claim and the flush turn synchronous_commit off for their own transaction only', async () => {
    const eventId = await emit();
    await server.ctx.db.connection().execute(async (connection) => {
      assert.equal(await setting(connection), 'on', 'the server default');
      // In an explicit transaction the statement's setting is seen by the next statement of it.
      const claimed = await connection.transaction().execute(async (trx) => {
        const dispatched = await dispatchEvents(trx, lease(), 10, () => crypto.randomUUID());
        assert.equal(await setting(trx), 'off', 'the claim set it for its transaction');
        return dispatched.claimed;
      });
      const delivery = claimed.find((candidate) => candidate.first?.eventId === eventId);
      assert.ok(delivery, 'the event was claimed');
      // Alone, as the worker runs it, it is its own transaction: the connection is back to the default.
      assert.equal(await setting(connection), 'on', 'the claim did not change the session');

      const attemptedAt = new Date().toISOString();
      const record = {
        deliveryRowId: null,
        deliveryId: delivery.deliveryId,
        eventType: delivery.eventType,
        first: delivery.first,
        attempt: 1,
        attemptedAt,
        url: 'https://example.com/lazy-commit',
        responseStatus: 200,
        durationMs: 1,
        error: null,
        responseBody: null,
        outcome: { status: 'delivered' as const },
      };
      await connection.transaction().execute(async (trx) => {
        await recordAttempts(trx, 'lazy-commit-test', [record], attemptedAt);
        assert.equal(await setting(trx), 'off', 'the flush set it for its transaction');
      });
      assert.equal(await setting(connection), 'on', 'the flush did not change the session');
    });
    const row = await server.ctx.db
      .selectFrom('webhook_deliveries')
      .select(['status', 'attempt_count'])
      .where('event_id', '=', eventId)
      .executeTakeFirstOrThrow();
    assert.deepEqual(row, { status: 'delivered', attempt_count: 1 }, 'the flush wrote its outcome');
  });
});
