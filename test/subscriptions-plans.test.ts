// Subscription plans on the dashboard: create, list per environment, read with their figures, rename
// and stop signups; the price, currency and interval never change; bad input changes nothing; no API
// key and no other organization reaches them.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  call,
  createTestKey,
  createTestMerchant,
  DB_KIND,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import { insertSubscription } from './helpers/subscriptions.ts';

interface Plan {
  id: string;
  name: string;
  amount: string;
  currency: string;
  interval: string;
  interval_count: number;
  trial_days: number;
  environment: string;
  is_active: boolean;
  signup_url: string;
  stats: { active_subscriptions: number; mrr: string };
  created_at: string;
  updated_at: string;
}

describe(`subscription plans (${DB_KIND})`, () => {
  let server: TestServer;
  let owner: Merchant;
  let other: Merchant;

  before(async () => {
    server = await startTestServer({ worker: false });
    owner = await createTestMerchant(server, 'Plans');
    other = await createTestMerchant(server, 'Other');
  });
  after(() => server.close());

  const create = (body: Record<string, unknown>, token = owner.token) =>
    call<Plan>(server, 'POST', '/api/subscriptions/plans/', { token, body });
  const list = async (environment = 'production', token = owner.token) => {
    const response = await call<Plan[]>(
      server,
      'GET',
      `/api/subscriptions/plans/?environment=${environment}`,
      {
        token,
      },
    );
    assert.equal(response.status, 200, response.text);
    return response.body;
  };

  test('a plan is created with its defaults, its signup address and empty figures, and read back', async () => {
    const created = await create({ name: '  Pro monthly ', amount: '19.99', interval: 'month' });
    assert.equal(created.status, 201, created.text);
    const plan = created.body;
    assert.match(plan.id, /^plan_[A-Za-z0-9]{14}$/);
    assert.deepEqual(
      {
        name: plan.name,
        amount: plan.amount,
        currency: plan.currency,
        interval: plan.interval,
        interval_count: plan.interval_count,
        trial_days: plan.trial_days,
        environment: plan.environment,
        is_active: plan.is_active,
        stats: plan.stats,
      },
      {
        name: 'Pro monthly',
        amount: '19.99',
        currency: 'USD',
        interval: 'month',
        interval_count: 1,
        trial_days: 0,
        environment: 'production',
        is_active: true,
        stats: { active_subscriptions: 0, mrr: '0.00' },
      },
    );
    assert.equal(plan.signup_url, `${server.url}/subscribe/${plan.id}`);
    const read = await call<Plan>(server, 'GET', `/api/subscriptions/plans/${plan.id}/`, {
      token: owner.token,
    });
    assert.equal(read.status, 200);
    assert.deepEqual(read.body, plan);
    const log = await call<{ results: { action: string; target: { id: string } }[] }>(
      server,
      'GET',
      '/api/organization/audit-log/?action=subscription_plan.created',
      { token: owner.token },
    );
    assert.ok(
      log.body.results.some((entry) => entry.target.id === plan.id),
      log.text,
    );
  });

  test('plans are listed per environment, newest first', async () => {
    const yearly = await create({
      name: 'Yearly',
      amount: 120,
      currency: 'EUR',
      interval: 'year',
      interval_count: 1,
      trial_days: 14,
    });
    const sandbox = await create({
      name: 'Test plan',
      amount: '5.00',
      interval: 'week',
      environment: 'sandbox',
    });
    assert.equal(sandbox.status, 201, sandbox.text);
    const production = await list('production');
    assert.equal(production[0].id, yearly.body.id);
    assert.ok(production.every((plan) => plan.environment === 'production'));
    assert.ok(!production.some((plan) => plan.id === sandbox.body.id));
    assert.deepEqual(
      (await list('sandbox')).map((plan) => plan.id),
      [sandbox.body.id],
    );
    assert.deepEqual(await list('production', other.token), []);
  });

  test('PATCH renames a plan and stops or resumes its signups; price, currency and interval are refused', async () => {
    const plan = (await create({ name: 'Basic', amount: '9.00', interval: 'month' })).body;
    const renamed = await call<Plan>(server, 'PATCH', `/api/subscriptions/plans/${plan.id}/`, {
      token: owner.token,
      body: { name: 'Basic (old)', is_active: false },
    });
    assert.equal(renamed.status, 200, renamed.text);
    assert.equal(renamed.body.name, 'Basic (old)');
    assert.equal(renamed.body.is_active, false);
    assert.equal(renamed.body.amount, '9.00');
    for (const body of [{ amount: '10.00' }, { currency: 'EUR' }, { interval: 'year' }, { trial_days: 3 }]) {
      const refused = await call(server, 'PATCH', `/api/subscriptions/plans/${plan.id}/`, {
        token: owner.token,
        body,
      });
      assert.equal(refused.status, 400, `${JSON.stringify(body)}: ${refused.text}`);
      assert.equal(typeof (refused.body as { detail?: unknown }).detail, 'string');
    }
    const blank = await call(server, 'PATCH', `/api/subscriptions/plans/${plan.id}/`, {
      token: owner.token,
      body: { name: '   ' },
    });
    assert.equal(blank.status, 400);
    assert.deepEqual(blank.body, { detail: 'name: may not be blank.' });
    const after = await call<Plan>(server, 'GET', `/api/subscriptions/plans/${plan.id}/`, {
      token: owner.token,
    });
    assert.deepEqual(
      { name: after.body.name, is_active: after.body.is_active, amount: after.body.amount },
      { name: 'Basic (old)', is_active: false, amount: '9.00' },
    );
  });

  test('bad input is a 400 with a detail and creates nothing', async () => {
    const before = (await list('production')).length;
    const bad: [Record<string, unknown>, RegExp][] = [
      [{ name: 'x', amount: '0', interval: 'month' }, /^amount: must be greater than 0\.$/],
      [{ name: 'x', amount: '-5', interval: 'month' }, /^amount/],
      [{ name: 'x', amount: '1.999', interval: 'month' }, /^amount/],
      [{ name: 'x', amount: 'ten', interval: 'month' }, /^amount/],
      [{ name: 'x', amount: '5', interval: 'fortnight' }, /interval/],
      [{ name: 'x', amount: '5', interval: 'month', interval_count: 13 }, /interval_count/],
      [{ name: 'x', amount: '5', interval: 'month', interval_count: 0 }, /interval_count/],
      [{ name: 'x', amount: '5', interval: 'month', trial_days: 91 }, /trial_days/],
      [{ name: 'x', amount: '5', interval: 'month', currency: 'GBP' }, /currency/],
      [{ name: '  ', amount: '5', interval: 'month' }, /^name: may not be blank\.$/],
      [{ amount: '5', interval: 'month' }, /name/],
      [{ name: 'x', amount: '5', interval: 'month', environment: 'staging' }, /environment/],
      [{ name: 'x', amount: '5', interval: 'month', is_active: false }, /is_active/],
    ];
    for (const [body, detail] of bad) {
      const response = await create(body);
      assert.equal(response.status, 400, `${JSON.stringify(body)}: ${response.text}`);
      assert.match((response.body as unknown as { detail: string }).detail, detail, JSON.stringify(body));
    }
    assert.equal((await list('production')).length, before);
  });

  test('another organization, an unknown id and an API key get nothing', async () => {
    const plan = (await create({ name: 'Private', amount: '3.00', interval: 'day' })).body;
    const foreign = await call(server, 'GET', `/api/subscriptions/plans/${plan.id}/`, { token: other.token });
    assert.equal(foreign.status, 404);
    assert.deepEqual(foreign.body, { detail: 'Plan not found.' });
    const patched = await call(server, 'PATCH', `/api/subscriptions/plans/${plan.id}/`, {
      token: other.token,
      body: { is_active: false },
    });
    assert.equal(patched.status, 404);
    for (const id of ['plan_00000000000000', 'nope', 'plan_x']) {
      const response = await call(server, 'GET', `/api/subscriptions/plans/${id}/`, { token: owner.token });
      assert.equal(response.status, 404, id);
    }
    const key = await createTestKey(server, owner);
    for (const [method, path, body] of [
      ['GET', '/api/subscriptions/plans/', undefined],
      ['POST', '/api/subscriptions/plans/', { name: 'k', amount: '1', interval: 'month' }],
      ['GET', `/api/subscriptions/plans/${plan.id}/`, undefined],
      ['PATCH', `/api/subscriptions/plans/${plan.id}/`, { is_active: false }],
    ] as const) {
      const response = await call(server, method, path, { apiKey: key, body });
      assert.equal(response.status, 401, `${method} ${path}: ${response.text}`);
    }
    const unchanged = await call<Plan>(server, 'GET', `/api/subscriptions/plans/${plan.id}/`, {
      token: owner.token,
    });
    assert.equal(unchanged.body.is_active, true);
  });

  test('the figures: subscriptions not canceled, and the monthly revenue of the active and past-due ones', async () => {
    const weekly = (await create({ name: 'Weekly', amount: '7.00', interval: 'week' })).body;
    const yearly = (await create({ name: 'Yearly 2', amount: '120.00', interval: 'year' })).body;
    const quarterly = (
      await create({ name: 'Quarterly', amount: '30.00', interval: 'month', interval_count: 3 })
    ).body;
    const subscribe = (planPublicId: string, status: 'trialing' | 'active' | 'past_due' | 'canceled') =>
      insertSubscription(server, { organizationId: owner.organizationId, planPublicId, status });
    for (const status of ['active', 'active', 'past_due', 'trialing', 'canceled'] as const)
      await subscribe(weekly.id, status);
    await subscribe(yearly.id, 'active');
    await subscribe(quarterly.id, 'past_due');
    await subscribe(quarterly.id, 'canceled');

    const read = async (id: string) =>
      (await call<Plan>(server, 'GET', `/api/subscriptions/plans/${id}/`, { token: owner.token })).body.stats;
    // 7.00 a week is 7.00 × 365 / (12 × 7) = 30.4166… a month, 30.42 half up; three pay.
    assert.deepEqual(await read(weekly.id), { active_subscriptions: 4, mrr: '91.25' });
    assert.deepEqual(await read(yearly.id), { active_subscriptions: 1, mrr: '10.00' });
    assert.deepEqual(await read(quarterly.id), { active_subscriptions: 1, mrr: '10.00' });
    const listed = (await list('production')).find((plan) => plan.id === weekly.id);
    assert.deepEqual(listed?.stats, { active_subscriptions: 4, mrr: '91.25' });
  });
});
