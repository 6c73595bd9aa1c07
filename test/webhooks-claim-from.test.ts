// The worker's claim of events reads the outbox from the lowest event its last claim took (claimFrom in
// src/modules/webhooks/worker.ts), so that it does not step over the index entries of every event already
// sent. An event whose transaction took its id before an event the worker has since claimed, and committed
// after it, is below that point: the claim its commit wakes finds nothing from there and reads again from
// the start at once, so it is sent then, not at the next read from the start. PostgreSQL only: SQLite
// runs one write transaction at a time, so no event commits after a later one.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { emitEvent } from '../src/modules/events/emit.ts';
import { createTestMerchant, DB_KIND, startTestServer, type TestServer } from './helpers/server.ts';
import { type Receiver, setEndpoint, startReceiver } from './webhooks-helpers.ts';

describe('an event committed after a later one was claimed (PostgreSQL)', {
  skip: DB_KIND === 'postgres' ? false : 'PostgreSQL only',
}, () => {
  let receiver: Receiver;
  let server: TestServer;
  before(async () => {
    receiver = await startReceiver();
    // The safety poll out of the way: only commits wake the worker.
    server = await startTestServer({ env: { KASSA_WORKER_POLL_MS: '60000' } });
  });
  after(async () => {
    await server?.close();
    await receiver?.close();
  });

  test('is sent at its commit, once, as are the events around it', async () => {
    const merchant = await createTestMerchant(server);
    await setEndpoint(server, merchant, `${receiver.url}/claim-from/${merchant.slug}`);
    const event = (subject: string) => ({
      organizationId: merchant.organizationId,
      environment: 'production' as const,
      type: 'transaction.status_changed' as const,
      subject,
      payload: { transaction_id: subject },
      now: new Date().toISOString(),
    });
    const arrived = (subject: string) => (request: { text: string }) => request.text.includes(`"${subject}"`);

    const first = await emitEvent(server.ctx.db, event('TXFIRST'));
    await receiver.waitFor(1, 10_000, arrived('TXFIRST'));

    // The late event takes its id, then waits uncommitted while a later one is committed and claimed.
    let commitLate = () => {};
    const gate = new Promise<void>((resolve) => {
      commitLate = resolve;
    });
    let lateId = 0;
    const late = server.ctx.db.transaction().execute(async (trx) => {
      lateId = await emitEvent(trx, event('TXLATE'));
      await gate;
    });
    while (lateId === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    const later = await emitEvent(server.ctx.db, event('TXLATER'));
    await receiver.waitFor(1, 10_000, arrived('TXLATER'));
    assert.ok(first < lateId && lateId < later, `ids ${first} < ${lateId} < ${later}`);

    const committedAt = Date.now();
    commitLate();
    await late;
    // Well before the safety poll (60 s): the claim woken by the commit finds it.
    await receiver.waitFor(1, 5_000, arrived('TXLATE'));
    assert.ok(Date.now() - committedAt < 5_000);

    // Each sent once.
    await new Promise((resolve) => setTimeout(resolve, 300));
    for (const subject of ['TXFIRST', 'TXLATE', 'TXLATER'])
      assert.equal(receiver.requests.filter(arrived(subject)).length, 1, subject);
  });
});
