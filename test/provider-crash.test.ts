// Crashes around a provider call, with the real service as a child process killed by SIGKILL at the two
// points that matter (KASSA_TEST_CRASH_AT): after the attempt's write-ahead row committed and before the
// provider heard of it, and after the provider charged and before Kassa recorded it. After a restart and
// the reconciler's reads: exactly one charge at the provider, one ledger credit, one event per change.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../src/config.ts';
import { createContext } from '../src/context.ts';
import { type DbHandle, openAndMigrate } from '../src/db/connection.ts';
import { sha256Hex as sha256 } from '../src/lib/ids.ts';
import { createKey } from '../src/modules/api-keys/service.ts';
import { OPERATOR } from '../src/modules/audit/record.ts';
import { createMerchant } from '../src/modules/organizations/service.ts';
import { billing, card } from './helpers/checkout.ts';
import { eventStatuses, operationsOf, settlementsOf, simAttempts } from './helpers/provider-checks.ts';
import { DB_KIND, freePort, testEnv } from './helpers/server.ts';
import { ServiceUnderTest } from './helpers/service-process.ts';
import { assertLedgerBalanced, eventually } from './helpers/wallet-fixtures.ts';

type Json = Record<string, unknown>;

describe(`SIGKILL around a provider call (${DB_KIND})`, () => {
  let env: Record<string, string>;
  let cleanup: () => Promise<void>;
  let url: string;
  let handle: DbHandle;
  let apiKey: string;
  let organizationId: number;
  let running: ServiceUnderTest | null = null;

  before(async () => {
    const port = await freePort();
    ({ env, cleanup } = await testEnv({
      KASSA_PORT: String(port),
      KASSA_RECONCILE_SCHEDULE_MS: '300,600,1200,2400,4800',
    }));
    url = `http://127.0.0.1:${port}`;
    const config = loadConfig(env);
    handle = await openAndMigrate(config.database);
    const ctx = createContext(config, handle);
    const { organization } = await createMerchant(ctx, {
      organization: 'Crash Shop',
      email: `crash-${Date.now()}@acme.test`,
      password: 'correct horse battery',
    });
    organizationId = organization.id;
    apiKey = (
      await createKey(
        ctx,
        organization.id,
        { name: 'crash', allowed_scopes: '', environment: 'production' },
        OPERATOR,
        null,
      )
    ).raw_key;
  });
  after(async () => {
    await running?.kill();
    await handle?.close();
    await cleanup?.();
  });

  async function run(crashAt: string | null) {
    await running?.kill();
    running = new ServiceUnderTest(crashAt ? { ...env, KASSA_TEST_CRASH_AT: crashAt } : env, url);
    await running.start();
  }

  async function post(path: string, body: unknown, headers: Record<string, string> = {}) {
    const response = await fetch(url + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Json };
  }

  async function checkout() {
    const created = await post(
      '/api/checkout/create/',
      { products: [{ name: 'Widget', unit_price: 25, quantity: 2 }], ...billing() },
      { authorization: `Api-Key ${apiKey}` },
    );
    assert.equal(created.status, 201);
    return created.body.token as string;
  }

  /** The pay request whose process dies under it: no answer comes back. */
  async function payAndDie(token: string) {
    const lost = await post(`/api/checkout/${token}/pay/`, card()).then(
      () => 'answered',
      () => 'lost',
    );
    assert.equal(lost, 'lost');
    await eventually(async () => (running?.child?.signalCode === 'SIGKILL' ? true : undefined));
  }

  async function paymentOfToken(token: string) {
    return eventually(() =>
      handle.db
        .selectFrom('payments')
        .innerJoin('checkout_sessions', 'checkout_sessions.id', 'payments.checkout_session_id')
        .selectAll('payments')
        .where('checkout_sessions.token_hash', '=', sha256(token))
        .executeTakeFirst(),
    );
  }

  test('killed between the attempt row and the provider call: nothing was charged; the attempt is never-made and the customer pays once', async () => {
    await run('operation-recorded');
    const token = await checkout();
    await payAndDie(token);
    const payment = await paymentOfToken(token);
    const [written] = await operationsOf({ db: handle.db }, 'payment', payment.id);
    assert.deepEqual(
      [written.state, written.idempotency_key],
      ['in_flight', `kassa-pay-${payment.public_id}-1`],
    );
    assert.deepEqual(
      await simAttempts({ db: handle.db }, payment.public_id),
      [],
      'the provider never heard of it',
    );

    await run(null);
    // The reconciler reads it back twice (300 ms, 600 ms): the provider has no record of it.
    const settled = await eventually(async () => {
      const [row] = await operationsOf({ db: handle.db }, 'payment', payment.id);
      return row.state === 'done' ? row : undefined;
    });
    assert.deepEqual([settled.outcome, settled.outcome_code], ['failed', 'never_reached_provider']);
    const paid = await post(`/api/checkout/${token}/pay/`, card());
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    assert.equal(paid.body.payment_status, 'paid');
    const attempts = await simAttempts({ db: handle.db }, payment.public_id);
    assert.deepEqual(
      attempts.map((attempt) => [attempt.idempotencyKey, attempt.status]),
      [[`kassa-pay-${payment.public_id}-2`, 'succeeded']],
    );
    assert.equal(await settlementsOf({ db: handle.db }, payment.id), 1);
    assert.deepEqual(await eventStatuses({ db: handle.db }, payment.public_id), ['processing', 'paid']);
    await assertLedgerBalanced({ db: handle.db }, organizationId);
  });

  test("killed between the provider's success and the record: the reconciler finds the charge; never a second", async () => {
    await run('provider-answered');
    const token = await checkout();
    await payAndDie(token);
    const payment = await paymentOfToken(token);
    assert.equal(payment.status, 'processing');
    assert.equal(payment.provider_payment_id, null, 'Kassa never recorded the answer');
    const charged = await simAttempts({ db: handle.db }, payment.public_id);
    assert.deepEqual(
      charged.map((attempt) => attempt.status),
      ['succeeded'],
      'the provider charged',
    );

    await run(null);
    const after = await eventually(async () => {
      const row = await handle.db
        .selectFrom('payments')
        .selectAll()
        .where('id', '=', payment.id)
        .executeTakeFirst();
      return row?.status === 'paid' ? row : undefined;
    });
    // The read applies the payment first, then settles the row (a crash between is read again, harmlessly).
    const operation = await eventually(async () => {
      const [row] = await operationsOf({ db: handle.db }, 'payment', payment.id);
      return row.state === 'done' ? row : undefined;
    });
    assert.deepEqual([operation.outcome, operation.reads], ['succeeded', 1]);
    // The customer, back on the page, cannot pay again: the checkout is paid.
    assert.equal((await post(`/api/checkout/${token}/pay/`, card())).status, 410);
    assert.equal((await simAttempts({ db: handle.db }, payment.public_id)).length, 1, 'one charge');
    assert.equal(await settlementsOf({ db: handle.db }, after.id), 1, 'one ledger credit');
    assert.deepEqual(await eventStatuses({ db: handle.db }, payment.public_id), ['processing', 'paid']);
    await assertLedgerBalanced({ db: handle.db }, organizationId);
  });
});
