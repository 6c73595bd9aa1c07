// Production safety: with KASSA_ENV=production and the simulator as production's provider the service
// refuses to start (one line naming KASSA_ALLOW_SIMULATOR); allowed, its payments carry simulated: true,
// the hosted step says the payment is simulated (the page's badge), and the dashboard learns it (banner).
// And `kassa doctor`: what it checks, against the fake Stripe.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createCheckout, pay } from './helpers/checkout.ts';
import { kassa, startKassa } from './helpers/cli.ts';
import { type FakeStripe, startFakeStripe } from './helpers/fake-stripe/server.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  DB_KIND,
  freePort,
  startTestServer,
  type TestServer,
  testEnv,
} from './helpers/server.ts';
import { stripeEnv } from './helpers/stripe.ts';

type Json = Record<string, unknown>;

describe(`production on the simulator (${DB_KIND})`, () => {
  let env: Record<string, string>;
  let cleanup: () => Promise<void>;
  before(async () => {
    ({ env, cleanup } = await testEnv({ KASSA_ENV: 'production', KASSA_LOG_LEVEL: 'error' }));
  });
  after(() => cleanup());

  test('KASSA_ENV=production without KASSA_ALLOW_SIMULATOR: serve and worker stop with one line naming it', async () => {
    for (const command of [['serve'], ['worker']]) {
      const result = await kassa(command, env);
      assert.equal(result.code, 1, result.stderr);
      const lines = result.stderr.trim().split('\n');
      assert.equal(lines.length, 1, result.stderr);
      assert.match(lines[0], /^kassa: KASSA_ENV=production with the simulator .*KASSA_ALLOW_SIMULATOR=true/);
    }
  });

  test('kassa doctor says the same, and exits 1', async () => {
    const result = await kassa(['doctor'], env);
    assert.equal(result.code, 1);
    assert.match(result.stdout, /^FAIL {2}KASSA_ENV=production with the simulator/m);
    assert.match(result.stdout, /^ok {4}database \((sqlite|postgres)\) answers/m);
  });

  describe('allowed with KASSA_ALLOW_SIMULATOR=true', () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ env: { ...env, KASSA_ALLOW_SIMULATOR: 'true' }, worker: false });
    });
    after(() => server.close());

    test('production payments carry simulated: true; the hosted step and the dashboard say so', async () => {
      const merchant = await createTestMerchant(server, 'Simulated Shop');
      const key = await createTestKey(server, merchant);
      const checkout = await createCheckout(server, key);
      const page = await call<Json>(server, 'GET', `/api/checkout/${checkout.token}/`);
      // The page shows its "Simulated payment" badge for a production checkout on the simulator.
      assert.deepEqual([page.body.environment, page.body.provider], ['production', { name: 'simulator' }]);
      const paid = await pay(server, checkout.token);
      const id = paid.body.transaction_id as string;
      const payment = await call<Json>(server, 'GET', `/api/transactions/${id}/`, { apiKey: key });
      assert.equal(payment.body.simulated, true);
      const event = await server.ctx.db
        .selectFrom('events')
        .select('payload')
        .where('subject', '=', id)
        .orderBy('id', 'desc')
        .executeTakeFirstOrThrow();
      assert.equal((JSON.parse(event.payload) as Json).simulated, true, 'the webhook payload carries it too');
      const status = await call<Json>(server, 'GET', '/api/provider/status/', { token: merchant.token });
      assert.deepEqual(status.body, { production_provider: 'simulator', simulated_production: true });
    });
  });

  test('allowed, the service starts and warns once', async () => {
    const port = String(await freePort());
    const running = await startKassa(
      ['serve'],
      { ...env, KASSA_ALLOW_SIMULATOR: 'true', KASSA_PORT: port, KASSA_WORKER: 'false' },
      /listening on/,
    );
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    assert.equal(health.status, 200, 'the service answered');
    assert.equal(await running.stop(), 0);
    const result = { stderr: running.stderr() };
    assert.match(
      result.stderr,
      /kassa: warning: production runs on the simulator \(KASSA_ALLOW_SIMULATOR=true\)/,
    );
  });
});

describe('kassa doctor with Stripe', () => {
  let fake: FakeStripe;
  let env: Record<string, string>;
  let cleanup: () => Promise<void>;
  before(async () => {
    fake = await startFakeStripe();
    ({ env, cleanup } = await testEnv({ ...stripeEnv(fake), KASSA_PUBLIC_URL: 'https://pay.example.test' }));
  });
  after(async () => {
    await cleanup();
    await fake.close();
  });

  test('a missing webhook endpoint is named with the events to enable; then everything is ok', async () => {
    const missing = await kassa(['doctor'], env);
    assert.equal(missing.code, 1, missing.stdout);
    assert.match(missing.stdout, /^ok {4}Stripe accepted the secret key \(account acct_fake\)/m);
    assert.match(
      missing.stdout,
      /^FAIL {2}no Stripe webhook endpoint for https:\/\/pay\.example\.test\/api\/provider\/webhooks\/stripe\/: add it with the events payment_intent\.succeeded, /m,
    );
    fake.webhookEndpoints.push({
      url: 'https://pay.example.test/api/provider/webhooks/stripe/',
      enabled_events: ['payment_intent.succeeded'],
      status: 'enabled',
    });
    const partial = await kassa(['doctor'], env);
    assert.match(
      partial.stdout,
      /^FAIL {2}the Stripe webhook endpoint lacks the events payment_intent\.payment_failed, /m,
    );
    fake.webhookEndpoints[0].enabled_events = ['*'];
    const ok = await kassa(['doctor'], env);
    assert.equal(ok.code, 0, ok.stdout);
    assert.match(ok.stdout, /^ok {4}Stripe sends the events Kassa handles/m);
  });

  test('a wrong secret key, and missing keys, are named', async () => {
    const wrong = await kassa(['doctor'], { ...env, KASSA_STRIPE_SECRET_KEY: 'sk_test_wrong' });
    assert.equal(wrong.code, 1);
    assert.match(wrong.stdout, /^FAIL {2}Stripe refused the secret key/m);
    const bare = await kassa(['doctor'], {
      ...env,
      KASSA_STRIPE_SECRET_KEY: '',
      KASSA_STRIPE_PUBLISHABLE_KEY: '',
      KASSA_STRIPE_WEBHOOK_SECRET: '',
    });
    assert.equal(bare.code, 1);
    for (const name of [
      'KASSA_STRIPE_SECRET_KEY',
      'KASSA_STRIPE_PUBLISHABLE_KEY',
      'KASSA_STRIPE_WEBHOOK_SECRET',
    ]) {
      assert.match(bare.stdout, new RegExp(`^FAIL {2}${name}`, 'm'), name);
    }
  });
});
