// Exactly once across processes (both databases): eight `kassa worker` processes against one database
// and 100 due subscriptions make exactly 100 provider charges, 100 payments and 100 ledger credits;
// and merchants canceling subscriptions while those workers renew them never get a charge made after
// the cancellation (a cancel either waits for the try in flight, 409, or the try sees it and stops).
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../src/config.ts';
import { type AppContext, createContext } from '../src/context.ts';
import { type DbHandle, openAndMigrate } from '../src/db/connection.ts';
import { ConflictError } from '../src/http/errors.ts';
import { OPERATOR } from '../src/modules/audit/record.ts';
import { cancelSubscription } from '../src/modules/subscriptions/manage.ts';
import { simulatorDb } from '../src/provider/simulator/store.ts';
import type { ProviderAttempt } from '../src/provider/types.ts';
import { DB_KIND, testEnv } from './helpers/server.ts';
import { seedMerchantWithPlan, subscribeWithSavedCard } from './helpers/subscriptions.ts';
import { eventually } from './helpers/wallet-fixtures.ts';

const NODE = join(import.meta.dirname, '..', 'node_modules', '.bin', 'node');
const WORKERS = 8;

describe(`renewals by ${WORKERS} worker processes (${DB_KIND})`, () => {
  let env: Record<string, string>;
  let cleanup: () => Promise<void>;
  let handle: DbHandle;
  let ctx: AppContext;
  let organizationId: number;
  let planPublicId: string;
  const workers: ChildProcess[] = [];

  before(async () => {
    ({ env, cleanup } = await testEnv({ KASSA_SYNC_INTERVAL_MS: '20', KASSA_DB_POOL_SIZE: '3' }));
    const config = loadConfig(env);
    handle = await openAndMigrate(config.database);
    ctx = createContext(config, handle);
    ({ organizationId, planPublicId } = await seedMerchantWithPlan(ctx, 'Many Workers', 1500));
  });
  after(async () => {
    for (const worker of workers) worker.kill('SIGKILL');
    await handle?.close();
    await cleanup?.();
  });

  function startWorkers() {
    for (let i = 0; i < WORKERS; i += 1) {
      const child = spawn(NODE, ['--disable-warning=ExperimentalWarning', 'src/cli/main.ts', 'worker'], {
        env: { ...process.env, ...env },
        stdio: ['ignore', 'ignore', 'ignore'],
      });
      workers.push(child);
    }
  }

  async function dueSubscriptions(count: number) {
    const subs = [];
    for (let i = 0; i < count; i += 1) {
      subs.push(
        await subscribeWithSavedCard(
          { ctx },
          {
            organizationId,
            planPublicId,
            cardNumber: '4242424242424242',
            anchorAt: new Date(Date.now() - 60_000).toISOString(),
          },
        ),
      );
    }
    return subs;
  }

  const charges = async (references: string[]) =>
    references.length === 0
      ? []
      : simulatorDb(handle.db)
          .selectFrom('sim_payments')
          .select(['reference', 'attempts'])
          .where('reference', 'in', references)
          .execute();

  test('100 due subscriptions: exactly 100 charges, 100 payments, 100 ledger credits', async () => {
    const subs = await dueSubscriptions(100);
    const ids = subs.map((sub) => sub.id);
    startWorkers();
    await eventually(async () => {
      const paid = await handle.db
        .selectFrom('subscription_cycles')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('subscription_id', 'in', ids)
        .where('status', '=', 'paid')
        .executeTakeFirstOrThrow();
      return Number(paid.n) === 100 ? true : undefined;
    }, 180_000);
    const payments = await handle.db
      .selectFrom('payments')
      .select(['id', 'public_id', 'status'])
      .where('subscription_id', 'in', ids)
      .execute();
    assert.equal(payments.length, 100);
    assert.ok(payments.every((payment) => payment.status === 'paid'));
    const made = await charges(payments.map((payment) => payment.public_id));
    assert.equal(made.length, 100);
    assert.deepEqual(
      [...new Set(made.map((charge) => (JSON.parse(charge.attempts) as unknown[]).length))],
      [1],
      'one charge per period',
    );
    const credits = await handle.db
      .selectFrom('wallet_movements')
      .select('reference_id')
      .where('kind', '=', 'settlement')
      .where(
        'reference_id',
        'in',
        payments.map((payment) => payment.id),
      )
      .execute();
    assert.equal(credits.length, 100);
    const cycles = await handle.db
      .selectFrom('subscription_cycles')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('subscription_id', 'in', ids)
      .executeTakeFirstOrThrow();
    assert.equal(Number(cycles.n), 100, 'one cycle per period');
  });

  test('cancel racing the renewals: no charge is ever made after canceled_at', async (t) => {
    const subs = await dueSubscriptions(40);
    const outcomes = await Promise.all(
      subs.map(async (sub) => {
        // Each merchant cancels at a slightly different moment of the workers' passes.
        await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 150)));
        for (;;) {
          try {
            await cancelSubscription(ctx, organizationId, sub.publicId, false, OPERATOR);
            return 'canceled';
          } catch (error) {
            // A try in flight: the merchant is asked to try again; a subscription charged meanwhile may still be canceled.
            if (!(error instanceof ConflictError) || /already canceled/.test(error.message)) throw error;
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
        }
      }),
    );
    assert.ok(outcomes.every((outcome) => outcome === 'canceled'));
    // Let any worker finish what it had started.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    let charged = 0;
    for (const sub of subs) {
      const row = await handle.db
        .selectFrom('subscriptions')
        .select(['status', 'canceled_at'])
        .where('id', '=', sub.id)
        .executeTakeFirstOrThrow();
      assert.equal(row.status, 'canceled');
      const payment = await handle.db
        .selectFrom('payments')
        .select(['public_id', 'status'])
        .where('subscription_id', '=', sub.id)
        .executeTakeFirst();
      if (!payment) continue;
      const [made] = await charges([payment.public_id]);
      const attempts = made ? (JSON.parse(made.attempts) as ProviderAttempt[]) : [];
      for (const attempt of attempts) {
        assert.ok(
          Date.parse(attempt.attemptedAt) <= Date.parse(row.canceled_at ?? ''),
          `${sub.publicId}: charged at ${attempt.attemptedAt}, after its cancellation at ${row.canceled_at}`,
        );
      }
      if (attempts.length > 0) charged += 1;
      else assert.equal(payment.status, 'canceled', 'a payment never charged is canceled with its period');
    }
    t.diagnostic(`${charged} of 40 were charged before their cancellation, ${40 - charged} never`);
  });
});
