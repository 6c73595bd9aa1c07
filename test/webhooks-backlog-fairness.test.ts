// A retry that falls due while a large backlog of new events is being delivered is sent within about a
// second, not after the backlog (docs/webhooks.md, "Retries"). The worker's claim of new events used to
// fill all its room, so the round's read of due retries (which also finds lapsed leases) never ran
// until the backlog had drained: one merchant's burst of events held back every other merchant's retries.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { emitEvent } from '../src/modules/events/emit.ts';
import { createTestMerchant, DB_KIND, startTestServer, type TestServer } from './helpers/server.ts';
import { type Receiver, setEndpoint, startReceiver } from './webhooks-helpers.ts';

const BACKLOG = 4000;
const RETRY_AFTER_MS = 1000;

describe(`a due retry beside a backlog (${DB_KIND})`, () => {
  let server: TestServer;
  let busy: Receiver;
  let retried: Receiver;
  before(async () => {
    server = await startTestServer({
      env: { KASSA_WEBHOOK_TIMEOUT_MS: '10000', KASSA_WEBHOOK_RETRY_SCHEDULE_MS: String(RETRY_AFTER_MS) },
    });
    busy = await startReceiver();
    // Slow enough that the backlog takes several seconds at 32 sends in flight to one endpoint.
    busy.respond = () => ({ status: 200, body: 'ok', delayMs: 40 });
    retried = await startReceiver();
    retried.respond = (_request, index) => (index === 0 ? { status: 500, body: 'down' } : { status: 200 });
  });
  after(async () => {
    await server.close();
    await busy.close();
    await retried.close();
  });

  test("another merchant's retry is sent when due, while a backlog of new events is still being delivered", async () => {
    const flooding = await createTestMerchant(server, 'Backlog');
    const waiting = await createTestMerchant(server, 'Retry');
    await setEndpoint(server, flooding, `${busy.url}/hooks`);
    await setEndpoint(server, waiting, `${retried.url}/hooks`);
    const event = (organizationId: number, index: number) => {
      const subject = `RF${String(index).padStart(16, '0')}`;
      return {
        organizationId,
        environment: 'sandbox' as const,
        type: 'refund.status_changed' as const,
        subject,
        payload: { refund_id: subject, status: 'processing' },
        now: new Date().toISOString(),
      };
    };
    await server.ctx.db.transaction().execute((trx) => emitEvent(trx, event(waiting.organizationId, 0)));
    const [first] = await retried.waitFor(1);
    const due = first.at + RETRY_AFTER_MS;
    await server.ctx.db.transaction().execute(async (trx) => {
      for (let index = 0; index < BACKLOG; index++)
        await emitEvent(trx, event(flooding.organizationId, index));
    });
    await busy.waitFor(1, 10_000);
    const [, second] = await retried.waitFor(2, 60_000);
    const delivered = busy.requests.filter((request) => request.at <= second.at).length;
    assert.ok(
      delivered < BACKLOG / 2,
      `the retry was sent ${second.at - due} ms after it fell due, with ${delivered} of the backlog's ${BACKLOG} events delivered`,
    );
    assert.ok(second.at - due < 5000, `the retry came ${second.at - due} ms after it fell due`);
    await busy.waitFor(BACKLOG, 60_000);
  });
});
