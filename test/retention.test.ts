import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { newUuid, sha256Hex } from '../src/lib/ids.ts';
import { pruneExpiredRecords } from '../src/modules/retention/prune.ts';
import {
  call,
  createTestMerchant,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';

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
        type: 'payment.paid',
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
        event_type: 'payment.paid',
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
