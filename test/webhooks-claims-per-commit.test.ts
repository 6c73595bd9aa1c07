// What one commit of an event costs the webhook worker on PostgreSQL, where every commit is heard (LISTEN):
// one claim, the read of its due deliveries (its last one is old here), and the outcome's flush in one
// statement. This process's own commit is announced at the commit and heard again as the NOTIFY its
// trigger sends: that NOTIFY woke the worker into a second claim, which found nothing. And the round the
// runner runs at once after a round that started sends probed for work that no commit had announced.
// The statements are counted by their SQL as the pg driver sends them (the due-driven loops sleep for a
// minute here, so the worker's are the only statements of the window besides the event's insert).
// SQLite has no NOTIFY and keeps its warm poll after work (it may miss another process's commit).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { emitEvent } from '../src/modules/events/emit.ts';
import { createTestMerchant, DB_KIND, startTestServer, type TestServer } from './helpers/server.ts';
import { type Receiver, setEndpoint, startReceiver } from './webhooks-helpers.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every statement this process sends to PostgreSQL while `recording`, by its SQL. */
const sent: string[] = [];
let recording = false;
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  const first = args[0] as string | { text?: string } | undefined;
  const text = typeof first === 'string' ? first : first?.text;
  if (recording && text) sent.push(text.replace(/\s+/g, ' ').slice(0, 80));
  return (query as (...values: unknown[]) => unknown).apply(this, args);
} as typeof query;

describe('one commit, one claim (PostgreSQL)', {
  skip: DB_KIND === 'postgres' ? false : 'PostgreSQL only',
}, () => {
  let receiver: Receiver;
  let server: TestServer;
  before(async () => {
    receiver = await startReceiver();
    server = await startTestServer({
      env: { KASSA_WORKER_POLL_MS: '30000', KASSA_SYNC_INTERVAL_MS: '60000' },
    });
  });
  after(async () => {
    pg.Client.prototype.query = query;
    await server?.close();
    await receiver?.close();
  });

  test('an event committed by this process costs the worker one claim, one due read and a one-statement flush', async () => {
    const merchant = await createTestMerchant(server);
    await setEndpoint(server, merchant, `${receiver.url}/per-commit/${merchant.slug}`);
    for (let n = 1; n <= 3; n++) {
      // Past the set-up's work and the last round's read of due deliveries (read again after 1 s).
      await sleep(1500);
      sent.length = 0;
      recording = true;
      const subject = `TX${n}`;
      await emitEvent(server.ctx.db, {
        organizationId: merchant.organizationId,
        environment: 'production',
        type: 'transaction.status_changed',
        subject,
        payload: { transaction_id: subject },
        now: new Date().toISOString(),
      });
      await receiver.waitFor(1, 10_000, (request) => request.text.includes(`"${subject}"`));
      // The flush (50 ms after the send), then anything the NOTIFY would start.
      for (
        let waited = 0;
        !sent.some((text) => text.startsWith('with "outcome"')) && waited < 10_000;
        waited += 20
      )
        await sleep(20);
      await sleep(300);
      recording = false;
      const kinds = sent.map((text) => {
        if (text.startsWith('insert into "events"')) return 'event';
        if (text.startsWith('with "leased" as (update "events"')) return 'claim';
        if (text.startsWith('select (select "next_attempt_at" from "webhook_deliveries"')) return 'due read';
        if (text.startsWith('with "outcome" as')) return 'flush';
        return text;
      });
      assert.deepEqual(kinds, ['event', 'claim', 'due read', 'flush'], `commit ${n}`);
    }
  });
});
