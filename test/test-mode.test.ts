// What the dashboard's test mode and settings need from the API: the overview's snapshot, payment
// links and webhook deliveries per environment; the organization's time zone (editable, checked) and
// whether the dashboard opens in test mode (operator-set; `kassa demo` sets it).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { demoCommand } from '../src/cli/demo.ts';
import { loadConfig } from '../src/config.ts';
import {
  call,
  createTestMerchant,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import { createPaidPayment, eventually } from './helpers/wallet-fixtures.ts';

interface Snapshot {
  environment: string;
  wallet: { available: string };
  stats: { transaction_count: number; paid_transaction_count: number; paid_volume: { USD: string } };
  recent_activity: { reference: string }[];
}

describe('test mode and settings in the API', () => {
  let server: TestServer;
  let merchant: Merchant;
  let sandboxPayment = '';
  before(async () => {
    server = await startTestServer({ env: { KASSA_WEBHOOK_ALLOW_PRIVATE: 'true' } });
    merchant = await createTestMerchant(server, 'Mode Shop');
    sandboxPayment = (
      await createPaidPayment(server.ctx, {
        organizationId: merchant.organizationId,
        gross: 5000n,
        environment: 'sandbox',
      })
    ).public_id;
  });
  after(() => server.close());

  const snapshot = (query = '') =>
    call<Snapshot & { detail?: string }>(server, 'GET', `/api/organization/dashboard/${query}`, {
      token: merchant.token,
    });

  test('a sandbox payment shows on the sandbox overview, not on the production one', async () => {
    const production = await snapshot();
    assert.equal(production.body.environment, 'production');
    assert.equal(production.body.stats.transaction_count, 0);
    assert.equal(production.body.wallet.available, '0.00');
    const sandbox = await snapshot('?environment=sandbox');
    assert.equal(sandbox.status, 200, sandbox.text);
    assert.equal(sandbox.body.environment, 'sandbox');
    assert.equal(sandbox.body.stats.transaction_count, 1);
    assert.equal(sandbox.body.stats.paid_transaction_count, 1);
    assert.equal(sandbox.body.stats.paid_volume.USD, '50.00');
    assert.equal(sandbox.body.wallet.available, '48.55');
    assert.deepEqual(
      sandbox.body.recent_activity.map((entry) => entry.reference),
      [sandboxPayment],
    );
    const bad = await snapshot('?environment=test');
    assert.equal(bad.status, 400);
    assert.equal(bad.body.detail, 'environment: must be one of production, sandbox.');
  });

  test('a test-mode payment link is a sandbox link: listed only in test mode, and its checkouts are sandbox ones', async () => {
    const product = await call<{ id: string }>(server, 'POST', '/api/products/', {
      token: merchant.token,
      body: { name: 'Kite', unit_price: '12.00', currency: 'USD' },
    });
    const created = await call<{ id: string; environment: string }>(server, 'POST', '/api/payment-links/', {
      token: merchant.token,
      body: { name: 'Test kite', products: [{ product_id: product.body.id }], environment: 'sandbox' },
    });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.environment, 'sandbox');
    const live = await call<{ id: string; environment: string }>(server, 'POST', '/api/payment-links/', {
      token: merchant.token,
      body: { name: 'Live kite', products: [{ product_id: product.body.id }] },
    });
    assert.equal(live.body.environment, 'production');
    const list = async (query: string) =>
      (
        await call<{ name: string }[]>(server, 'GET', `/api/payment-links/${query}`, {
          token: merchant.token,
        })
      ).body.map((link) => link.name);
    assert.deepEqual(await list(''), ['Live kite']);
    assert.deepEqual(await list('?environment=production'), ['Live kite']);
    assert.deepEqual(await list('?environment=sandbox'), ['Test kite']);
    const started = await call<{ token: string }>(
      server,
      'POST',
      `/api/payment-links/public/${created.body.id}/start/`,
      {
        body: {
          billing_country: 'FR',
          billing_first_name: 'Ada',
          billing_last_name: 'Lovelace',
          billing_email: 'ada@example.test',
        },
      },
    );
    assert.equal(started.status, 201, started.text);
    const hosted = await call<{ environment: string }>(server, 'GET', `/api/checkout/${started.body.token}/`);
    assert.equal(hosted.body.environment, 'sandbox');
    const refused = await call<{ detail: string }>(server, 'POST', '/api/payment-links/', {
      token: merchant.token,
      body: { name: 'X', products: [{ product_id: product.body.id }], environment: 'live' },
    });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.detail, 'environment: must be one of production, sandbox.');
  });

  test('webhook deliveries can be listed per environment', async () => {
    const endpoint = await call(server, 'PUT', '/api/organization/webhook/', {
      token: merchant.token,
      body: { endpoint_url: `${server.url}/api/v1/webhooks/${merchant.slug}/` },
    });
    assert.equal(endpoint.status, 200, endpoint.text);
    await call(server, 'POST', '/api/organization/webhook/test-transaction/', {
      token: merchant.token,
      body: { transaction_id: sandboxPayment },
    });
    await call(server, 'POST', '/api/organization/webhook/test/', { token: merchant.token });
    const events = async (query: string) =>
      (
        await call<{ results: { event: string; livemode: boolean }[] }>(
          server,
          'GET',
          `/api/organization/webhook/deliveries/${query}`,
          { token: merchant.token },
        )
      ).body.results.map((delivery) => `${delivery.event} ${delivery.livemode}`);
    await eventually(async () => ((await events('')).length === 2 ? true : undefined));
    assert.deepEqual(await events('?environment=sandbox'), ['transaction.status_changed false']);
    assert.deepEqual(await events('?environment=production'), ['webhook.test true']);
    assert.deepEqual((await events('')).sort(), ['transaction.status_changed false', 'webhook.test true']);
  });

  test('the time zone is editable, checked against the IANA names, and canonicalised', async () => {
    const patch = (time_zone: unknown) =>
      call<{ time_zone: string; detail?: string }>(server, 'PATCH', '/api/organization/', {
        token: merchant.token,
        body: { time_zone },
      });
    const initial = await call<{ time_zone: string; test_mode_default: boolean }>(
      server,
      'GET',
      '/api/organization/',
      {
        token: merchant.token,
      },
    );
    assert.equal(initial.body.time_zone, 'UTC');
    assert.equal(initial.body.test_mode_default, false);
    assert.equal((await patch('Europe/Paris')).body.time_zone, 'Europe/Paris');
    assert.equal((await patch('america/new_york')).body.time_zone, 'America/New_York');
    for (const bad of ['Mars/Olympus_Mons', '', 'UTC+2']) {
      const refused = await patch(bad);
      assert.equal(refused.status, 400, bad);
      assert.equal(refused.body.detail, 'time_zone: must be an IANA time zone such as Europe/Paris or UTC.');
    }
    assert.equal((await patch(3)).body.detail, 'time_zone: must be of type string.');
    const other = await createTestMerchant(server, 'Other Shop');
    const theirs = await call<{ time_zone: string }>(server, 'GET', '/api/organization/', {
      token: other.token,
    });
    assert.equal(theirs.body.time_zone, 'UTC');
  });

  test('`kassa demo` makes a merchant whose dashboard opens in test mode; others open in production', async () => {
    const printed: string[] = [];
    const log = console.log;
    console.log = (...parts: unknown[]) => printed.push(parts.join(' '));
    try {
      const code = await demoCommand.run({
        values: { email: 'demo-mode@kassa.test' },
        positionals: [],
        config: () => loadConfig(server.env),
      });
      assert.equal(code, 0);
    } finally {
      console.log = log;
    }
    const password = /password (\S+)\)/.exec(printed.join('\n'))?.[1];
    assert.ok(password, printed.join('\n'));
    const login = await call<{ token: string }>(server, 'POST', '/api/auth/login/', {
      body: { email: 'demo-mode@kassa.test', password },
    });
    const demo = await call<{ test_mode_default: boolean }>(server, 'GET', '/api/organization/', {
      token: login.body.token,
    });
    assert.equal(demo.body.test_mode_default, true);
    const ordinary = await call<{ test_mode_default: boolean }>(server, 'GET', '/api/organization/', {
      token: merchant.token,
    });
    assert.equal(ordinary.body.test_mode_default, false);
  });
});
