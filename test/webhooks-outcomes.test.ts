// The worker's flush of attempt outcomes (src/modules/webhooks/outcomes.ts) when another worker wrote an
// event's first delivery first (a lease that lapsed mid-send: the event was sent twice): the first
// row stays, the second send is logged on it, and the rest of the batch is written as it would be.
// The flush inserts first deliveries without ON CONFLICT and writes a refused batch again; this checks
// that path, on both databases.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { emitEvent } from '../src/modules/events/emit.ts';
import { type AttemptRecord, recordAttempts } from '../src/modules/webhooks/outcomes.ts';
import { createTestMerchant, DB_KIND, startTestServer, type TestServer } from './helpers/server.ts';

let server: TestServer;
before(async () => {
  server = await startTestServer({ worker: false });
});
after(() => server?.close());

function firstSend(
  organizationId: number,
  eventId: number,
  at: string,
  status: number,
  outcome: AttemptRecord['outcome'],
): AttemptRecord {
  return {
    deliveryRowId: null,
    deliveryId: `wh_outcomes_${eventId}`,
    eventType: 'webhook.test',
    first: { eventId, organizationId, environment: 'production', subject: null },
    attempt: 1,
    attemptedAt: at,
    url: 'https://receiver.example/hook',
    responseStatus: status,
    durationMs: 12,
    error: status === 200 ? null : `HTTP ${status}`,
    responseBody: `answer ${status}`,
    outcome,
  };
}

test(`a first delivery another worker wrote first keeps its row; the rest of the batch is written (${DB_KIND})`, async () => {
  const { organizationId } = await createTestMerchant(server);
  const db = server.ctx.db;
  const now = new Date().toISOString();
  const event = () =>
    emitEvent(db, {
      organizationId,
      environment: 'production',
      type: 'webhook.test',
      subject: null,
      payload: { message: 'outcomes' },
      now,
    });
  const [shared, own, other] = [await event(), await event(), await event()];
  const later = new Date(Date.now() + 60_000).toISOString();

  // Worker A sent `shared` and `own`; worker B sent `shared` again (A's lease had lapsed) and `other`.
  await recordAttempts(
    db,
    'worker-a',
    [
      firstSend(organizationId, shared, now, 200, { status: 'delivered' }),
      firstSend(organizationId, own, now, 200, { status: 'delivered' }),
    ],
    now,
  );
  await recordAttempts(
    db,
    'worker-b',
    [
      firstSend(organizationId, shared, now, 503, { status: 'pending', nextAttemptAt: later }),
      firstSend(organizationId, other, now, 500, { status: 'pending', nextAttemptAt: later }),
    ],
    now,
  );

  const rows = await db
    .selectFrom('webhook_deliveries')
    .select(['id', 'event_id', 'delivery_id', 'status', 'attempt_count', 'last_response_status'])
    .where('event_id', 'in', [shared, own, other])
    .orderBy('event_id')
    .execute();
  assert.deepEqual(
    rows.map(({ id: _id, ...row }) => row),
    [
      // A's row stays as A wrote it: B's later answer does not undo a delivery.
      {
        event_id: shared,
        delivery_id: `wh_outcomes_${shared}`,
        status: 'delivered',
        attempt_count: 1,
        last_response_status: 200,
      },
      {
        event_id: own,
        delivery_id: `wh_outcomes_${own}`,
        status: 'delivered',
        attempt_count: 1,
        last_response_status: 200,
      },
      {
        event_id: other,
        delivery_id: `wh_outcomes_${other}`,
        status: 'pending',
        attempt_count: 1,
        last_response_status: 500,
      },
    ],
  );
  const attempts = await db
    .selectFrom('webhook_attempts')
    .select(['delivery_id', 'response_status', 'response_body'])
    .where(
      'delivery_id',
      'in',
      rows.map((row) => row.id),
    )
    .orderBy('id')
    .execute();
  const byEvent = new Map(rows.map((row) => [row.id, row.event_id]));
  // Both sends of `shared` are in its attempts log, each once.
  assert.deepEqual(
    attempts.map((row) => [byEvent.get(row.delivery_id), row.response_status, row.response_body]),
    [
      [shared, 200, 'answer 200'],
      [own, 200, 'answer 200'],
      [shared, 503, 'answer 503'],
      [other, 500, 'answer 500'],
    ],
  );
  const undispatched = await db
    .selectFrom('events')
    .select('id')
    .where('id', 'in', [shared, own, other])
    .where((eb) => eb.or([eb('dispatched_at', 'is', null), eb('locked_until', 'is not', null)]))
    .execute();
  assert.deepEqual(undispatched, []);
});
