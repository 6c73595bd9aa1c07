// The outbox's NOTIFY on PostgreSQL comes from triggers (migration 017), on the channel named after the
// schema the tables are in: it reaches a listener however that listener names the schema (its own
// KASSA_DB_SCHEMA, or only a search_path in its URL), also for a schema whose channel would be too long
// for PostgreSQL (named by the schema's MD5 then); a delivery inserted to be sent NOTIFYs, the worker's
// record of an attempt does not. SQLite has no NOTIFY (its workers watch the write-ahead log).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { type DbHandle, openAndMigrate } from '../src/db/connection.ts';
import { listenForOutbox, type OutboxListener } from '../src/db/listen.ts';
import { outboxChannel } from '../src/db/outbox-signal.ts';
import { emitEvent } from '../src/modules/events/emit.ts';
import { insertDelivery } from '../src/modules/webhooks/store.ts';
import { PG_URL } from './helpers/server.ts';

const url = PG_URL ?? '';
// 63 characters, the longest KASSA_DB_SCHEMA allows: `kassa_events_` and it are 76 bytes.
const schema = `kassa_notify_${randomBytes(4).toString('hex')}_`.padEnd(63, 'x');

describe('the outbox NOTIFY (PostgreSQL)', { skip: PG_URL ? false : 'PostgreSQL only' }, () => {
  let handle: DbHandle;
  let organizationId: number;
  before(async () => {
    handle = await openAndMigrate({ kind: 'postgres', url, schema, poolSize: 2, namedStatements: false });
    const now = new Date().toISOString();
    organizationId = (
      await handle.db
        .insertInto('organizations')
        .values({
          name: 'Notify',
          slug: `n-${randomBytes(4).toString('hex')}`,
          created_at: now,
          updated_at: now,
        })
        .returning('id')
        .executeTakeFirstOrThrow()
    ).id;
  });
  after(async () => {
    await handle?.close();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(`drop schema if exists ${schema} cascade`);
    await client.end();
  });

  /** A listener and what the NOTIFYs it heard said was written, once it is listening. */
  async function listen(database: { url: string; schema: string | null }) {
    const heard = { count: 0, wrote: [] as string[] };
    const ready = Promise.withResolvers<void>();
    // The listener calls back once when it is listening (commits may have gone unheard), then per NOTIFY.
    const listener: OutboxListener = listenForOutbox(database, (wrote) => {
      heard.count++;
      heard.wrote.push(wrote);
      ready.resolve();
    });
    const timer = setTimeout(
      () => ready.reject(new Error('the listener did not connect within 10 s')),
      10_000,
    );
    try {
      await ready.promise;
    } catch (error) {
      await listener.close();
      throw error;
    } finally {
      clearTimeout(timer);
    }
    assert.deepEqual(heard.wrote, ['unknown'], 'a (re)connection is announced as not known');
    heard.count = 0;
    heard.wrote = [];
    return { heard, listener };
  }

  async function heardWithin(heard: { count: number }, ms: number): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (heard.count === 0 && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 20));
    return heard.count > 0;
  }

  function commitEvent() {
    return handle.db.transaction().execute((trx) =>
      emitEvent(trx, {
        organizationId,
        environment: 'production',
        type: 'webhook.test',
        subject: null,
        payload: { message: 'notify' },
        now: new Date().toISOString(),
      }),
    );
  }

  test("a committed event NOTIFYs the schema's channel, named by the schema's MD5 when too long", async () => {
    assert.match(outboxChannel(schema), /^kassa_events_[0-9a-f]{32}$/);
    assert.equal(outboxChannel('shop'), 'kassa_events_shop');
    const { heard, listener } = await listen({ url, schema });
    try {
      await commitEvent();
      assert.ok(await heardWithin(heard, 2000), 'no NOTIFY for the event');
      assert.deepEqual(heard.wrote, ['events']);
    } finally {
      await listener.close();
    }
  });

  test('a listener that names the schema only by the search_path of its URL hears it too', async () => {
    const viaSearchPath = new URL(url);
    viaSearchPath.searchParams.set('options', `-c search_path=${schema}`);
    const { heard, listener } = await listen({ url: viaSearchPath.toString(), schema: null });
    try {
      await commitEvent();
      assert.ok(await heardWithin(heard, 2000), 'no NOTIFY for the event');
    } finally {
      await listener.close();
    }
  });

  test('a rolled back event NOTIFYs nothing; a redelivery to send does, a recorded attempt does not', async () => {
    const { heard, listener } = await listen({ url, schema });
    try {
      const eventId = await commitEvent();
      assert.ok(await heardWithin(heard, 2000));
      heard.count = 0;
      heard.wrote = [];
      await assert.rejects(
        handle.db.transaction().execute(async (trx) => {
          await emitEvent(trx, {
            organizationId,
            environment: 'production',
            type: 'webhook.test',
            subject: null,
            payload: { message: 'rolled back' },
            now: new Date().toISOString(),
          });
          throw new Error('roll back');
        }),
        /roll back/,
      );
      const now = new Date().toISOString();
      // The worker's record of a first attempt: a row with attempt_count 1.
      const recorded = await handle.db
        .insertInto('webhook_deliveries')
        .values({
          delivery_id: randomBytes(16).toString('hex'),
          organization_id: organizationId,
          event_id: eventId,
          event_type: 'webhook.test',
          environment: 'production',
          subject: null,
          status: 'delivered',
          attempt_count: 1,
          next_attempt_at: now,
          redelivery_of: null,
          created_at: now,
          updated_at: now,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      assert.equal(await heardWithin(heard, 500), false, 'a NOTIFY for a rollback or a recorded attempt');
      await insertDelivery(handle.db, {
        deliveryId: randomBytes(16).toString('hex'),
        organizationId,
        eventId,
        eventType: 'webhook.test',
        environment: 'production',
        subject: null,
        redeliveryOf: recorded.id,
        now,
      });
      assert.ok(await heardWithin(heard, 2000), 'no NOTIFY for the redelivery');
      // A worker must read its due deliveries for it (src/modules/webhooks/worker.ts).
      assert.deepEqual(heard.wrote, ['deliveries']);
    } finally {
      await listener.close();
    }
  });
});
