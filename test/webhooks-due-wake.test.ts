// Deliveries that only the worker's read of due deliveries claims (retries, redeliveries, test
// deliveries) go out on time although a round woken by commits that wrote events only skips that read
// while its last one is recent (src/modules/webhooks/worker.ts). The safety poll is 30 s here, so a
// delivery the worker lost track of would come 30 s late, past every wait below.
// - A retry: the worker knows the retry it scheduled (retriesScheduled), so a round a commit wakes
//   before it falls due does not take it for not due (helper-22's review). The failed send is slow
//   (2.3 s, past the warm poll). The outcome's own commit wakes no round (it NOTIFYs nothing on
//   PostgreSQL; on SQLite the log watch ignores this process's commits): the round idleMs() schedules
//   for the retry sends it.
// - A test delivery sent just after the warm poll ended, within 1 s of the worker's last read: its
//   commit says it wrote a delivery (in the process; by the trigger's payload on PostgreSQL), and the
//   round reads (helper-24's review: it waited for the safety poll).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { OPERATOR } from '../src/modules/audit/record.ts';
import { emitEvent } from '../src/modules/events/emit.ts';
import { sendTestEvent } from '../src/modules/webhooks/service.ts';
import { createTestMerchant, DB_KIND, startTestServer, type TestServer } from './helpers/server.ts';
import { type Receiver, setEndpoint, startReceiver } from './webhooks-helpers.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe(`deliveries claimed by the due read go out on time (${DB_KIND})`, () => {
  let receiver: Receiver;
  let server: TestServer;
  before(async () => {
    receiver = await startReceiver();
    server = await startTestServer({
      env: {
        KASSA_WORKER_POLL_MS: '30000',
        KASSA_WEBHOOK_RETRY_SCHEDULE_MS: '1000',
        KASSA_WEBHOOK_TIMEOUT_MS: '10000',
      },
    });
  });
  after(async () => {
    await server?.close();
    await receiver?.close();
  });

  function commitEvent(organizationId: number, subject: string) {
    return server.ctx.db.transaction().execute((trx) =>
      emitEvent(trx, {
        organizationId,
        environment: 'production',
        type: 'transaction.status_changed',
        subject,
        payload: { transaction_id: subject },
        now: new Date().toISOString(),
      }),
    );
  }

  test('a retry of a slow failed send goes out when it falls due, not at the safety poll', async () => {
    const merchant = await createTestMerchant(server, 'Retry Shop');
    await setEndpoint(server, merchant, `${receiver.url}/slow/${merchant.slug}`);
    let n = 0;
    receiver.respond = () => (n++ === 0 ? { status: 500, delayMs: 2300 } : { status: 200 });
    // Past the warm poll that the set-up's own events started.
    await sleep(2500);
    await commitEvent(merchant.organizationId, 'TX1');
    const mine = (request: { path: string }) => request.path === `/slow/${merchant.slug}`;
    const [one, two] = await receiver.waitFor(2, 20_000, mine);
    // 2.3 s send + a 1 s retry (±10 %) + a flush and a claim; late would be the 30 s safety poll.
    assert.ok(two.at - one.at < 10_000, `retry ${two.at - one.at} ms after the first attempt`);
  });

  test('a test delivery sent just after the warm poll ended goes out at once, not at the safety poll', async () => {
    const merchant = await createTestMerchant(server, 'Test Shop');
    await setEndpoint(server, merchant, `${receiver.url}/test/${merchant.slug}`);
    receiver.respond = () => ({ status: 200 });
    await sleep(2500);
    await commitEvent(merchant.organizationId, 'TX2');
    const mine = (request: { path: string }) => request.path === `/test/${merchant.slug}`;
    const [first] = await receiver.waitFor(1, 5000, mine);
    // The warm poll ends 2 s after the round that sent it; its last rounds read the due deliveries.
    await sleep(Math.max(0, first.at + 2300 - Date.now()));
    const sentAt = Date.now();
    await sendTestEvent(server.ctx, merchant.organizationId, OPERATOR);
    const [, test] = await receiver.waitFor(2, 15_000, mine);
    assert.ok(test.at - sentAt < 5000, `the test delivery came ${test.at - sentAt} ms after it was sent`);
  });
});
