// The merchant's subscriptions on the dashboard: the list (filters, search, pages), the detail with its
// cycles newest first, and cancellation now or at the period's end. Subscriptions are made in the
// database (test/helpers/subscriptions.ts): the customer's signup is not built yet.
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
import { insertCycle, insertSubscription } from './helpers/subscriptions.ts';

interface Subscription {
  id: string;
  plan: { id: string; name: string };
  status: string;
  environment: string;
  customer_email: string;
  customer_name: string | null;
  card: { brand: string; last4: string; exp_month: number; exp_year: number };
  current_period_start: string;
  current_period_end: string;
  trial_end: string | null;
  cancel_at_period_end: boolean;
  canceled_at: string | null;
  cancel_reason: string | null;
  cycles?: {
    period_index: number;
    status: string;
    amount: string;
    transaction_id: string | null;
    next_attempt_at: string | null;
  }[];
}

interface SubscriptionPage {
  count: number;
  next: string | null;
  previous: string | null;
  results: Subscription[];
}

const DAY = 86_400_000;

describe(`subscriptions on the dashboard (${DB_KIND})`, () => {
  let server: TestServer;
  let owner: Merchant;
  let other: Merchant;
  let monthly: string;
  let yearly: string;

  before(async () => {
    server = await startTestServer({ worker: false });
    owner = await createTestMerchant(server, 'Subs');
    other = await createTestMerchant(server, 'Elsewhere');
    const plan = async (body: Record<string, unknown>) => {
      const response = await call<{ id: string }>(server, 'POST', '/api/subscriptions/plans/', {
        token: owner.token,
        body,
      });
      assert.equal(response.status, 201, response.text);
      return response.body.id;
    };
    monthly = await plan({ name: 'Monthly', amount: '10.00', interval: 'month' });
    yearly = await plan({ name: 'Yearly', amount: '100.00', interval: 'year', trial_days: 14 });
  });
  after(() => server.close());

  const get = <T>(path: string, token = owner.token) => call<T>(server, 'GET', path, { token });
  const seed = (planPublicId: string, status: 'trialing' | 'active' | 'past_due' | 'canceled', extra = {}) =>
    insertSubscription(server, { organizationId: owner.organizationId, planPublicId, status, ...extra });

  test('the list filters by status, plan and environment, searches email and name, and pages', async () => {
    const ana = await seed(monthly, 'active', { email: 'ana@shop.example', name: 'Ana Lima' });
    const bo = await seed(monthly, 'past_due', { email: 'bo@mail.example', name: null });
    const cy = await seed(yearly, 'trialing', { email: 'cy@shop.example', name: 'Cy Hart' });
    const all = await get<SubscriptionPage>('/api/subscriptions/');
    assert.equal(all.status, 200, all.text);
    const ids = all.body.results.map((row) => row.id);
    for (const id of [ana.publicId, bo.publicId, cy.publicId]) assert.ok(ids.includes(id), id);
    assert.equal(ids[0], cy.publicId, 'newest first');

    const ids$ = async (query: string) =>
      (await get<SubscriptionPage>(`/api/subscriptions/?${query}`)).body.results.map((row) => row.id);
    assert.deepEqual(await ids$('status=past_due'), [bo.publicId]);
    assert.deepEqual(await ids$(`plan=${yearly}`), [cy.publicId]);
    assert.deepEqual(await ids$('search=SHOP.example'), [cy.publicId, ana.publicId]);
    assert.deepEqual(await ids$('search=lima'), [ana.publicId]);
    assert.deepEqual(await ids$('search=100%25'), []);
    assert.deepEqual(await ids$('plan=plan_00000000000000'), []);
    assert.deepEqual(await ids$('environment=sandbox'), []);
    const paged = await get<SubscriptionPage>('/api/subscriptions/?page_size=2');
    assert.equal(paged.body.results.length, 2);
    assert.ok(paged.body.next?.includes('page=2'), paged.text);
    for (const bad of ['status=paused', 'environment=staging', 'page=0', 'page_size=101']) {
      const response = await get<{ detail: string }>(`/api/subscriptions/?${bad}`);
      assert.equal(response.status, 400, bad);
      assert.match(response.body.detail, new RegExp(`^${bad.split('=')[0]}: `), bad);
    }
    assert.equal((await get<SubscriptionPage>('/api/subscriptions/', other.token)).body.count, 0);
  });

  test('the detail shows the plan, the card, the current period and the cycles newest first', async () => {
    const anchor = new Date(Date.now() - 40 * DAY);
    const sub = await seed(monthly, 'active', { anchorAt: anchor.toISOString() });
    const iso = (ms: number) => new Date(ms).toISOString();
    await insertCycle(server, sub, {
      organizationId: owner.organizationId,
      periodIndex: 0,
      start: anchor.toISOString(),
      end: iso(anchor.getTime() + 30 * DAY),
      amount: 1000,
      status: 'paid',
    });
    await insertCycle(server, sub, {
      organizationId: owner.organizationId,
      periodIndex: 1,
      start: iso(anchor.getTime() + 30 * DAY),
      end: iso(anchor.getTime() + 61 * DAY),
      amount: 1000,
      status: 'retrying',
    });
    const detail = await get<Subscription>(`/api/subscriptions/${sub.publicId}/`);
    assert.equal(detail.status, 200, detail.text);
    assert.deepEqual(detail.body.plan, { id: monthly, name: 'Monthly' });
    assert.deepEqual(detail.body.card, { brand: 'visa', last4: '4242', exp_month: 12, exp_year: 2030 });
    assert.deepEqual(
      detail.body.cycles?.map((cycle) => [cycle.period_index, cycle.status, cycle.amount]),
      [
        [1, 'retrying', '10.00'],
        [0, 'paid', '10.00'],
      ],
    );
    // 40 days after the anchor is in period 1: anchor + 1 month to anchor + 2 months.
    const start = new Date(detail.body.current_period_start).getTime();
    const end = new Date(detail.body.current_period_end).getTime();
    assert.ok(start <= Date.now() && Date.now() < end, detail.text);
    assert.ok(start > anchor.getTime() + 27 * DAY && start < anchor.getTime() + 32 * DAY, detail.text);

    const trialEnd = new Date(Date.now() + 14 * DAY).toISOString();
    const trial = await seed(yearly, 'trialing', { anchorAt: trialEnd, trialEnd });
    const trialing = await get<Subscription>(`/api/subscriptions/${trial.publicId}/`);
    assert.equal(trialing.body.current_period_end, trialEnd);
    assert.equal(trialing.body.trial_end, trialEnd);
    assert.deepEqual(trialing.body.cycles, []);

    for (const id of [sub.publicId, 'SU0000000000000000', 'nope']) {
      const response = await get(
        `/api/subscriptions/${id}/`,
        id === sub.publicId ? other.token : owner.token,
      );
      assert.equal(response.status, 404, id);
      assert.deepEqual(response.body, { detail: 'Subscription not found.' });
    }
  });

  test('cancel at the period end keeps it running; cancel now ends it and voids what is unpaid', async () => {
    const later = await seed(monthly, 'active');
    // No body: the default, at the period's end.
    const atEnd = await call<Subscription>(server, 'POST', `/api/subscriptions/${later.publicId}/cancel/`, {
      token: owner.token,
    });
    assert.equal(atEnd.status, 200, atEnd.text);
    assert.equal(atEnd.body.status, 'active');
    assert.equal(atEnd.body.cancel_at_period_end, true);
    assert.equal(atEnd.body.canceled_at, null);

    const now = await seed(monthly, 'past_due');
    await insertCycle(server, now, {
      organizationId: owner.organizationId,
      periodIndex: 0,
      start: new Date().toISOString(),
      end: new Date(Date.now() + 30 * DAY).toISOString(),
      amount: 1000,
      status: 'retrying',
    });
    const canceled = await call<Subscription>(server, 'POST', `/api/subscriptions/${now.publicId}/cancel/`, {
      token: owner.token,
      body: { at_period_end: false },
    });
    assert.equal(canceled.status, 200, canceled.text);
    assert.equal(canceled.body.status, 'canceled');
    assert.equal(canceled.body.cancel_reason, 'merchant');
    assert.ok(canceled.body.canceled_at);
    assert.deepEqual(
      canceled.body.cycles?.map((cycle) => [cycle.status, cycle.next_attempt_at]),
      [['void', null]],
    );
    const again = await call(server, 'POST', `/api/subscriptions/${now.publicId}/cancel/`, {
      token: owner.token,
      body: { at_period_end: false },
    });
    assert.equal(again.status, 409);
    assert.deepEqual(again.body, { detail: 'The subscription is already canceled.' });

    const log = await get<{ results: { target: { id: string } }[] }>(
      '/api/organization/audit-log/?action=subscription.canceled',
    );
    const targets = log.body.results.map((entry) => entry.target.id);
    assert.ok(targets.includes(later.publicId) && targets.includes(now.publicId), log.text);
  });

  test('cancel now while a renewal holds its cycle is a 409 and changes nothing', async () => {
    const sub = await seed(monthly, 'active');
    await insertCycle(server, sub, {
      organizationId: owner.organizationId,
      periodIndex: 0,
      start: new Date().toISOString(),
      end: new Date(Date.now() + 30 * DAY).toISOString(),
      amount: 1000,
      status: 'processing',
      leaseUntil: new Date(Date.now() + 60_000).toISOString(),
    });
    const refused = await call(server, 'POST', `/api/subscriptions/${sub.publicId}/cancel/`, {
      token: owner.token,
      body: { at_period_end: false },
    });
    assert.equal(refused.status, 409, refused.text);
    const after = await get<Subscription>(`/api/subscriptions/${sub.publicId}/`);
    assert.equal(after.body.status, 'active');
    assert.equal(after.body.cycles?.[0].status, 'processing');
  });

  test('bad bodies, other organizations and API keys change nothing', async () => {
    const sub = await seed(monthly, 'active');
    for (const body of [{ at_period_end: 'yes' }, { now: true }]) {
      const response = await call(server, 'POST', `/api/subscriptions/${sub.publicId}/cancel/`, {
        token: owner.token,
        body,
      });
      assert.equal(response.status, 400, JSON.stringify(body));
    }
    const foreign = await call(server, 'POST', `/api/subscriptions/${sub.publicId}/cancel/`, {
      token: other.token,
      body: { at_period_end: false },
    });
    assert.equal(foreign.status, 404);
    const key = await createTestKey(server, owner);
    for (const [method, path, body] of [
      ['GET', '/api/subscriptions/', undefined],
      ['GET', `/api/subscriptions/${sub.publicId}/`, undefined],
      ['POST', `/api/subscriptions/${sub.publicId}/cancel/`, { at_period_end: false }],
      ['POST', `/api/subscriptions/${sub.publicId}/advance-clock/`, { days: 30 }],
      ['POST', `/api/subscriptions/${sub.publicId}/update-card-link/`, undefined],
    ] as const) {
      const response = await call(server, method, path, { apiKey: key, body });
      assert.equal(response.status, 401, `${method} ${path}`);
    }
    const unchanged = await get<Subscription>(`/api/subscriptions/${sub.publicId}/`);
    assert.deepEqual([unchanged.body.status, unchanged.body.cancel_at_period_end], ['active', false]);
  });
});
