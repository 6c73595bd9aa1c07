// A pending delivery whose event row is gone (PostgreSQL has no foreign key from a delivery to its event
// since migration 025; an old process during an upgrade or a hand edit can leave one): the worker's
// claim of due deliveries fails it for good instead of leasing it again at every claim, sends nothing
// for it, and the delivery log still shows it. SQLite keeps the key; there the event is deleted through
// a connection without it (deleteEventUnderItsDeliveries).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { newUuid } from '../src/lib/ids.ts';
import { insertDelivery } from '../src/modules/webhooks/store.ts';
import { DeliveryWorker } from '../src/modules/webhooks/worker.ts';
import { claimDueDeliveries } from '../src/modules/webhooks/worker-store.ts';
import {
  call,
  createTestMerchant,
  DB_KIND,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import {
  deleteEventUnderItsDeliveries,
  type Receiver,
  setEndpoint,
  startReceiver,
} from './webhooks-helpers.ts';

let server: TestServer;
let merchant: Merchant;
let receiver: Receiver;
before(async () => {
  receiver = await startReceiver();
  // No worker loop: the test runs the worker's rounds itself, one at a time.
  server = await startTestServer({ worker: false });
  merchant = await createTestMerchant(server, 'Eventless Shop');
  await setEndpoint(server, merchant, `${receiver.url}/eventless`);
});
after(async () => {
  await server?.close();
  await receiver?.close();
});

/** A dispatched event and its pending delivery, due now, as a test send leaves them. */
async function pendingDelivery(message: string) {
  const now = new Date().toISOString();
  const event = await server.ctx.db
    .insertInto('events')
    .values({
      organization_id: merchant.organizationId,
      environment: 'production',
      type: 'webhook.test',
      subject: null,
      payload: JSON.stringify({ message }),
      created_at: now,
      dispatched_at: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const delivery = await insertDelivery(server.ctx.db, {
    deliveryId: newUuid(),
    organizationId: merchant.organizationId,
    eventId: event.id,
    eventType: 'webhook.test',
    environment: 'production',
    subject: null,
    redeliveryOf: null,
    now,
  });
  return { eventId: event.id, rowId: delivery.id, deliveryId: delivery.delivery_id };
}

// Spread into a plain object: node:sqlite's rows have a null prototype.
const deliveryRow = async (rowId: number) => ({
  ...(await server.ctx.db
    .selectFrom('webhook_deliveries')
    .select(['status', 'attempt_count', 'last_error', 'locked_by', 'locked_until'])
    .where('id', '=', rowId)
    .executeTakeFirstOrThrow()),
});

test(`a due delivery whose event is gone is failed by one worker round, not sent, not claimed again, and shown (${DB_KIND})`, async () => {
  const live = await pendingDelivery('live');
  const orphan = await pendingDelivery('orphan');
  await deleteEventUnderItsDeliveries(server, orphan.eventId);

  // One round claims both: the live one is sent, the one without an event is finished.
  const worker = new DeliveryWorker(server.ctx);
  await worker.tick();
  await worker.drain();

  assert.deepEqual(await deliveryRow(orphan.rowId), {
    status: 'failed',
    attempt_count: 0,
    last_error: 'The event of this delivery no longer exists.',
    locked_by: null,
    locked_until: null,
  });
  const attempts = await server.ctx.db
    .selectFrom('webhook_attempts')
    .select('id')
    .where('delivery_id', '=', orphan.rowId)
    .execute();
  assert.deepEqual(attempts, [], 'no attempt is recorded for a delivery that was not sent');
  assert.equal((await deliveryRow(live.rowId)).status, 'delivered');
  assert.deepEqual(
    receiver.requests.map((request) => (JSON.parse(request.text) as { message: string }).message),
    ['live'],
    'only the delivery with an event reached the receiver',
  );

  // A claim long after the round's lease would have lapsed finds nothing to take.
  const later = new Date(Date.now() + 60 * 60 * 1000);
  const again = await claimDueDeliveries(
    server.ctx.db,
    {
      workerId: 'a-later-worker',
      now: later.toISOString(),
      until: new Date(later.getTime() + 15_000).toISOString(),
    },
    10,
  );
  assert.deepEqual(again.claimed, []);
  assert.equal((await deliveryRow(orphan.rowId)).locked_by, null);

  // The merchant's log shows it, failed and with the reason, without the payload it no longer has.
  const detail = await call<{
    status: string;
    last_error: string | null;
    payload: unknown;
    attempts: unknown[];
  }>(server, 'GET', `/api/organization/webhook/deliveries/${orphan.deliveryId}/`, { token: merchant.token });
  assert.equal(detail.status, 200, detail.text);
  assert.equal(detail.body.status, 'failed');
  assert.equal(detail.body.last_error, 'The event of this delivery no longer exists.');
  assert.equal(detail.body.payload, null);
  assert.deepEqual(detail.body.attempts, []);
  const failed = await call<{ results: { id: string }[] }>(
    server,
    'GET',
    '/api/organization/webhook/deliveries/?status=failed',
    { token: merchant.token },
  );
  assert.equal(failed.status, 200, failed.text);
  assert.deepEqual(
    failed.body.results.map((row) => row.id),
    [orphan.deliveryId],
  );
  // The delivery exists (GET above), but there is no event to send again: a conflict with its state, not
  // a 404 (docs/webhooks.md), and nothing written.
  const redelivery = await call(
    server,
    'POST',
    `/api/organization/webhook/deliveries/${orphan.deliveryId}/redeliver/`,
    { token: merchant.token },
  );
  assert.equal(redelivery.status, 409, redelivery.text);
  assert.equal(
    redelivery.body.detail,
    'The event of this delivery no longer exists, so it cannot be redelivered.',
  );
  const redeliveries = await server.ctx.db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('redelivery_of', '=', orphan.rowId)
    .execute();
  assert.deepEqual(redeliveries, [], 'no redelivery was written');
  // The route documents this 409 in the served OpenAPI document, with the {detail} body.
  const document = await call<{
    paths: Record<
      string,
      Record<string, { responses: Record<string, { description: string; content: unknown }> }>
    >;
  }>(server, 'GET', '/api/openapi.json');
  const conflict =
    document.body.paths['/api/organization/webhook/deliveries/{id}/redeliver/'].post.responses[409];
  assert.match(conflict?.description ?? '', /event of this delivery no longer exists/);
  assert.deepEqual(conflict.content, {
    'application/json': { schema: { $ref: '#/components/schemas/Error' } },
  });
});
