// A renewal killed with SIGKILL at each step (KASSA_TEST_CRASH_AT, the real service as a child process
// running its worker), and a renewal whose answer is lost (KASSA_SIM_FAULT=timeout_after_success): after
// a restart and the reconciler's reads, exactly one charge at the provider for the period, one payment,
// one ledger credit, the cycle paid and the subscription active. Nothing is ever charged twice.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../src/config.ts';
import { type AppContext, createContext } from '../src/context.ts';
import { type DbHandle, openAndMigrate } from '../src/db/connection.ts';
import { operationsOf, settlementsOf, simAttempts } from './helpers/provider-checks.ts';
import { DB_KIND, freePort, testEnv } from './helpers/server.ts';
import { ServiceUnderTest } from './helpers/service-process.ts';
import { seedMerchantWithPlan, subscribeWithSavedCard } from './helpers/subscriptions.ts';
import { eventually } from './helpers/wallet-fixtures.ts';

describe(`SIGKILL during a renewal (${DB_KIND})`, () => {
  let env: Record<string, string>;
  let cleanup: () => Promise<void>;
  let url: string;
  let handle: DbHandle;
  let ctx: AppContext;
  let organizationId: number;
  let planPublicId: string;
  let running: ServiceUnderTest | null = null;

  before(async () => {
    const port = await freePort();
    ({ env, cleanup } = await testEnv({
      KASSA_PORT: String(port),
      KASSA_RECONCILE_SCHEDULE_MS: '300,600,1200,2400,4800',
      KASSA_SYNC_INTERVAL_MS: '50',
      KASSA_PROVIDER_TIMEOUT_MS: '2000',
    }));
    url = `http://127.0.0.1:${port}`;
    const config = loadConfig(env);
    handle = await openAndMigrate(config.database);
    ctx = createContext(config, handle);
    ({ organizationId, planPublicId } = await seedMerchantWithPlan(ctx, 'Renewal Crash', 2000));
  });
  after(async () => {
    await running?.kill();
    await handle?.close();
    await cleanup?.();
  });

  async function run(extra: Record<string, string>) {
    await running?.kill();
    running = new ServiceUnderTest({ ...env, ...extra }, url);
    await running.start();
  }

  async function dueSubscription() {
    return subscribeWithSavedCard(
      { ctx },
      {
        organizationId,
        planPublicId,
        cardNumber: '4242424242424242',
        anchorAt: new Date(Date.now() - 60_000).toISOString(),
      },
    );
  }

  async function cycleOf(subscriptionId: number) {
    return handle.db
      .selectFrom('subscription_cycles')
      .selectAll()
      .where('subscription_id', '=', subscriptionId)
      .executeTakeFirst();
  }

  /** Waits for the paid cycle, then checks that the period was charged exactly once, end to end. */
  async function assertChargedOnce(subscriptionId: number, tries: number) {
    const cycle = await eventually(async () => {
      const found = await cycleOf(subscriptionId);
      return found?.status === 'paid' ? found : undefined;
    }, 60_000);
    assert.equal(cycle.attempts, tries);
    const payments = await handle.db
      .selectFrom('payments')
      .selectAll()
      .where('subscription_id', '=', subscriptionId)
      .execute();
    assert.equal(payments.length, 1);
    assert.equal(payments[0].status, 'paid');
    const charges = await simAttempts({ db: handle.db }, payments[0].public_id);
    assert.equal(charges.length, 1, `one charge at the provider: ${JSON.stringify(charges)}`);
    assert.equal(charges[0].status, 'succeeded');
    assert.equal(await settlementsOf({ db: handle.db }, payments[0].id), 1);
    const subscription = await handle.db
      .selectFrom('subscriptions')
      .select(['status', 'next_renewal_at'])
      .where('id', '=', subscriptionId)
      .executeTakeFirstOrThrow();
    assert.equal(subscription.status, 'active');
    return { cycle, payment: payments[0], charges };
  }

  test('killed after the try row committed, before the provider heard of it: tried again under the next key, charged once', async () => {
    const sub = await dueSubscription();
    await run({ KASSA_TEST_CRASH_AT: 'operation-recorded' });
    await eventually(async () => (running?.child?.signalCode === 'SIGKILL' ? true : undefined), 60_000);
    const cycle = await cycleOf(sub.id);
    assert.ok(cycle);
    assert.equal(cycle.attempts, 1);
    assert.equal(cycle.next_attempt_at, null, 'the try is in flight: no worker may try it again');
    const [written] = await operationsOf({ db: handle.db }, 'subscription_cycle', cycle.id);
    assert.deepEqual([written.state, written.idempotency_key], ['in_flight', `kassa-renew-${cycle.id}-1`]);
    await run({});
    const { charges } = await assertChargedOnce(sub.id, 2);
    assert.equal(charges[0].idempotencyKey, `kassa-renew-${cycle.id}-2`);
    // The cycle is recorded paid before the try's operation is settled (a moment later, renew.ts):
    // wait for that too.
    const operations = await eventually(async () => {
      const found = await operationsOf({ db: handle.db }, 'subscription_cycle', cycle.id);
      return found.every((operation) => operation.outcome !== null) ? found : undefined;
    }, 30_000);
    assert.deepEqual(
      operations.map((operation) => [operation.idempotency_key, operation.outcome, operation.outcome_code]),
      [
        [`kassa-renew-${cycle.id}-1`, 'failed', 'never_reached_provider'],
        [`kassa-renew-${cycle.id}-2`, 'succeeded', null],
      ],
    );
  });

  test('killed after the provider charged, before Kassa recorded it: the reconciler finds the charge; never charged again', async () => {
    const sub = await dueSubscription();
    await run({ KASSA_TEST_CRASH_AT: 'provider-answered' });
    await eventually(async () => (running?.child?.signalCode === 'SIGKILL' ? true : undefined), 60_000);
    const cycle = await cycleOf(sub.id);
    assert.ok(cycle);
    assert.equal(cycle.status, 'processing');
    await run({});
    const { charges } = await assertChargedOnce(sub.id, 1);
    assert.equal(charges[0].idempotencyKey, `kassa-renew-${cycle.id}-1`);
  });

  test('an answer lost after the charge (a timeout) is reconciled, never charged again', async () => {
    const sub = await dueSubscription();
    await run({ KASSA_SIM_FAULT: 'timeout_after_success' });
    const { cycle } = await assertChargedOnce(sub.id, 1);
    // The reconciler records the cycle's outcome, then settles its row.
    const operation = await eventually(async () => {
      const [row] = await operationsOf({ db: handle.db }, 'subscription_cycle', cycle.id);
      return row.state === 'done' ? row : undefined;
    });
    assert.equal(operation.outcome, 'succeeded');
    assert.ok(Number(operation.reads) >= 1, 'settled by the reconciler, not by the call');
  });
});
