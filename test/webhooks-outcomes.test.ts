// The worker's flush of attempt outcomes (src/modules/webhooks/outcomes.ts) when another worker wrote an
// event's first delivery first (a lease that lapsed mid-send: the event was sent twice): the first
// row stays, the second send is logged on it, and the rest of the batch is written as it would be.
// The flush inserts first deliveries without ON CONFLICT and writes a refused batch again; this checks
// that path, on both databases.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { emitEvent } from '../src/modules/events/emit.ts';
import { type AttemptRecord, recordAttempts } from '../src/modules/webhooks/outcomes.ts';
import { insertDelivery } from '../src/modules/webhooks/store.ts';
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
});

// One flush of every kind of outcome: an event's first delivery delivered, pending and failed; later
// attempts of rows this worker leases, delivered, pending and failed; a row another worker leases now
// (its outcome is not applied, its attempt is logged); a row attempted twice in the batch (a delivery
// wins over the other outcome, else the first outcome is kept). PostgreSQL writes it in one statement,
// SQLite in a transaction, and PostgreSQL again in a transaction when the batch meets a row another
// worker wrote first: every path must leave the same rows.
const T0 = '2026-11-27T10:00:00.000Z';
const FLUSHED = '2026-11-27T10:00:01.000Z';
const RETRY_AT = '2026-11-27T10:05:00.000Z';
const LEASED = '2099-01-01T00:00:00.000Z';

/** What the receiver answered to attempt `number` of `label`: in the record, and in the log after. */
function answer(label: string, number: number, status: number | null) {
  return {
    url: `https://receiver.example/${label}`,
    durationMs: number * 10,
    error: status === null ? 'connect ECONNREFUSED' : status < 300 ? null : `HTTP ${status}`,
    body: status === null || status < 300 ? null : `answer ${label}`,
  };
}

function attempt(
  label: string,
  row: { deliveryRowId: number | null; first: AttemptRecord['first'] },
  attemptNumber: number,
  status: number | null,
  outcome: AttemptRecord['outcome'],
): AttemptRecord {
  const { url, durationMs, error, body } = answer(label, attemptNumber, status);
  return {
    ...row,
    deliveryId: `wh_${label}_${row.first?.eventId ?? row.deliveryRowId}`,
    eventType: 'transaction.status_changed',
    attempt: attemptNumber,
    attemptedAt: T0,
    url,
    responseStatus: status,
    durationMs,
    error,
    responseBody: body,
    outcome,
  };
}

async function flushEveryKind(withConflict: boolean) {
  const { organizationId } = await createTestMerchant(server);
  const db = server.ctx.db;
  const events = new Map<string, number>();
  const rows = new Map<string, number>();
  for (const label of ['f1', 'f2', 'f3', 'r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'taken']) {
    events.set(
      label,
      await emitEvent(db, {
        organizationId,
        environment: 'production',
        type: 'transaction.status_changed',
        subject: `TX_${label}`,
        payload: { label },
        now: T0,
      }),
    );
  }
  for (const label of ['r1', 'r2', 'r3', 'r4', 'r5', 'r6']) {
    const row = await insertDelivery(db, {
      deliveryId: `wh_${label}_${events.get(label)}`,
      organizationId,
      eventId: events.get(label) as number,
      eventType: 'transaction.status_changed',
      environment: 'production',
      subject: `TX_${label}`,
      redeliveryOf: null,
      now: T0,
    });
    rows.set(label, row.id);
    await db
      .updateTable('webhook_deliveries')
      .set({ locked_by: label === 'r5' ? 'worker-b' : 'worker-a', locked_until: LEASED })
      .where('id', '=', row.id)
      .execute();
  }
  const first = (label: string) => ({
    deliveryRowId: null,
    first: {
      eventId: events.get(label) as number,
      organizationId,
      environment: 'production' as const,
      subject: `TX_${label}`,
    },
  });
  const later = (label: string) => ({ deliveryRowId: rows.get(label) as number, first: null });
  if (withConflict) {
    // Another worker sent `taken` first and wrote its row: this batch's first insert is refused.
    await recordAttempts(
      db,
      'worker-b',
      [attempt('taken', first('taken'), 1, 200, { status: 'delivered' })],
      T0,
    );
  }
  const batch = [
    attempt('f1', first('f1'), 1, 200, { status: 'delivered' }),
    attempt('r1', later('r1'), 2, 200, { status: 'delivered' }),
    attempt('f2', first('f2'), 1, 503, { status: 'pending', nextAttemptAt: RETRY_AT }),
    attempt('r2', later('r2'), 3, 500, { status: 'pending', nextAttemptAt: RETRY_AT }),
    attempt('r3', later('r3'), 8, 410, { status: 'failed' }),
    attempt('f3', first('f3'), 1, null, { status: 'failed' }),
    attempt('r4', later('r4'), 2, 502, { status: 'pending', nextAttemptAt: RETRY_AT }),
    attempt('r5', later('r5'), 2, 200, { status: 'delivered' }),
    attempt('r4', later('r4'), 2, 201, { status: 'delivered' }),
    attempt('r6', later('r6'), 5, 500, { status: 'failed' }),
    attempt('r6', later('r6'), 6, 503, { status: 'pending', nextAttemptAt: RETRY_AT }),
    ...(withConflict ? [attempt('taken', first('taken'), 1, 500, { status: 'failed' })] : []),
  ];

  // The claims' leases: this batch writes the last deliveries of `claimed`'s events, releasing it; `other`
  // (a claim whose sends are still out) stays.
  const lease = async (labels: string[]) =>
    (
      await db
        .insertInto('webhook_leases')
        .values({
          worker_id: 'worker-a',
          locked_until: LEASED,
          event_ids: JSON.stringify(labels.map((label) => events.get(label))),
        })
        .returning('id')
        .executeTakeFirstOrThrow()
    ).id;
  await db.deleteFrom('webhook_leases').execute(); // an earlier test's
  const claimed = await lease(['f1', 'f2', 'f3', ...(withConflict ? ['taken'] : [])]);
  await lease(['r1']);

  const heard: string[] = [];
  const unsubscribe = server.ctx.outbox.subscribe((wrote) => heard.push(wrote));
  const statementsBefore = server.ctx.outbox.statements;
  await recordAttempts(db, 'worker-a', batch, FLUSHED, [claimed]);
  const statements = server.ctx.outbox.statements - statementsBefore;
  unsubscribe();

  const labelOf = new Map([...events].map(([label, id]) => [id, label]));
  const deliveries = await db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .orderBy('event_id')
    .execute();
  const rowLabel = new Map(deliveries.map((row) => [row.id, labelOf.get(row.event_id)]));
  const attempts = await db
    .selectFrom('webhook_attempts')
    .selectAll()
    .where(
      'delivery_id',
      'in',
      deliveries.map((row) => row.id),
    )
    .orderBy('id')
    .execute();
  const dispatched = await db
    .selectFrom('events')
    .select(['id', 'dispatched_at', 'locked_by', 'locked_until'])
    .where('organization_id', '=', organizationId)
    .where('dispatched_at', 'is not', null)
    .orderBy('id')
    .execute();
  const leases = await db.selectFrom('webhook_leases').select('event_ids').orderBy('id').execute();
  return {
    statements,
    heard,
    deliveries: deliveries.map(({ id: _id, organization_id: _org, event_id, delivery_id, ...row }) => ({
      event: labelOf.get(event_id),
      delivery_id: delivery_id.replace(/_\d+$/, ''),
      ...row,
    })),
    attempts: attempts.map(({ id: _id, delivery_id, ...row }) => ({
      row: rowLabel.get(delivery_id),
      ...row,
    })),
    dispatched: dispatched.map(({ id, ...row }) => ({ event: labelOf.get(id), ...row })),
    leases: leases.map((row) => (JSON.parse(row.event_ids) as number[]).map((id) => labelOf.get(id))),
  };
}

const unchanged = { redelivery_of: null, created_at: T0, environment: 'production' };
const delivery = (event: string, fields: Record<string, unknown>) => ({
  event,
  delivery_id: `wh_${event}`,
  event_type: 'transaction.status_changed',
  subject: `TX_${event}`,
  locked_by: null,
  locked_until: null,
  updated_at: FLUSHED,
  ...unchanged,
  ...fields,
});
const EXPECTED_DELIVERIES = [
  delivery('f1', {
    status: 'delivered',
    attempt_count: 1,
    next_attempt_at: T0,
    last_response_status: 200,
    last_error: null,
    delivered_at: FLUSHED,
  }),
  delivery('f2', {
    status: 'pending',
    attempt_count: 1,
    next_attempt_at: RETRY_AT,
    last_response_status: 503,
    last_error: 'HTTP 503',
    delivered_at: null,
  }),
  delivery('f3', {
    status: 'failed',
    attempt_count: 1,
    next_attempt_at: T0,
    last_response_status: null,
    last_error: 'connect ECONNREFUSED',
    delivered_at: null,
  }),
  delivery('r1', {
    delivery_id: 'wh_r1',
    status: 'delivered',
    attempt_count: 2,
    next_attempt_at: T0,
    last_response_status: 200,
    last_error: null,
    delivered_at: FLUSHED,
  }),
  delivery('r2', {
    delivery_id: 'wh_r2',
    status: 'pending',
    attempt_count: 3,
    next_attempt_at: RETRY_AT,
    last_response_status: 500,
    last_error: 'HTTP 500',
    delivered_at: null,
  }),
  delivery('r3', {
    delivery_id: 'wh_r3',
    status: 'failed',
    attempt_count: 8,
    next_attempt_at: T0,
    last_response_status: 410,
    last_error: 'HTTP 410',
    delivered_at: null,
  }),
  // Pending, then delivered in the same batch: the delivery stands.
  delivery('r4', {
    delivery_id: 'wh_r4',
    status: 'delivered',
    attempt_count: 2,
    next_attempt_at: T0,
    last_response_status: 201,
    last_error: null,
    delivered_at: FLUSHED,
  }),
  // Leased by worker B: as it was.
  delivery('r5', {
    delivery_id: 'wh_r5',
    status: 'pending',
    attempt_count: 0,
    next_attempt_at: T0,
    locked_by: 'worker-b',
    locked_until: LEASED,
    last_response_status: null,
    last_error: null,
    updated_at: T0,
    delivered_at: null,
  }),
  // Failed, then pending in the same batch: the first outcome stands.
  delivery('r6', {
    delivery_id: 'wh_r6',
    status: 'failed',
    attempt_count: 5,
    next_attempt_at: T0,
    last_response_status: 500,
    last_error: 'HTTP 500',
    delivered_at: null,
  }),
];
const logged = (row: string, number: number, status: number | null) => {
  const { url, durationMs, error, body } = answer(row, number, status);
  return {
    row,
    attempt: number,
    attempted_at: T0,
    url,
    response_status: status,
    duration_ms: durationMs,
    error,
    response_body: body,
  };
};
const EXPECTED_ATTEMPTS = [
  logged('f1', 1, 200),
  logged('r1', 2, 200),
  logged('f2', 1, 503),
  logged('r2', 3, 500),
  logged('r3', 8, 410),
  logged('f3', 1, null),
  logged('r4', 2, 502),
  logged('r5', 2, 200),
  logged('r4', 2, 201),
  logged('r6', 5, 500),
  logged('r6', 6, 503),
];

test(`a flush leaves the same rows on both databases, in one statement on PostgreSQL, and wakes no worker (${DB_KIND})`, async () => {
  const written = await flushEveryKind(false);
  assert.deepEqual(written.deliveries, EXPECTED_DELIVERIES);
  assert.deepEqual(written.attempts, EXPECTED_ATTEMPTS);
  // The claim dispatched the events (dispatchEvents): the flush writes none of them, and deletes the
  // lease it was given, only that one.
  assert.deepEqual(written.dispatched, []);
  assert.deepEqual(written.leases, [['r1']]);
  // Atomic on its own: no BEGIN and COMMIT around it (SQLite: a transaction of several statements).
  if (DB_KIND === 'postgres') assert.equal(written.statements, 1);
  // The worker's record of its sends gives no worker anything to send: no wake-up (it woke the worker
  // into a claim and a read of its due deliveries at every flush).
  assert.deepEqual(written.heard, []);
});

test(`a flush written again after another worker's row refused it leaves the same rows (${DB_KIND})`, async () => {
  const written = await flushEveryKind(true);
  // Worker B's row of `taken` stays as B wrote it; this batch's send of it is logged on it.
  const taken = delivery('taken', {
    updated_at: T0,
    status: 'delivered',
    attempt_count: 1,
    next_attempt_at: T0,
    last_response_status: 200,
    last_error: null,
    delivered_at: T0,
  });
  const sorted = [...EXPECTED_DELIVERIES, taken];
  assert.deepEqual(written.deliveries, sorted);
  assert.deepEqual(written.attempts, [
    logged('taken', 1, 200),
    ...EXPECTED_ATTEMPTS,
    logged('taken', 1, 500),
  ]);
  assert.deepEqual(written.dispatched, []);
  assert.deepEqual(written.leases, [['r1']]);
  assert.deepEqual(written.heard, []);
});
