import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql, type Transaction } from 'kysely';
import type { Database } from '../src/db/database.ts';
import { newUuid, sha256Hex } from '../src/lib/ids.ts';
import { pruneExpiredRecords } from '../src/modules/retention/prune.ts';
import { insertDelivery, lockEventForDelivery } from '../src/modules/webhooks/store.ts';
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
  holdSqliteWriteLock,
  setEndpoint,
  waitUntil,
} from './webhooks-helpers.ts';

const DAY = 24 * 60 * 60 * 1000;
const ago = (ms: number) => new Date(Date.now() - ms).toISOString();

describe('retention: the worker deletes bookkeeping that has served its purpose, and nothing else', () => {
  let server: TestServer;
  let merchant: Merchant;
  before(async () => {
    server = await startTestServer({ worker: false });
    merchant = await createTestMerchant(server, 'Retention Shop');
  });
  after(() => server.close());

  async function event(createdAt: string, dispatched: boolean) {
    const row = await server.ctx.db
      .insertInto('events')
      .values({
        organization_id: merchant.organizationId,
        environment: 'sandbox',
        type: 'transaction.status_changed',
        subject: 'TX0000000000000000',
        payload: '{}',
        created_at: createdAt,
        dispatched_at: dispatched ? createdAt : null,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    return row.id;
  }

  async function delivery(
    eventId: number,
    createdAt: string,
    status: 'pending' | 'delivered' | 'failed',
    of?: number,
  ) {
    const row = await server.ctx.db
      .insertInto('webhook_deliveries')
      .values({
        delivery_id: newUuid(),
        organization_id: merchant.organizationId,
        event_id: eventId,
        event_type: 'transaction.status_changed',
        environment: 'sandbox',
        subject: 'TX0000000000000000',
        status,
        attempt_count: 1,
        next_attempt_at: createdAt,
        locked_by: null,
        locked_until: null,
        last_response_status: status === 'delivered' ? 200 : 500,
        last_error: null,
        redelivery_of: of ?? null,
        created_at: createdAt,
        updated_at: createdAt,
        delivered_at: status === 'delivered' ? createdAt : null,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    for (const attempt of [1, 2]) {
      await server.ctx.db
        .insertInto('webhook_attempts')
        .values({
          delivery_id: row.id,
          attempt,
          attempted_at: createdAt,
          url: 'https://merchant.example/hooks',
          response_status: 200,
          duration_ms: 5,
          error: null,
          response_body: 'ok',
        })
        .execute();
    }
    return row.id;
  }

  const exists = async (table: 'events' | 'webhook_deliveries', id: number) =>
    (await server.ctx.db.selectFrom(table).select('id').where('id', '=', id).executeTakeFirst()) !==
    undefined;
  const attemptsOf = async (deliveryId: number) =>
    (
      await server.ctx.db
        .selectFrom('webhook_attempts')
        .select('id')
        .where('delivery_id', '=', deliveryId)
        .execute()
    ).length;

  async function drain(ctx = server.ctx) {
    let total = 0;
    for (let pass = 0; pass < 20; pass++) {
      const deleted = await pruneExpiredRecords(ctx);
      if (deleted === 0) return total;
      total += deleted;
    }
    throw new Error('pruning did not settle');
  }

  test('finished deliveries and their events go after the retention period; pending, undispatched and recent ones stay', async () => {
    const old = ago(40 * DAY);
    const oldDelivered = await event(old, true);
    const oldDeliveredDelivery = await delivery(oldDelivered, old, 'delivered');
    const oldFailed = await event(old, true);
    const oldFailedDelivery = await delivery(oldFailed, old, 'failed');
    const recentRedelivery = await delivery(oldFailed, ago(DAY), 'delivered', oldFailedDelivery);
    const oldPending = await event(old, true);
    const oldPendingDelivery = await delivery(oldPending, old, 'pending');
    const oldUndispatched = await event(old, false);
    const oldWithoutDelivery = await event(old, true);
    const recent = await event(ago(29 * DAY), true);
    const recentDelivery = await delivery(recent, ago(29 * DAY), 'delivered');

    // Retention switched off: nothing of the webhook log goes.
    await drain({ ...server.ctx, config: { ...server.ctx.config, retentionDays: 0 } });
    assert.ok(await exists('webhook_deliveries', oldDeliveredDelivery));
    assert.ok(await exists('events', oldWithoutDelivery));

    assert.ok((await drain()) >= 4);
    assert.equal(await exists('webhook_deliveries', oldDeliveredDelivery), false);
    assert.equal(await attemptsOf(oldDeliveredDelivery), 0, 'attempts go with their delivery');
    assert.equal(await exists('events', oldDelivered), false);
    assert.equal(await exists('webhook_deliveries', oldFailedDelivery), false);
    assert.equal(await exists('events', oldWithoutDelivery), false);

    assert.ok(await exists('events', oldFailed), 'an event a recent redelivery refers to stays');
    assert.ok(await exists('webhook_deliveries', recentRedelivery));
    assert.equal(await attemptsOf(recentRedelivery), 2);
    assert.ok(await exists('webhook_deliveries', oldPendingDelivery), 'a pending delivery is never deleted');
    assert.ok(await exists('events', oldPending));
    assert.ok(await exists('events', oldUndispatched), 'an undispatched event is never deleted');
    assert.ok(await exists('events', recent));
    assert.ok(await exists('webhook_deliveries', recentDelivery));
    assert.equal(await drain(), 0, 'a second pass finds nothing');

    if (DB_KIND === 'postgres') {
      // The feed's order (migration 027) has a row per event, deleted with its event.
      const feedRows = await sql<{ event_id: string; orphan: boolean }>`
        select event_id, not exists (select 1 from events where events.id = event_feed.event_id) as orphan
        from event_feed where organization_id = ${merchant.organizationId}`.execute(server.ctx.db);
      const inFeed = new Set(feedRows.rows.map((row) => Number(row.event_id)));
      for (const gone of [oldDelivered, oldWithoutDelivery])
        assert.equal(inFeed.has(gone), false, `the feed row of deleted event ${gone} is gone with it`);
      for (const kept of [oldFailed, oldPending, oldUndispatched, recent])
        assert.ok(inFeed.has(kept), `kept event ${kept} keeps its feed row`);
      assert.deepEqual(
        feedRows.rows.filter((row) => row.orphan),
        [],
        'no event_feed row is left without its event',
      );
    }
  });

  const deliveriesOfEvent = async (eventId: number) =>
    (
      await server.ctx.db
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('event_id', '=', eventId)
        .execute()
    ).length;
  const redeliveriesAudited = async () =>
    (
      await server.ctx.db
        .selectFrom('audit_log')
        .select('id')
        .where('organization_id', '=', merchant.organizationId)
        .where('action', '=', 'webhook.redelivered')
        .execute()
    ).length;
  const deliveryUuid = async (id: number) =>
    (
      await server.ctx.db
        .selectFrom('webhook_deliveries')
        .select('delivery_id')
        .where('id', '=', id)
        .executeTakeFirstOrThrow()
    ).delivery_id;
  const redeliver = (id: string) =>
    call<{ detail?: string }>(server, 'POST', `/api/organization/webhook/deliveries/${id}/redeliver/`, {
      token: merchant.token,
    });

  /** An old failed delivery of an old event, to redeliver to a configured endpoint. */
  async function redeliverable() {
    await setEndpoint(server, merchant, 'https://merchant.example/hooks');
    const old = ago(40 * DAY);
    const gone = await event(old, true);
    const original = await delivery(gone, old, 'failed');
    return { gone, original, id: await deliveryUuid(original) };
  }

  /**
   * A transaction of another connection (as another worker's or API process's would be): `first` runs in
   * it, then it stays open, holding what `first` locked, until commit() runs `last` and commits.
   */
  async function hold(
    first: (trx: Transaction<Database>) => Promise<unknown>,
    last: (trx: Transaction<Database>) => Promise<unknown> = async () => {},
  ) {
    const opened = Promise.withResolvers<number>();
    const released = Promise.withResolvers<void>();
    const committed = server.ctx.db.transaction().execute(async (trx) => {
      const backend = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
      await first(trx);
      opened.resolve(backend.rows[0].pid);
      await released.promise;
      await last(trx);
    });
    committed.catch(opened.reject);
    const pid = await opened.promise;
    return {
      /** Whether another backend is waiting for a lock this transaction holds. */
      async blocks() {
        const row = await sql<{ waiting: boolean }>`select exists (
            select 1 from pg_stat_activity where ${pid}::int = any(pg_blocking_pids(pid))
          ) as waiting`.execute(server.ctx.db);
        return row.rows[0].waiting;
      },
      async commit() {
        released.resolve();
        await committed;
      },
    };
  }

  test('a redelivery of a delivery whose event is gone answers 409 and writes nothing', async () => {
    const { gone, id } = await redeliverable();
    // A delivery that outlived its event (retention never does this: an operator's hand edit, an old
    // process during an upgrade). It exists, GET shows it, but there is nothing to send again.
    await deleteEventUnderItsDeliveries(server, gone);
    const audited = await redeliveriesAudited();

    const answer = await redeliver(id);
    assert.equal(answer.status, 409, answer.text);
    assert.equal(
      answer.body.detail,
      'The event of this delivery no longer exists, so it cannot be redelivered.',
    );
    assert.equal(await deliveriesOfEvent(gone), 1, 'no delivery of the deleted event was written');
    assert.equal(await redeliveriesAudited(), audited, 'nor audited');
  });

  test('SQLite: a redelivery whose delivery and event retention deletes while it waits for the write lock answers 404', {
    skip: DB_KIND !== 'sqlite' && 'the write lock of SQLite (PostgreSQL: the test below)',
  }, async () => {
    const { gone, original, id } = await redeliverable();
    const audited = await redeliveriesAudited();
    // Retention on another connection (another process's): it holds the write lock, so the redelivery
    // reads the delivery and then waits to begin its transaction (synchronously: node:sqlite's busy
    // handler blocks this thread, hence a thread of its own for retention) while retention deletes the
    // delivery and then its event and commits.
    const retention = holdSqliteWriteLock(server, [
      `delete from webhook_attempts where delivery_id = ${original}`,
      `delete from webhook_deliveries where id = ${original}`,
      `delete from events where id = ${gone}`,
    ]);
    await retention.held;
    const answer = await redeliver(id);
    await retention.done;
    assert.equal(answer.status, 404, answer.text);
    assert.equal(answer.body.detail, 'Delivery not found.');
    assert.equal(await deliveriesOfEvent(gone), 0, 'no delivery of the deleted event was written');
    assert.equal(await redeliveriesAudited(), audited, 'nor audited');
  });

  test('the delivery → event foreign key: dropped on PostgreSQL (migration 025), kept on SQLite', async () => {
    if (DB_KIND === 'postgres') {
      const keys = await sql<{ conname: string }>`select conname from pg_constraint
          where conrelid = 'webhook_deliveries'::regclass and contype = 'f'`.execute(server.ctx.db);
      assert.deepEqual(keys.rows, [], 'no foreign key left on webhook_deliveries');
      return;
    }
    await assert.rejects(delivery(2 ** 40, ago(DAY), 'delivered'), /FOREIGN KEY constraint failed/);
  });

  test('PostgreSQL: a redelivery waiting for retention to delete its event answers 404 once it has', {
    skip: DB_KIND !== 'postgres' && 'locks of PostgreSQL',
  }, async () => {
    const { gone, original, id } = await redeliverable();
    const audited = await redeliveriesAudited();
    // Retention's transaction, between its delete of the event and its commit.
    const retention = await hold(async (trx) => {
      await trx.deleteFrom('webhook_attempts').where('delivery_id', '=', original).execute();
      await trx.deleteFrom('webhook_deliveries').where('id', '=', original).execute();
      await trx.deleteFrom('events').where('id', '=', gone).execute();
    });
    let answered = false;
    const answer = redeliver(id).finally(() => {
      answered = true;
    });
    try {
      // The redelivery has read the original delivery (retention has not committed) and waits on the event.
      await waitUntil(async () => answered || (await retention.blocks()), 10_000, 'the redelivery to wait');
    } finally {
      await retention.commit();
    }
    const response = await answer;
    assert.equal(response.status, 404, response.text);
    assert.equal(response.body.detail, 'Delivery not found.');
    assert.equal(await deliveriesOfEvent(gone), 0, 'no delivery of the deleted event was written');
    assert.equal(await redeliveriesAudited(), audited);
  });

  test("PostgreSQL: retention skips an event a redelivery holds, and keeps it once the redelivery's delivery is committed", {
    skip: DB_KIND !== 'postgres' && 'locks of PostgreSQL',
  }, async () => {
    const old = ago(40 * DAY);
    const held = await event(old, true);
    const free = await event(old, true);
    // A redelivery's transaction: the event locked as it locks it, then its delivery inserted and committed.
    const redelivery = await hold(
      async (trx) => assert.ok(await lockEventForDelivery(trx, merchant.organizationId, held)),
      (trx) =>
        insertDelivery(trx, {
          deliveryId: newUuid(),
          organizationId: merchant.organizationId,
          eventId: held,
          eventType: 'transaction.status_changed',
          environment: 'sandbox',
          subject: 'TX0000000000000000',
          redeliveryOf: null,
          now: new Date().toISOString(),
        }),
    );
    let pass: number | 'waited';
    try {
      pass = await Promise.race([
        drain(),
        new Promise<'waited'>((resolve) => setTimeout(() => resolve('waited'), 5_000).unref()),
      ]);
    } finally {
      await redelivery.commit();
    }
    assert.notEqual(pass, 'waited', 'retention did not wait for the redelivery');
    assert.ok(await exists('events', held), 'the held event is skipped');
    assert.equal(await exists('events', free), false, 'the rest of the batch is deleted');
    await drain();
    assert.ok(await exists('events', held), 'an event a committed redelivery refers to stays');
    assert.equal(await deliveriesOfEvent(held), 1);
  });

  test('expired and revoked sessions and expired verification codes go a day later; live ones stay', async () => {
    const user = await server.ctx.db
      .selectFrom('users')
      .select('id')
      .where('organization_id', '=', merchant.organizationId)
      .executeTakeFirstOrThrow();
    const session = (expiresAt: string, revokedAt: string | null) =>
      server.ctx.db
        .insertInto('sessions')
        .values({
          token_hash: sha256Hex(newUuid()),
          user_id: user.id,
          organization_id: merchant.organizationId,
          created_at: ago(8 * DAY),
          last_seen_at: ago(2 * DAY),
          expires_at: expiresAt,
          revoked_at: revokedAt,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
    const expired = await session(ago(2 * DAY), null);
    const revoked = await session(new Date(Date.now() + DAY).toISOString(), ago(2 * DAY));
    const justExpired = await session(ago(60_000), null);
    const code = (expiresAt: string) =>
      server.ctx.db
        .insertInto('refund_verification_codes')
        .values({
          organization_id: merchant.organizationId,
          user_id: user.id,
          code_hash: 'x',
          attempts: 0,
          expires_at: expiresAt,
          used_at: null,
          created_at: ago(3 * DAY),
        })
        .returning('id')
        .executeTakeFirstOrThrow();
    const oldCode = await code(ago(2 * DAY));
    const liveCode = await code(new Date(Date.now() + 60_000).toISOString());

    await drain();
    const sessionIds = (await server.ctx.db.selectFrom('sessions').select('id').execute()).map(
      (row) => row.id,
    );
    assert.equal(sessionIds.includes(expired.id), false);
    assert.equal(sessionIds.includes(revoked.id), false);
    assert.ok(sessionIds.includes(justExpired.id), 'kept for a day after it expired');
    const codeIds = (await server.ctx.db.selectFrom('refund_verification_codes').select('id').execute()).map(
      (row) => row.id,
    );
    assert.equal(codeIds.includes(oldCode.id), false);
    assert.ok(codeIds.includes(liveCode.id));
    const me = await call(server, 'GET', '/api/auth/me/', { token: merchant.token });
    assert.equal(me.status, 200, 'the live dashboard session still works');
  });

  test('failed-password counts go once their window has ended (15 minutes); counts of the current window stay', async () => {
    const wrong = await call(server, 'POST', '/api/auth/login/', {
      body: { email: merchant.email, password: 'not the password' },
    });
    assert.equal(wrong.status, 401);
    const current = await server.ctx.db.selectFrom('login_failures').select('key_hash').execute();
    assert.equal(current.length, 3, 'the account from this address, the account, the address');
    const window = server.ctx.config.rateLimits.loginWindowMs;
    // More than one batch of ended windows, and one that ends in a minute.
    await server.ctx.db
      .insertInto('login_failures')
      .values(
        Array.from({ length: 600 }, (_, i) => ({
          key_hash: `ended-${i}`,
          scope: 'address' as const,
          failures: 3,
          window_started_at: ago(window + 1000 + i),
        })),
      )
      .execute();
    await server.ctx.db
      .insertInto('login_failures')
      .values({ key_hash: 'ending', scope: 'account', failures: 1, window_started_at: ago(window - 60_000) })
      .execute();
    await drain();
    const left = (await server.ctx.db.selectFrom('login_failures').select('key_hash').execute()).map(
      (row) => row.key_hash,
    );
    assert.deepEqual(left.sort(), [...current.map((row) => row.key_hash), 'ending'].sort());
  });

  test("handled provider events (Stripe's ids) go 30 days after they were handled; unhandled ones stay", async () => {
    const event = (id: string, processedAt: string | null) =>
      server.ctx.db
        .insertInto('provider_events')
        .values({
          provider: 'stripe',
          event_id: id,
          type: 'payment_intent.succeeded',
          received_at: ago(40 * DAY),
          processed_at: processedAt,
        })
        .execute();
    await event('evt_old', ago(31 * DAY));
    await event('evt_recent', ago(29 * DAY));
    await event('evt_unhandled', null);
    await drain();
    const left = (
      await server.ctx.db.selectFrom('provider_events').select('event_id').orderBy('event_id').execute()
    ).map((row) => row.event_id);
    assert.deepEqual(left, ['evt_recent', 'evt_unhandled']);
  });
});
