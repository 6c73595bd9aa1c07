// The webhook worker wakes on work, not on its poll: with the safety poll set to 30 s, a committed event
// still reaches the receiver within a couple of seconds (in-process signal after the commit; on
// PostgreSQL, a NOTIFY that wakes a worker in another process), and a retry is sent when it falls due.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Child, startNode, stop, waitFor } from '../bench/processes.ts';
import { emitEvent } from '../src/modules/events/emit.ts';
import { deliveryWorker, WARM_FOR_MS } from '../src/modules/webhooks/worker.ts';
import {
  createTestMerchant,
  DB_KIND,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import { type Receiver, setEndpoint, startReceiver } from './webhooks-helpers.ts';

/** Far longer than any bound below: a delivery within the bound cannot come from the poll. */
const SAFETY_POLL_MS = '30000';
const PROMPT_MS = 2000;
/** The retry (±10 % jitter) falls due after the warm poll that follows the first attempt has ended. */
const RETRY_MS = WARM_FOR_MS + 1000;

/** Commits one event for the merchant (as a business transaction would) and returns its subject. */
async function commitEvent(server: TestServer, merchant: Merchant, n: number): Promise<string> {
  const subject = `TX${String(n).padStart(16, '0')}`;
  await server.ctx.db.transaction().execute((trx) =>
    emitEvent(trx, {
      organizationId: merchant.organizationId,
      environment: 'production',
      type: 'transaction.status_changed',
      subject,
      payload: { transaction_id: subject, status: 'paid' },
      now: new Date().toISOString(),
    }),
  );
  return subject;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Each event, committed after the worker has gone back to its safety poll (past the warm poll that
 * follows work), arrives within PROMPT_MS of its commit.
 */
async function assertPrompt(server: TestServer, receiver: Receiver, merchant: Merchant) {
  for (let n = 1; n <= 2; n++) {
    await sleep(WARM_FOR_MS + 300);
    const committedAt = Date.now();
    const subject = await commitEvent(server, merchant, n);
    const [arrived] = await receiver.waitFor(1, 10_000, (request) => request.text.includes(subject));
    assert.ok(
      arrived.at - committedAt < PROMPT_MS,
      `event ${n} arrived after ${arrived.at - committedAt} ms`,
    );
  }
}

describe('the webhook worker wakes on work', () => {
  let receiver: Receiver;
  before(async () => {
    receiver = await startReceiver();
  });
  after(() => receiver.close());

  test('a committed event reaches the receiver promptly although the safety poll is 30 s', async () => {
    const server = await startTestServer({ env: { KASSA_WORKER_POLL_MS: SAFETY_POLL_MS } });
    try {
      const merchant = await createTestMerchant(server);
      await setEndpoint(server, merchant, `${receiver.url}/prompt/${merchant.slug}`);
      await assertPrompt(server, receiver, merchant);
    } finally {
      await server.close();
    }
  });

  test('a retry is sent when it falls due, not at the next safety poll', async () => {
    const server = await startTestServer({
      env: { KASSA_WORKER_POLL_MS: SAFETY_POLL_MS, KASSA_WEBHOOK_RETRY_SCHEDULE_MS: String(RETRY_MS) },
    });
    try {
      const merchant = await createTestMerchant(server);
      const path = `/retry/${merchant.slug}`;
      await setEndpoint(server, merchant, `${receiver.url}${path}`);
      const previous = receiver.respond;
      let failed = false;
      receiver.respond = (request, index) => {
        if (request.path === path && !failed) {
          failed = true;
          return { status: 500 };
        }
        return previous(request, index);
      };
      await sleep(WARM_FOR_MS + 300);
      await commitEvent(server, merchant, 1);
      const [one, two] = await receiver.waitFor(2, 10_000, (request) => request.path === path);
      const gap = two.at - one.at;
      assert.ok(gap >= RETRY_MS * 0.9 - 50 && gap < RETRY_MS * 1.1 + PROMPT_MS, `retried after ${gap} ms`);
    } finally {
      await server.close();
    }
  });

  test('an event committed by an API process wakes the worker of another process (NOTIFY; on SQLite the log watch)', async () => {
    // Process A: the API only, in this process; process B: `kassa worker`, a child on the same database
    // (the same PostgreSQL schema, or the same SQLite file, whose write-ahead log the worker watches).
    const api = await startTestServer({ worker: false, env: { KASSA_WORKER_POLL_MS: SAFETY_POLL_MS } });
    let worker: Child | null = null;
    try {
      const merchant = await createTestMerchant(api);
      await setEndpoint(api, merchant, `${receiver.url}/notify/${merchant.slug}`);
      worker = startNode(['src/cli/main.ts', 'worker'], api.env);
      await waitFor(worker, /worker running/);
      await sleep(500);
      await assertPrompt(api, receiver, merchant);
    } finally {
      if (worker) await stop(worker);
      await api.close();
    }
  });

  test('after work the worker polls every 10 ms only while it may miss a commit (SQLite), not while it hears every one (PostgreSQL LISTEN)', async () => {
    const server = await startTestServer({ env: { KASSA_WORKER_POLL_MS: SAFETY_POLL_MS } });
    try {
      const merchant = await createTestMerchant(server);
      await setEndpoint(server, merchant, `${receiver.url}/warm/${merchant.slug}`);
      await sleep(WARM_FOR_MS + 300);
      const subject = await commitEvent(server, merchant, 1);
      await receiver.waitFor(1, 10_000, (request) => request.text.includes(subject));
      // Within the warm window that follows work: how long the loop would sleep now.
      const idle = deliveryWorker(server.ctx).idleMs();
      if (DB_KIND === 'postgres') assert.equal(idle, Number(SAFETY_POLL_MS), 'LISTEN hears every commit');
      else assert.ok(idle <= 10, `slept ${idle} ms: the warm poll (every 10 ms) was expected`);
    } finally {
      await server.close();
    }
  });
});
