// The outbox's NOTIFY on PostgreSQL comes from a trigger on `events` (migration 017): it reaches a
// listener of the channel the running process names, also when that name is cut to PostgreSQL's 63
// characters (a long schema name), and also when the trigger's function was written by a process that
// named the channel otherwise (the function is written again at every start). SQLite has no NOTIFY.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import { openAndMigrate } from '../src/db/connection.ts';
import { listenForOutbox } from '../src/db/listen.ts';
import { writeOutboxNotify } from '../src/db/migrations/017-event-notify-trigger.ts';
import { outboxChannel } from '../src/db/outbox-signal.ts';
import { emitEvent } from '../src/modules/events/emit.ts';
import { PG_URL } from './helpers/server.ts';

describe('the outbox NOTIFY (PostgreSQL)', { skip: PG_URL ? false : 'PostgreSQL only' }, () => {
  const url = PG_URL ?? '';
  // 63 characters, the longest KASSA_DB_SCHEMA allows: its channel is cut to 63 as well.
  const schema = `kassa_notify_${randomBytes(4).toString('hex')}_`.padEnd(63, 'x');
  after(async () => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(`drop schema if exists ${schema} cascade`);
    await client.end();
  });

  /** Opens the schema (migrating it), listens, commits one event; resolves whether a NOTIFY arrived. */
  async function eventWakesListener(): Promise<boolean> {
    const handle = await openAndMigrate({
      kind: 'postgres',
      url,
      schema,
      poolSize: 2,
      namedStatements: false,
    });
    let heard = 0;
    const ready = Promise.withResolvers<void>();
    // The listener calls back once when it has connected (commits may have gone unheard), then per NOTIFY.
    const listener = listenForOutbox({ url, schema }, () => {
      heard++;
      if (heard === 1) ready.resolve();
    });
    try {
      await ready.promise;
      const now = new Date().toISOString();
      const organization = await handle.db
        .insertInto('organizations')
        .values({
          name: 'Notify',
          slug: `n-${randomBytes(4).toString('hex')}`,
          created_at: now,
          updated_at: now,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      const before = heard;
      await handle.db.transaction().execute((trx) =>
        emitEvent(trx, {
          organizationId: organization.id,
          environment: 'production',
          type: 'webhook.test',
          subject: null,
          payload: { message: 'notify' },
          now: new Date().toISOString(),
        }),
      );
      const deadline = Date.now() + 2000;
      while (heard === before && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 20));
      return heard > before;
    } finally {
      await listener.close();
      await handle.close();
    }
  }

  test('a committed event NOTIFYs the channel of a 63-character schema, cut to 63 characters', async () => {
    assert.equal(outboxChannel(schema).length, 63);
    assert.ok(await eventWakesListener());
  });

  test('a trigger function written with another channel is written again at the next start', async () => {
    const handle = await openAndMigrate({
      kind: 'postgres',
      url,
      schema,
      poolSize: 1,
      namedStatements: false,
    });
    await writeOutboxNotify(handle.db, 'kassa_events_elsewhere');
    await handle.close();
    // The next process to open the schema writes the function with its own channel again.
    assert.ok(await eventWakesListener());
  });
});
