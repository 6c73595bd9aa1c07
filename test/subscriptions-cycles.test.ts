// The database's half of "exactly once" for subscriptions, on SQLite and PostgreSQL: one cycle per
// (subscription, period) whoever inserts it, one claimer per due cycle, and the CHECKs on plans,
// subscriptions and cycles.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isUniqueViolation } from '../src/db/errors.ts';
import { newPublicId } from '../src/lib/ids.ts';
import { claimDueCycles, createCycle } from '../src/modules/subscriptions/store.ts';
import { createTestMerchant, type Merchant, startTestServer, type TestServer } from './helpers/server.ts';

const NOW = '2027-03-01T00:00:00.000Z';

describe('subscription cycles in the database', () => {
  let server: TestServer;
  let merchant: Merchant;
  let planId: number;

  before(async () => {
    server = await startTestServer({ worker: false });
    merchant = await createTestMerchant(server);
    planId = (
      await server.ctx.db
        .insertInto('subscription_plans')
        .values(plan(merchant.organizationId))
        .returning('id')
        .executeTakeFirstOrThrow()
    ).id;
  });
  after(() => server.close());

  function plan(organizationId: number) {
    return {
      public_id: newPublicId('plan'),
      organization_id: organizationId,
      environment: 'sandbox' as const,
      name: 'Pro',
      amount: 1500,
      currency: 'EUR' as const,
      interval: 'month' as const,
      interval_count: 1,
      trial_days: 14,
      created_at: NOW,
      updated_at: NOW,
    };
  }

  async function subscription(): Promise<number> {
    const row = await server.ctx.db
      .insertInto('subscriptions')
      .values({
        public_id: newPublicId('subscription'),
        organization_id: merchant.organizationId,
        environment: 'sandbox',
        plan_id: planId,
        status: 'active',
        customer_email: 'ada@example.test',
        customer_name: 'Ada',
        provider: 'simulator',
        provider_customer_id: 'cus_1',
        payment_method_id: 'pm_1',
        card_brand: 'visa',
        card_last4: '4242',
        card_exp_month: 12,
        card_exp_year: 2030,
        anchor_at: '2027-01-31T00:00:00.000Z',
        created_at: NOW,
        updated_at: NOW,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    return row.id;
  }

  function cycle(subscriptionId: number, periodIndex: number, extra: Record<string, unknown> = {}) {
    return {
      subscription_id: subscriptionId,
      organization_id: merchant.organizationId,
      environment: 'sandbox' as const,
      period_index: periodIndex,
      period_start: '2027-02-28T00:00:00.000Z',
      period_end: '2027-03-31T00:00:00.000Z',
      amount: 1500,
      currency: 'EUR' as const,
      status: 'processing' as const,
      next_attempt_at: '2027-02-28T00:00:00.000Z',
      created_at: NOW,
      updated_at: NOW,
      ...extra,
    };
  }

  test('two concurrent inserts of the same (subscription, period) cycle: one row, the other refused by the unique index', async () => {
    const id = await subscription();
    const insertInItsTransaction = () =>
      server.ctx.db.transaction().execute(async (trx) => {
        await trx.selectFrom('subscriptions').select('id').where('id', '=', id).execute();
        return trx
          .insertInto('subscription_cycles')
          .values(cycle(id, 1))
          .returning('id')
          .executeTakeFirstOrThrow();
      });
    const results = await Promise.allSettled([insertInItsTransaction(), insertInItsTransaction()]);
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
    const refused = results.find((r) => r.status === 'rejected');
    assert.ok(refused && isUniqueViolation(refused.reason), String(refused && refused.reason));
    const rows = await server.ctx.db
      .selectFrom('subscription_cycles')
      .select('id')
      .where('subscription_id', '=', id)
      .where('period_index', '=', 1)
      .execute();
    assert.equal(rows.length, 1);
    // Through the store, the loser gets null rather than an error; another period is a new row.
    assert.equal(await createCycle(server.ctx.db, cycle(id, 1)), null);
    assert.equal((await createCycle(server.ctx.db, cycle(id, 2)))?.period_index, 2);
  });

  test('eight concurrent store inserts of the same period: exactly one cycle', async () => {
    const id = await subscription();
    const made = await Promise.all(
      Array.from({ length: 8 }, () =>
        server.ctx.db.transaction().execute((trx) => createCycle(trx, cycle(id, 0))),
      ),
    );
    assert.equal(made.filter((row) => row !== null).length, 1);
  });

  test('a due cycle claimed by two claimers at once is leased to exactly one', async () => {
    const id = await subscription();
    const made = await createCycle(server.ctx.db, cycle(id, 3));
    assert.ok(made);
    const claim = (workerId: string) =>
      server.ctx.db
        .transaction()
        .execute((trx) =>
          claimDueCycles(trx, { workerId, now: NOW, leaseNow: NOW, until: '2027-03-01T00:05:00.000Z' }, 10),
        );
    const [a, b] = await Promise.all([claim('worker-a'), claim('worker-b')]);
    const winners = [...a, ...b].filter((row) => row.id === made.id);
    assert.equal(winners.length, 1);
    const row = await server.ctx.db
      .selectFrom('subscription_cycles')
      .select(['leased_by', 'lease_until'])
      .where('id', '=', made.id)
      .executeTakeFirstOrThrow();
    assert.equal(row.leased_by, winners[0].leased_by);
    assert.equal(row.lease_until, '2027-03-01T00:05:00.000Z');
    // While the lease holds nobody else gets it; once it has run out, another worker may take it over.
    assert.deepEqual(
      (
        await claimDueCycles(
          server.ctx.db,
          {
            workerId: 'c',
            now: '2027-03-01T00:04:59.999Z',
            leaseNow: '2027-03-01T00:04:59.999Z',
            until: '2027-03-01T00:10:00.000Z',
          },
          10,
        )
      )
        .map((r) => r.id)
        .filter((r) => r === made.id),
      [],
    );
    const later = await claimDueCycles(
      server.ctx.db,
      {
        workerId: 'c',
        now: '2027-03-01T00:05:00.000Z',
        leaseNow: '2027-03-01T00:05:00.000Z',
        until: '2027-03-01T00:10:00.000Z',
      },
      10,
    );
    assert.deepEqual(
      later.filter((r) => r.id === made.id).map((r) => r.leased_by),
      ['c'],
    );
  });

  test('four concurrent claimers over twenty due cycles: each cycle leased exactly once; cycles not due or over are left', async () => {
    const id = await subscription();
    const ids: number[] = [];
    for (let k = 10; k < 30; k += 1) {
      const row = await createCycle(
        server.ctx.db,
        cycle(id, k, { status: k % 2 === 0 ? 'processing' : 'retrying' }),
      );
      assert.ok(row);
      ids.push(row.id);
    }
    await createCycle(server.ctx.db, cycle(id, 30, { next_attempt_at: '2027-03-02T00:00:00.000Z' }));
    await createCycle(server.ctx.db, cycle(id, 31, { status: 'paid', next_attempt_at: null }));
    await createCycle(server.ctx.db, cycle(id, 32, { status: 'uncollectible' }));
    const lease = (workerId: string) => ({
      workerId,
      now: '2027-03-01T01:00:00.000Z',
      leaseNow: '2027-03-01T01:00:00.000Z',
      until: '2027-03-01T01:05:00.000Z',
    });
    const claims = await Promise.all(
      ['w1', 'w2', 'w3', 'w4'].map((w) =>
        server.ctx.db.transaction().execute((trx) => claimDueCycles(trx, lease(w), 8)),
      ),
    );
    const claimed = claims
      .flat()
      .filter((row) => row.subscription_id === id)
      .map((row) => row.id);
    assert.equal(new Set(claimed).size, claimed.length);
    // Up to 4 × 8 claims: every due cycle of this subscription is leased once (others' cycles may share the batch).
    const leased = await server.ctx.db
      .selectFrom('subscription_cycles')
      .select(['id', 'period_index', 'leased_by'])
      .where('subscription_id', '=', id)
      .where('leased_by', 'is not', null)
      .execute();
    assert.deepEqual(
      leased.map((r) => r.id).sort((x, y) => x - y),
      [...claimed].sort((x, y) => x - y),
    );
    assert.ok(leased.every((r) => r.period_index < 30));
  });

  test('the CHECKs refuse a zero amount, interval_count 13, trial_days 91, an unknown status, a half lease', async () => {
    const id = await subscription();
    const refuses = (promise: Promise<unknown>) => assert.rejects(promise);
    await refuses(
      server.ctx.db
        .insertInto('subscription_plans')
        .values({ ...plan(merchant.organizationId), amount: 0 })
        .execute(),
    );
    await refuses(
      server.ctx.db
        .insertInto('subscription_plans')
        .values({ ...plan(merchant.organizationId), interval_count: 13 })
        .execute(),
    );
    await refuses(
      server.ctx.db
        .insertInto('subscription_plans')
        .values({ ...plan(merchant.organizationId), interval_count: 0 })
        .execute(),
    );
    await refuses(
      server.ctx.db
        .insertInto('subscription_plans')
        .values({ ...plan(merchant.organizationId), trial_days: 91 })
        .execute(),
    );
    await refuses(
      server.ctx.db
        .insertInto('subscription_plans')
        .values({ ...plan(merchant.organizationId), interval: 'hour' as 'day' })
        .execute(),
    );
    await refuses(
      server.ctx.db
        .insertInto('subscription_cycles')
        .values(cycle(id, 40, { amount: 0 }))
        .execute(),
    );
    await refuses(
      server.ctx.db
        .insertInto('subscription_cycles')
        .values(cycle(id, 41, { status: 'pending' }))
        .execute(),
    );
    await refuses(
      server.ctx.db
        .insertInto('subscription_cycles')
        .values(cycle(id, 42, { leased_by: 'w' }))
        .execute(),
    );
    await refuses(server.ctx.db.insertInto('subscription_cycles').values(cycle(id, -1)).execute());
    await refuses(
      server.ctx.db
        .insertInto('subscription_cycles')
        .values(cycle(id, 43, { attempts: 6 }))
        .execute(),
    );
    // A canceled subscription says when and why.
    await refuses(
      server.ctx.db.updateTable('subscriptions').set({ status: 'canceled' }).where('id', '=', id).execute(),
    );
    await server.ctx.db
      .updateTable('subscriptions')
      .set({ status: 'canceled', canceled_at: NOW, cancel_reason: 'payment_failed' })
      .where('id', '=', id)
      .execute();
    // The edges of the ranges are accepted.
    await server.ctx.db
      .insertInto('subscription_plans')
      .values({ ...plan(merchant.organizationId), interval_count: 12, trial_days: 90, amount: 1 })
      .execute();
    await server.ctx.db
      .insertInto('subscription_plans')
      .values({ ...plan(merchant.organizationId), interval: 'year', interval_count: 1, trial_days: 0 })
      .execute();
  });
});
