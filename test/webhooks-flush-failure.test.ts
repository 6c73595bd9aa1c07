// A flush of attempt outcomes that fails loses its records (src/modules/webhooks/worker.ts, flush): the
// events it held must be sent again. Their claim's lease (webhook_leases, migration 026) is what finds
// them again once it lapses, so a later flush that writes the claim's other outcomes must not delete it.
// The database refuses the one outcome by a trigger (SQLite) or a check (PostgreSQL) set up by the test,
// as a real failure of that statement would (a lost connection, a statement timeout).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { isPostgres } from '../src/db/connection.ts';
import { emitEvent } from '../src/modules/events/emit.ts';
import { createTestMerchant, startTestServer, type TestServer } from './helpers/server.ts';
import { header, type Receiver, setEndpoint, startReceiver, waitUntil } from './webhooks-helpers.ts';

const REFUSED = 'refused-by-the-test';
let server: TestServer;
let receiver: Receiver;
before(async () => {
  receiver = await startReceiver();
  // A lease of 1 s + 5 s; an idle probe every 200 ms finds it lapsed soon after; no retry meanwhile.
  server = await startTestServer({
    env: {
      KASSA_WEBHOOK_TIMEOUT_MS: '1000',
      KASSA_WORKER_POLL_MS: '200',
      KASSA_WEBHOOK_RETRY_SCHEDULE_MS: '600000',
    },
  });
});
after(async () => {
  await server?.close();
  await receiver?.close();
});

async function refuseOutcomes(on: boolean) {
  const db = server.ctx.db;
  if (isPostgres(db)) {
    await (on
      ? sql`alter table webhook_attempts add constraint refused_by_test check (response_body is null or response_body not like ${sql.lit(`%${REFUSED}%`)}) not valid`
      : sql`alter table webhook_attempts drop constraint refused_by_test`
    ).execute(db);
    return;
  }
  await (on
    ? sql.raw(`create trigger refused_by_test before insert on webhook_attempts
        when new.response_body like '%${REFUSED}%' begin select raise(abort, 'refused by the test'); end`)
    : sql`drop trigger refused_by_test`
  ).execute(db);
}

test("a claim's outcome lost in a failed flush is sent again: a later flush of the claim keeps its lease", {
  timeout: 60_000,
}, async () => {
  const merchant = await createTestMerchant(server);
  await setEndpoint(server, merchant, `${receiver.url}/hooks/flush`);
  const marked = (marker: string) => (request: { text: string }) => request.text.includes(`"${marker}"`);
  // `lost`'s answer comes at once, and its outcome is flushed alone (and refused); the others come
  // 400 ms later, in a flush of their own (outcomes wait 50 ms), with the claim's lease to release.
  receiver.respond = (request) =>
    marked('lost')(request) && receiver.requests.filter(marked('lost')).length === 1
      ? { status: 500, body: REFUSED }
      : { status: 200, body: 'ok', delayMs: 400 };
  await refuseOutcomes(true);
  const now = new Date().toISOString();
  const ids = await server.ctx.db.transaction().execute(async (trx) => {
    const written: number[] = [];
    for (const marker of ['lost', 'kept-1', 'kept-2'])
      written.push(
        await emitEvent(trx, {
          organizationId: merchant.organizationId,
          environment: 'production',
          type: 'webhook.test',
          subject: null,
          payload: { marker },
          now,
        }),
      );
    return written;
  });
  await receiver.waitFor(1, 10_000, marked('kept-2'));
  // The two later outcomes are written; the refused one is not.
  await waitUntil(
    async () =>
      (
        await server.ctx.db
          .selectFrom('webhook_deliveries')
          .select('id')
          .where('event_id', 'in', ids.slice(1))
          .execute()
      ).length === 2,
  );
  await refuseOutcomes(false);

  // Its claim's lease lapses (6 s), the event is claimed again and sent under the same webhook id.
  const lost = await receiver.waitFor(2, 20_000, marked('lost'));
  assert.equal(header(lost[1], 'webhook-id'), header(lost[0], 'webhook-id'));
  await waitUntil(async () => {
    const rows = await server.ctx.db
      .selectFrom('webhook_deliveries')
      .select(['status', 'attempt_count'])
      .where('event_id', '=', ids[0])
      .execute();
    return rows.length === 1 && rows[0].status === 'delivered' && rows[0].attempt_count === 1;
  });
  await waitUntil(
    async () => (await server.ctx.db.selectFrom('webhook_leases').select('id').execute()).length === 0,
  );
  // Each of the other two was sent once.
  for (const marker of ['kept-1', 'kept-2']) assert.equal(receiver.requests.filter(marked(marker)).length, 1);
});
