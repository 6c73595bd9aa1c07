// A retry is sent when it falls due even when a commit wakes the worker first: a round woken by a commit
// skips the read of due retries while the last read is recent (src/modules/webhooks/worker.ts), so the
// worker must know its own scheduled retry. Here the failed send is slow (2.3 s, past the warm poll),
// the safety poll is 30 s, and on SQLite the outcome's own commit (a change of the write-ahead log)
// wakes a round just after the retry was scheduled: without the worker knowing the retry, that round
// took it for not due and the retry came at the safety poll (helper-22's review).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { emitEvent } from '../src/modules/events/emit.ts';
import { createTestMerchant, startTestServer } from './helpers/server.ts';
import { setEndpoint, startReceiver } from './webhooks-helpers.ts';

test('a retry of a slow failed send goes out when it falls due, not at the safety poll', async () => {
  const receiver = await startReceiver();
  const server = await startTestServer({
    env: {
      KASSA_WORKER_POLL_MS: '30000',
      KASSA_WEBHOOK_RETRY_SCHEDULE_MS: '1000',
      KASSA_WEBHOOK_TIMEOUT_MS: '10000',
    },
  });
  try {
    const merchant = await createTestMerchant(server);
    await setEndpoint(server, merchant, `${receiver.url}/slow`);
    let n = 0;
    receiver.respond = () => (n++ === 0 ? { status: 500, delayMs: 2300 } : { status: 200 });
    // Past the warm poll that the set-up's own events started.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    await server.ctx.db.transaction().execute((trx) =>
      emitEvent(trx, {
        organizationId: merchant.organizationId,
        environment: 'production',
        type: 'transaction.status_changed',
        subject: 'TX1',
        payload: { transaction_id: 'TX1' },
        now: new Date().toISOString(),
      }),
    );
    const [one] = await receiver.waitFor(1, 5000);
    const [, two] = await receiver.waitFor(2, 20_000);
    const gap = two.at - one.at;
    assert.ok(gap < 2300 + 1100 + 1000, `retry after ${gap} ms`);
  } finally {
    await server.close();
    await receiver.close();
  }
});
