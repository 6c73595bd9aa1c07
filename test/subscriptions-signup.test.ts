// The customer's signup on both databases, through the public API the /subscribe/{plan id} page and the
// hosted checkout use: the public plan (404 unknown, 410 inactive), the start, and the signup checkout
// that charges the first period and saves the card (or with a trial only saves it), 3-D Secure included.
// The subscription exists only once that succeeds: a decline, a cancel or an expiry makes nothing.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sha256Hex } from '../src/lib/ids.ts';
import { recordOperation } from '../src/provider/operations/store.ts';
import { billing, CARDS, card, type Json, pay, syncStatus } from './helpers/checkout.ts';
import { reconcile } from './helpers/provider-checks.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  DB_KIND,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import { subscribeWithSavedCard } from './helpers/subscriptions.ts';

const DAY = 86_400_000;
const THREE_DS = '4000002760003184';
/** 3-D Secure on the first use only: later off-session charges go through. */
const THREE_DS_FIRST = '4000000000003220';

interface Started {
  checkout_id: string;
  checkout_url: string;
  token: string;
  expires_at: number;
}

describe(`subscription signup (${DB_KIND})`, () => {
  let server: TestServer;
  let owner: Merchant;
  let monthly: string;
  let trial: string;
  let sandboxTrial: string;

  before(async () => {
    server = await startTestServer({ worker: false });
    owner = await createTestMerchant(server, 'Signup Shop');
    const plan = async (body: Json) => {
      const response = await call<{ id: string }>(server, 'POST', '/api/subscriptions/plans/', {
        token: owner.token,
        body,
      });
      assert.equal(response.status, 201, response.text);
      return response.body.id;
    };
    monthly = await plan({ name: 'Pro', amount: '15.00', interval: 'month' });
    trial = await plan({ name: 'Pro trial', amount: '15.00', interval: 'month', trial_days: 14 });
    sandboxTrial = await plan({
      name: 'Sandbox trial',
      amount: '5.00',
      interval: 'week',
      trial_days: 7,
      environment: 'sandbox',
    });
  });
  after(() => server.close());

  const start = async (plan: string, body: Json = billing()) => {
    const response = await call<Started>(server, 'POST', `/api/subscriptions/public/${plan}/start/`, {
      body,
    });
    assert.equal(response.status, 201, response.text);
    return response.body;
  };
  const subscriptionsOf = (email: string) =>
    server.ctx.db.selectFrom('subscriptions').selectAll().where('customer_email', '=', email).execute();
  const detail = async (id: string) => {
    const response = await call<Json & { cycles: Json[] }>(server, 'GET', `/api/subscriptions/${id}/`, {
      token: owner.token,
    });
    assert.equal(response.status, 200, response.text);
    return response.body;
  };

  test('the public plan: what the page shows; 404 for unknown ids, 410 once the plan is deactivated', async () => {
    const shown = await call<Json>(server, 'GET', `/api/subscriptions/public/${trial}/`);
    assert.equal(shown.status, 200, shown.text);
    assert.deepEqual(shown.body, {
      id: trial,
      name: 'Pro trial',
      amount: '15.00',
      currency: 'USD',
      interval: 'month',
      interval_count: 1,
      trial_days: 14,
      environment: 'production',
      merchant: { name: 'Signup Shop', website: null },
    });
    for (const id of ['plan_00000000000000', 'nope', '%27%20or%201=1', 'SU0000000000000000']) {
      const missing = await call<{ detail: string }>(server, 'GET', `/api/subscriptions/public/${id}/`);
      assert.equal(missing.status, 404, id);
      assert.equal(missing.body.detail, 'Plan not found.');
    }
    const old = await call<{ id: string }>(server, 'POST', '/api/subscriptions/plans/', {
      token: owner.token,
      body: { name: 'Old', amount: '3.00', interval: 'month' },
    });
    await call(server, 'PATCH', `/api/subscriptions/plans/${old.body.id}/`, {
      token: owner.token,
      body: { is_active: false },
    });
    const gone = await call<{ detail: string }>(server, 'GET', `/api/subscriptions/public/${old.body.id}/`);
    assert.equal(gone.status, 410);
    assert.equal(gone.body.detail, 'This plan is no longer available.');
    const refused = await call(server, 'POST', `/api/subscriptions/public/${old.body.id}/start/`, {
      body: billing(),
    });
    assert.equal(refused.status, 410);
  });

  test('without a trial: the first period is charged, the card saved, and the subscription made active', async () => {
    const email = 'first@example.com';
    const started = await start(monthly, billing({ billing_email: email }));
    assert.match(started.checkout_url, /\/checkout\/[A-Za-z0-9_-]{43}$/);
    const hosted = await call<Json>(server, 'GET', `/api/checkout/${started.token}/`);
    assert.equal(hosted.status, 200, hosted.text);
    assert.deepEqual(hosted.body.subscription, {
      plan_id: monthly,
      plan_name: 'Pro',
      amount: '15.00',
      currency: 'USD',
      interval: 'month',
      interval_count: 1,
      trial_days: 0,
      update_card: false,
    });
    assert.equal(hosted.body.total, '15.00');
    // A declined card makes no subscription; the customer tries another one.
    const declined = await pay(server, started.token, CARDS.declined);
    assert.equal(declined.status, 200, declined.text);
    assert.equal(declined.body.outcome, 'failed');
    assert.deepEqual(await subscriptionsOf(email), []);
    const paid = await pay(server, started.token);
    assert.equal(paid.status, 200, paid.text);
    assert.equal(paid.body.status, 'SUCCESS');
    const [subscription] = await subscriptionsOf(email);
    assert.ok(subscription, 'made on success');
    assert.equal(subscription.status, 'active');
    assert.equal(subscription.card_last4, '4242');
    assert.equal(subscription.trial_end, null);
    const shown = await detail(subscription.public_id);
    assert.equal(shown.status, 'active');
    assert.equal(shown.cycles.length, 1);
    assert.equal(shown.cycles[0].status, 'paid');
    assert.equal(shown.cycles[0].transaction_id, paid.body.transaction_id);
    // The first payment carries its subscription, as renewals do.
    const key = await createTestKey(server, owner);
    const payment = await call<Json>(server, 'GET', `/api/transactions/${paid.body.transaction_id}/`, {
      apiKey: key,
    });
    assert.equal(payment.body.subscription_id, subscription.public_id);
    assert.equal(payment.body.amount, '15.00');
    // The next period is due one month after the signup.
    const anchor = Date.parse(subscription.anchor_at);
    const next = new Date(anchor);
    next.setUTCMonth(next.getUTCMonth() + 1);
    if (new Date(anchor).getUTCDate() === next.getUTCDate())
      assert.equal(subscription.next_renewal_at, next.toISOString());
    // Paying again is refused and makes nothing more.
    const again = await pay(server, started.token);
    assert.equal(again.status, 410);
    assert.equal((await subscriptionsOf(email)).length, 1);
  });

  test('with a trial: the card is only saved, nothing is charged, and the first period is due at its end', async () => {
    const email = 'trial@example.com';
    const started = await start(trial, billing({ billing_email: email }));
    const saved = await pay(server, started.token);
    assert.equal(saved.status, 200, saved.text);
    assert.equal(saved.body.status, 'SUCCESS');
    assert.equal(saved.body.transaction_id, null);
    assert.equal(saved.body.payment_status, null);
    const [subscription] = await subscriptionsOf(email);
    assert.equal(subscription.status, 'trialing');
    assert.equal(Date.parse(subscription.trial_end ?? '') - Date.parse(subscription.created_at), 14 * DAY);
    assert.equal(subscription.next_renewal_at, subscription.trial_end);
    assert.equal((await detail(subscription.public_id)).cycles.length, 0);
    const charged = await server.ctx.db
      .selectFrom('payments')
      .innerJoin('checkout_sessions', 'checkout_sessions.id', 'payments.checkout_session_id')
      .select('payments.id')
      .where('checkout_sessions.public_id', '=', started.checkout_id)
      .execute();
    assert.deepEqual(charged, [], 'no payment during a trial');
    const status = await syncStatus(server, started.token);
    assert.equal(status.body.status, 'SUCCESS');
  });

  test('a trial with the 3-D Secure card: the subscription is made once the customer approves', async () => {
    const email = 'trial-3ds@example.com';
    const started = await start(sandboxTrial, billing({ billing_email: email }));
    const asked = await pay(server, started.token, THREE_DS_FIRST);
    assert.equal(asked.body.outcome, 'requires_action', asked.text);
    const action = asked.body.next_action as { url: string; challenge_id: string };
    assert.equal(
      (await call<Json>(server, 'GET', `/api/checkout/${started.token}/`)).body.next_action?.toString() !==
        undefined,
      true,
    );
    assert.deepEqual(await subscriptionsOf(email), []);
    const answered = await call<Json>(server, 'POST', action.url, { body: { answer: 'approve' } });
    assert.equal(answered.status, 200, answered.text);
    const [subscription] = await subscriptionsOf(email);
    assert.equal(subscription.status, 'trialing');
    assert.equal(subscription.environment, 'sandbox');
    assert.equal((await syncStatus(server, started.token)).body.status, 'SUCCESS');
    // The trial ends on the test clock: period 0 is charged off-session then.
    const advanced = await call<Json & { cycles: Json[]; status: string }>(
      server,
      'POST',
      `/api/subscriptions/${subscription.public_id}/advance-clock/`,
      { token: owner.token, body: { days: 7 } },
    );
    assert.equal(advanced.status, 200, advanced.text);
    assert.equal(advanced.body.status, 'active');
    assert.equal(advanced.body.cycles.length, 1);
    assert.equal(advanced.body.cycles[0].status, 'paid');
  });

  test('without a trial, with the 3-D Secure card: made once the charge is approved', async () => {
    const email = 'paid-3ds@example.com';
    const started = await start(monthly, billing({ billing_email: email }));
    const asked = await pay(server, started.token, THREE_DS);
    assert.equal(asked.body.outcome, 'requires_action', asked.text);
    assert.deepEqual(await subscriptionsOf(email), []);
    const action = asked.body.next_action as { url: string };
    await call(server, 'POST', action.url, { body: { answer: 'approve' } });
    const [subscription] = await subscriptionsOf(email);
    assert.equal(subscription?.status, 'active');
    assert.equal(subscription.card_last4, '3184');
  });

  test('a failed challenge, a cancel or bad input make nothing', async () => {
    const email = 'nothing@example.com';
    const failed = await start(trial, billing({ billing_email: email }));
    const asked = await pay(server, failed.token, THREE_DS);
    await call(server, 'POST', (asked.body.next_action as { url: string }).url, { body: { answer: 'fail' } });
    assert.equal((await syncStatus(server, failed.token)).body.status, 'CHECKOUT_PENDING');
    const canceled = await start(monthly, billing({ billing_email: email }));
    assert.equal((await call(server, 'POST', `/api/checkout/${canceled.token}/cancel/`)).status, 200);
    assert.equal((await pay(server, canceled.token)).status, 410);
    for (const body of [
      {},
      billing({ billing_email: 'not-an-email' }),
      billing({ billing_country: 'France' }),
      billing({ currency: 'EUR' }),
      billing({ success_url: 'https://evil.example/x' }),
      billing({ extra: 1 }),
    ]) {
      const response = await call<{ detail: string }>(
        server,
        'POST',
        `/api/subscriptions/public/${monthly}/start/`,
        {
          body,
        },
      );
      assert.equal(response.status, 400, JSON.stringify(body));
      assert.equal(typeof response.body.detail, 'string');
    }
    assert.deepEqual(await subscriptionsOf(email), []);
    // A card form answer for a trial checkout is refused like any bad card.
    const bad = await call(server, 'POST', `/api/checkout/${failed.token}/pay/`, { body: card('1234') });
    assert.equal(bad.status, 400);
  });

  test('the update-card page replaces the card and retries the past-due period at once; it works once', async () => {
    const sandboxMonthly = await call<{ id: string }>(server, 'POST', '/api/subscriptions/plans/', {
      token: owner.token,
      body: { name: 'Box', amount: '20.00', interval: 'month', environment: 'sandbox' },
    });
    const sub = await subscribeWithSavedCard(server, {
      organizationId: owner.organizationId,
      planPublicId: sandboxMonthly.body.id,
      cardNumber: CARDS.insufficient.replaceAll(' ', ''),
      anchorAt: new Date(Date.UTC(2032, 4, 10)).toISOString(),
      testClock: true,
      email: 'update-card@example.com',
    });
    const failed = await call<Json & { status: string; cycles: { attempts: number }[] }>(
      server,
      'POST',
      `/api/subscriptions/${sub.publicId}/advance-clock/`,
      {
        token: owner.token,
        body: { days: 1 },
      },
    );
    assert.equal(failed.body.status, 'past_due');
    const link = await call<{ url: string; expires_at: string }>(
      server,
      'POST',
      `/api/subscriptions/${sub.publicId}/update-card-link/`,
      { token: owner.token },
    );
    assert.equal(link.status, 200, link.text);
    assert.match(link.body.url, /\/checkout\/[A-Za-z0-9_-]{43}$/);
    const days = (Date.parse(link.body.expires_at) - Date.now()) / DAY;
    assert.ok(days > 6.99 && days <= 7, `valid 7 days: ${days}`);
    const token = link.body.url.split('/').pop() ?? '';
    const page = await call<Json>(server, 'GET', `/api/checkout/${token}/`);
    assert.equal((page.body.subscription as { update_card: boolean }).update_card, true);
    const saved = await pay(server, token);
    assert.equal(saved.status, 200, saved.text);
    assert.equal(saved.body.status, 'SUCCESS');
    assert.equal(saved.body.transaction_id, null, 'saving the card charges nothing itself');
    const after = await detail(sub.publicId);
    assert.equal(after.status, 'active', 'the past-due period was retried at once on the new card');
    assert.equal(after.cycles[0].status, 'paid');
    assert.equal(after.cycles[0].attempts, failed.body.cycles[0].attempts + 1);
    assert.equal((after.card as { last4: string }).last4, '4242');
    assert.equal((await pay(server, token)).status, 410, 'single use');
    // The failed payment's mail carried such a link too.
    const { readdir, readFile } = await import('node:fs/promises');
    const directory = `${server.env.KASSA_DATA_DIR}/mail`;
    const mails = await Promise.all(
      (await readdir(directory)).map((name) => readFile(`${directory}/${name}`, 'utf8')),
    );
    const failedMail = mails.find(
      (mail) => mail.includes('To: update-card@example.com') && /Subject: Your payment to/.test(mail),
    );
    assert.ok(failedMail, 'a failed-payment mail');
    assert.match(failedMail.replace(/=\r?\n/g, ''), /\/checkout\/[A-Za-z0-9_-]{43}/);
    // Canceled: no link; another organization: 404.
    await call(server, 'POST', `/api/subscriptions/${sub.publicId}/cancel/`, {
      token: owner.token,
      body: { at_period_end: false },
    });
    const refused = await call(server, 'POST', `/api/subscriptions/${sub.publicId}/update-card-link/`, {
      token: owner.token,
    });
    assert.equal(refused.status, 409);
    const other = await createTestMerchant(server, 'Else');
    const foreign = await call(server, 'POST', `/api/subscriptions/${sub.publicId}/update-card-link/`, {
      token: other.token,
    });
    assert.equal(foreign.status, 404);
  });

  test('an update-card save that never reached the provider is not reconciled to the signup setup of the same subscription', async () => {
    const plan = await call<{ id: string }>(server, 'POST', '/api/subscriptions/plans/', {
      token: owner.token,
      body: { name: 'Box lost save', amount: '20.00', interval: 'month', environment: 'sandbox' },
    });
    const sub = await subscribeWithSavedCard(server, {
      organizationId: owner.organizationId,
      planPublicId: plan.body.id,
      cardNumber: CARDS.insufficient.replaceAll(' ', ''),
      anchorAt: new Date(Date.UTC(2032, 6, 10)).toISOString(),
      testClock: true,
      email: 'lost-save@example.com',
    });
    const failed = await call<Json & { status: string; cycles: { attempts: number }[] }>(
      server,
      'POST',
      `/api/subscriptions/${sub.publicId}/advance-clock/`,
      { token: owner.token, body: { days: 1 } },
    );
    assert.equal(failed.body.status, 'past_due');
    const link = await call<{ url: string }>(
      server,
      'POST',
      `/api/subscriptions/${sub.publicId}/update-card-link/`,
      { token: owner.token },
    );
    assert.equal(link.status, 200, link.text);
    const page = await server.ctx.db
      .selectFrom('checkout_sessions')
      .selectAll()
      .where('subscription_public_id', '=', sub.publicId)
      .where('purpose', '=', 'card_update')
      .executeTakeFirstOrThrow();
    // The page's save: its write-ahead row committed, then the process died before the call (the
    // simulator never saw it). The subscription's reference already names the signup's setup there.
    const customerId = page.provider_customer_id ?? '';
    await recordOperation(
      server.ctx.db,
      {
        kind: 'signup_setup',
        idempotencyKey: `kassa-setup-${sub.publicId}-${page.public_id}-1`,
        provider: 'simulator',
        environment: 'sandbox',
        organizationId: owner.organizationId,
        subjectType: 'checkout_session',
        subjectId: page.id,
        reference: sub.publicId,
        context: { customer_id: customerId },
      },
      new Date(Date.now() - 10 * 60_000).toISOString(),
      server.ctx.config.reconcileScheduleMs,
    );
    await reconcile(server.ctx);
    const after = await server.ctx.db
      .selectFrom('checkout_sessions')
      .select('completed_at')
      .where('id', '=', page.id)
      .executeTakeFirstOrThrow();
    assert.equal(after.completed_at, null, 'the page is not used up by a setup it never made');
    const still = await detail(sub.publicId);
    assert.equal(still.status, 'past_due');
    assert.equal(still.cycles[0].attempts, failed.body.cycles[0].attempts, 'no retry on the old card');
    // The customer can still give the new card on the page.
    const token = link.body.url.split('/').pop() ?? '';
    const saved = await pay(server, token);
    assert.equal(saved.status, 200, saved.text);
    const paid = await detail(sub.publicId);
    assert.equal(paid.status, 'active');
    assert.equal((paid.card as { last4: string }).last4, '4242');
  });

  /** The checkout's time runs out now (as if the customer had taken longer than its expiry). */
  const expireCheckout = (token: string) =>
    server.ctx.db
      .updateTable('checkout_sessions')
      .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
      .where('token_hash', '=', sha256Hex(token))
      .execute();

  test('a trial signup whose 3-D Secure approval comes after its checkout expired creates nothing', async () => {
    const email = 'late-approval@example.com';
    const started = await start(trial, billing({ billing_email: email }));
    const asked = await pay(server, started.token, THREE_DS);
    assert.equal(asked.body.outcome, 'requires_action', asked.text);
    await expireCheckout(started.token);
    await call(server, 'POST', (asked.body.next_action as { url: string }).url, {
      body: { answer: 'approve' },
    });
    assert.deepEqual(await subscriptionsOf(email), [], 'no subscription from an expired signup');
    assert.notEqual((await syncStatus(server, started.token)).body.status, 'SUCCESS');
    assert.deepEqual(await subscriptionsOf(email), []);
    const session = await server.ctx.db
      .selectFrom('checkout_sessions')
      .select('completed_at')
      .where('token_hash', '=', sha256Hex(started.token))
      .executeTakeFirstOrThrow();
    assert.equal(session.completed_at, null);
  });

  test('an update-card page whose 3-D Secure approval comes after the page expired replaces no card', async () => {
    const plan = await call<{ id: string }>(server, 'POST', '/api/subscriptions/plans/', {
      token: owner.token,
      body: { name: 'Box late card', amount: '20.00', interval: 'month', environment: 'sandbox' },
    });
    const sub = await subscribeWithSavedCard(server, {
      organizationId: owner.organizationId,
      planPublicId: plan.body.id,
      cardNumber: CARDS.insufficient.replaceAll(' ', ''),
      anchorAt: new Date(Date.UTC(2032, 8, 10)).toISOString(),
      testClock: true,
      email: 'late-card@example.com',
    });
    const failed = await call<Json & { status: string; cycles: { attempts: number }[] }>(
      server,
      'POST',
      `/api/subscriptions/${sub.publicId}/advance-clock/`,
      { token: owner.token, body: { days: 1 } },
    );
    assert.equal(failed.body.status, 'past_due');
    const link = await call<{ url: string }>(
      server,
      'POST',
      `/api/subscriptions/${sub.publicId}/update-card-link/`,
      { token: owner.token },
    );
    const token = link.body.url.split('/').pop() ?? '';
    const asked = await pay(server, token, THREE_DS);
    assert.equal(asked.body.outcome, 'requires_action', asked.text);
    await expireCheckout(token);
    await call(server, 'POST', (asked.body.next_action as { url: string }).url, {
      body: { answer: 'approve' },
    });
    await syncStatus(server, token);
    const after = await detail(sub.publicId);
    assert.equal((after.card as { last4: string }).last4, '9995', 'the saved card is unchanged');
    assert.equal(after.status, 'past_due');
    assert.equal(after.cycles[0].attempts, failed.body.cycles[0].attempts, 'no retry on the late card');
  });
});
