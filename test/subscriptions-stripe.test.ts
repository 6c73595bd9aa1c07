// Subscriptions with the Stripe connector against the fake Stripe (both databases): a signup that pays
// its first month in the Payment Element (the PaymentIntent saves the card, setup_future_usage), then
// renews off-session under kassa-renew keys; a trial signup that saves the card through a SetupIntent
// (with 3-D Secure), whose first off-session charge Stripe refuses with authentication_required: the
// subscription is past due, the customer is mailed the update-card link, and a new card saved on that
// page (another SetupIntent) is charged at once. And a try whose charge succeeded unrecorded, made
// again once Stripe forgot its key: Stripe refuses the confirm, and the period is recorded paid; or
// paid by Stripe's webhook meanwhile: the next pass records the period paid, without a call.
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { sha256Hex } from '../src/lib/ids.ts';
import { lockPayment } from '../src/modules/payments/store.ts';
import { readProviderPayment, syncDuePayments } from '../src/modules/payments/sync.ts';
import { applyProviderState } from '../src/modules/payments/transitions.ts';
import { afterPaymentRead, runRenewals } from '../src/modules/subscriptions/renew.ts';
import { resolveFlaggedRenewal } from '../src/modules/subscriptions/resolve.ts';
import { syncSetupById } from '../src/modules/subscriptions/signup.ts';
import { billing } from './helpers/checkout.ts';
import { kassa } from './helpers/cli.ts';
import type { FakeStripe } from './helpers/fake-stripe/server.ts';
import { eventStatuses, flagAfterLastRead, reconcile, settlementsOf } from './helpers/provider-checks.ts';
import { call, createTestMerchant, DB_KIND, type Merchant, type TestServer } from './helpers/server.ts';
import {
  deliver,
  eventAbout,
  hostedStep,
  type Json,
  payInElement,
  startWithStripe,
} from './helpers/stripe.ts';

const DAY = 86_400_000;

describe(`subscriptions on Stripe (${DB_KIND})`, () => {
  let fake: FakeStripe;
  let server: TestServer;
  let close: () => Promise<void>;
  let owner: Merchant;
  let offsetMs = 0;

  before(async () => {
    ({ fake, server, close } = await startWithStripe({
      worker: false,
      clock: () => new Date(Date.now() + offsetMs),
    }));
    owner = await createTestMerchant(server, 'Stripe Subs');
  });
  after(() => close());

  const plan = async (body: Json) => {
    const response = await call<{ id: string }>(server, 'POST', '/api/subscriptions/plans/', {
      token: owner.token,
      body,
    });
    assert.equal(response.status, 201, response.text);
    return response.body.id;
  };
  const start = async (planId: string, email: string) => {
    const response = await call<{ token: string }>(
      server,
      'POST',
      `/api/subscriptions/public/${planId}/start/`,
      {
        body: billing({ billing_email: email }),
      },
    );
    assert.equal(response.status, 201, response.text);
    return response.body.token;
  };
  const subscriptionOf = (email: string) =>
    server.ctx.db
      .selectFrom('subscriptions')
      .selectAll()
      .where('customer_email', '=', email)
      .executeTakeFirst();
  test('a paid signup saves the card with its first PaymentIntent; the next month is charged off-session once', async () => {
    offsetMs = 0;
    const monthly = await plan({ name: 'Monthly', amount: '19.90', interval: 'month' });
    const token = await start(monthly, 'stripe-paid@example.com');
    const { sync } = await payInElement(server, fake, token, 'pm_card_visa');
    assert.equal(sync.body.status, 'SUCCESS', sync.text);
    const subscription = await subscriptionOf('stripe-paid@example.com');
    assert.ok(subscription, 'made once the PaymentIntent succeeded');
    assert.equal(subscription.status, 'active');
    assert.equal(subscription.provider, 'stripe');
    assert.match(subscription.provider_customer_id, /^cus_/);
    assert.match(subscription.payment_method_id, /^pm_/);
    const first = [...fake.ledger.intents.values()].find(
      (intent) =>
        intent.metadata.kassa_transaction_id !== undefined &&
        intent.customer === subscription.provider_customer_id,
    );
    assert.equal(first?.setup_future_usage, 'off_session', 'the first payment saved the card');

    offsetMs = 32 * DAY;
    await runRenewals(server.ctx);
    await runRenewals(server.ctx);
    const cycles = await server.ctx.db
      .selectFrom('subscription_cycles')
      .selectAll()
      .where('subscription_id', '=', subscription.id)
      .orderBy('period_index')
      .execute();
    assert.deepEqual(
      cycles.map((cycle) => [cycle.period_index, cycle.status, cycle.attempts]),
      [
        [0, 'paid', 1],
        [1, 'paid', 1],
      ],
    );
    const renewals = [...fake.ledger.intents.values()].filter(
      (intent) => intent.metadata.kassa_subscription_id === subscription.public_id,
    );
    assert.equal(renewals.length, 1, 'one off-session PaymentIntent for period 1');
    assert.equal(renewals[0].status, 'succeeded');
    assert.equal(renewals[0].amount, 1990);
    const keys = fake.requests.filter((request) =>
      request.idempotencyKey?.startsWith(`kassa-renew-${cycles[1].id}-`),
    );
    assert.ok(keys.length >= 1);
    assert.ok(keys.every((request) => request.idempotencyKey === `kassa-renew-${cycles[1].id}-1`));
    const payment = await server.ctx.db
      .selectFrom('payments')
      .select(['status', 'provider'])
      .where('id', '=', cycles[1].payment_id ?? 0)
      .executeTakeFirstOrThrow();
    assert.deepEqual({ ...payment }, { status: 'paid', provider: 'stripe' });
  });

  test("a signup's PaymentIntent and a trial's SetupIntent allow cards only: Stripe refuses Link, a card then makes the subscription", async () => {
    offsetMs = 0;
    const email = 'stripe-link@example.com';
    const token = await start(await plan({ name: 'Cards only', amount: '12.00', interval: 'month' }), email);
    const { provider } = await hostedStep(server, token);
    const intentId = (provider.client_secret as string).split('_secret_')[0];
    assert.deepEqual(fake.ledger.intent(intentId).payment_method_types, ['card']);
    const refused = await fake.confirmInBrowser(provider.client_secret as string, 'pm_fake_link');
    assert.equal(refused.status, 400, JSON.stringify(refused.body));
    assert.equal(fake.ledger.intent(intentId).status, 'requires_payment_method', 'nothing was charged');
    assert.equal(await subscriptionOf(email), undefined);
    const { sync } = await payInElement(server, fake, token, 'pm_card_visa');
    assert.equal(sync.body.status, 'SUCCESS', sync.text);
    assert.equal((await subscriptionOf(email))?.card_last4, '4242');

    const trialEmail = 'stripe-link-trial@example.com';
    const trialToken = await start(
      await plan({ name: 'Cards only, trial', amount: '5.00', interval: 'month', trial_days: 7 }),
      trialEmail,
    );
    const setup = (await hostedStep(server, trialToken)).provider.client_secret as string;
    assert.deepEqual(fake.ledger.setup(setup.split('_secret_')[0]).payment_method_types, ['card']);
    const refusedSetup = await fake.confirmInBrowser(setup, 'pm_fake_link');
    assert.equal(refusedSetup.status, 400, JSON.stringify(refusedSetup.body));
    assert.equal((await fake.confirmInBrowser(setup, 'pm_card_visa')).status, 200);
    await call(server, 'POST', '/api/checkout/sync-status/', { body: { token: trialToken } });
    assert.equal((await subscriptionOf(trialEmail))?.status, 'trialing');
  });

  test("a trial's SetupIntent confirmed after its signup checkout expired creates nothing (sync and webhook)", async () => {
    offsetMs = 0;
    const email = 'stripe-late-setup@example.com';
    const token = await start(
      await plan({ name: 'Late trial', amount: '5.00', interval: 'month', trial_days: 7 }),
      email,
    );
    const secret = (await hostedStep(server, token)).provider.client_secret as string;
    const session = await server.ctx.db
      .selectFrom('checkout_sessions')
      .select(['id', 'expires_at'])
      .where('token_hash', '=', sha256Hex(token))
      .executeTakeFirstOrThrow();
    offsetMs = Date.parse(session.expires_at) - Date.now() + 60_000;
    assert.equal((await fake.confirmInBrowser(secret, 'pm_card_visa')).status, 200);
    await call(server, 'POST', '/api/checkout/sync-status/', { body: { token } });
    await syncSetupById(server.ctx, secret.split('_secret_')[0]);
    assert.equal(await subscriptionOf(email), undefined, 'an expired signup makes no subscription');
    const after = await server.ctx.db
      .selectFrom('checkout_sessions')
      .select('completed_at')
      .where('id', '=', session.id)
      .executeTakeFirstOrThrow();
    assert.equal(after.completed_at, null);
    offsetMs = 0;
  });

  test('a signup paid with a method that saved no card (a PaymentIntent opened with every method, before cards only) is flagged, not ignored', async () => {
    offsetMs = 0;
    const email = 'stripe-link-old@example.com';
    const token = await start(await plan({ name: 'Old intent', amount: '8.00', interval: 'month' }), email);
    const { provider } = await hostedStep(server, token);
    // As an earlier version opened it: automatic payment methods, so the Payment Element offered Link.
    const intent = fake.ledger.intent((provider.client_secret as string).split('_secret_')[0]);
    Object.assign(intent, {
      allowed_payment_method_types: null,
      automatic_payment_methods: { enabled: true },
      payment_method_types: ['card', 'link'],
    });
    const { confirm, sync } = await payInElement(server, fake, token, 'pm_fake_link');
    assert.equal(confirm.status, 200, JSON.stringify(confirm.body));
    assert.equal(sync.body.status, 'SUCCESS', sync.text);
    assert.equal(await subscriptionOf(email), undefined, 'nothing to renew: no subscription');
    const payment = await server.ctx.db
      .selectFrom('payments')
      .select(['public_id', 'status', 'subscription_id', 'provider_conflict'])
      .where('provider_payment_id', '=', intent.id)
      .executeTakeFirstOrThrow();
    assert.equal(payment.status, 'paid');
    assert.match(payment.provider_conflict ?? '', /saved no card/);
    const detail = await call<Json>(server, 'GET', `/api/payments/${payment.public_id}/`, {
      token: owner.token,
    });
    assert.equal(detail.status, 200, detail.text);
    assert.deepEqual(
      [(detail.body.provider_review as Json).state, (detail.body.provider_review as Json).operation],
      ['flagged', 'payment'],
    );
  });

  /**
   * A monthly plan's signup paid in the Payment Element: the subscription, active, its card saved
   * (pm_card_chargeCustomerFail: saved on the page, declined off-session, so every renewal try declines).
   */
  const paidSignup = async (name: string, amount: string, email: string, card = 'pm_card_visa') => {
    offsetMs = 0;
    const token = await start(await plan({ name, amount, interval: 'month' }), email);
    const { sync } = await payInElement(server, fake, token, card);
    assert.equal(sync.body.status, 'SUCCESS', sync.text);
    const subscription = await subscriptionOf(email);
    assert.ok(subscription);
    return subscription;
  };
  /**
   * Period 1 falls due, and its off-session PaymentIntent is made and charged at Stripe while both
   * answers to it (the client's request and its one retry under the same key) are lost.
   */
  const loseRenewalAnswers = () => {
    offsetMs = 32 * DAY;
    fake.fail({ method: 'POST', path: /^\/v1\/payment_intents$/, mode: '500_after_success', times: 2 });
  };
  /** The reconciler's reads at these minutes after the call, the renewal loop after each. */
  const reconcileAt = async (minutes: number[]) => {
    for (const minute of minutes) {
      offsetMs = 32 * DAY + minute * 60_000;
      await reconcile(server.ctx);
      await runRenewals(server.ctx);
    }
  };
  const renewalsOf = (subscriptionPublicId: string) =>
    [...fake.ledger.intents.values()].filter(
      (intent) => intent.metadata.kassa_subscription_id === subscriptionPublicId,
    );
  const periodOne = (subscriptionId: number) =>
    server.ctx.db
      .selectFrom('subscription_cycles')
      .selectAll()
      .where('subscription_id', '=', subscriptionId)
      .where('period_index', '=', 1)
      .executeTakeFirstOrThrow();

  test('a renewal charged at Stripe whose answer was lost is found by the reconciler and never charged again', async () => {
    const subscription = await paidSignup('Monthly, lost answer', '9.90', 'stripe-lost@example.com');
    loseRenewalAnswers();
    await runRenewals(server.ctx);
    assert.equal(renewalsOf(subscription.public_id).length, 1);
    assert.equal(renewalsOf(subscription.public_id)[0].status, 'succeeded', 'Stripe charged the card');

    // The reconciler reads it back on its schedule (1 min, 5 min from the call); renewals run between.
    await reconcileAt([2, 6, 61]);
    const cycle = await periodOne(subscription.id);
    assert.deepEqual([cycle.status, cycle.attempts], ['paid', 1]);
    const renewals = renewalsOf(subscription.public_id);
    assert.equal(renewals.length, 1, 'one PaymentIntent: the period was not charged again');
    const payment = await server.ctx.db
      .selectFrom('payments')
      .select(['status', 'provider_payment_id'])
      .where('id', '=', cycle.payment_id ?? 0)
      .executeTakeFirstOrThrow();
    assert.deepEqual({ ...payment }, { status: 'paid', provider_payment_id: renewals[0].id });
  });

  test("a renewal whose answer was lost while Stripe's search lags is not charged again", async () => {
    const subscription = await paidSignup('Monthly, search lag', '4.90', 'stripe-lag@example.com');
    // Stripe's search does not show the PaymentIntent for the whole of the reconciler's first reads:
    // the try is taken for never made.
    loseRenewalAnswers();
    fake.ledger.searchLagSince = Math.floor(Date.now() / 1000);
    try {
      await runRenewals(server.ctx);
      await reconcileAt([2, 6]);
    } finally {
      fake.ledger.searchLagSince = null;
    }
    const cycle = await periodOne(subscription.id);
    const renewals = renewalsOf(subscription.public_id);
    assert.equal(renewals.length, 1, 'the next try found the PaymentIntent by a consistent list');
    assert.equal(fake.ledger.chargesOf(renewals[0].id).length, 1, 'and charged the card once');
    assert.deepEqual([cycle.status, cycle.attempts], ['paid', 2]);
  });

  /** The mails sent to an address whose subject contains `subject`. */
  const mailsTo = async (email: string, subject: string) => {
    const directory = `${server.env.KASSA_DATA_DIR}/mail`;
    const names = await readdir(directory).catch(() => [] as string[]);
    const texts = await Promise.all(names.map((name) => readFile(`${directory}/${name}`, 'utf8')));
    return texts.filter((text) => text.includes(`To: ${email}`) && text.includes(`Subject: ${subject}`));
  };
  const HOUR = 3_600_000;

  test("a rolled Stripe key is not the customer's decline: the renewal waits an hour, no dunning, no mail, then the same try is charged", async () => {
    const email = 'stripe-rolled@example.com';
    const subscription = await paidSignup('Monthly, rolled key', '6.90', email);
    const rolled = fake.rollSecretKey();
    try {
      for (const at of [32 * DAY, 32 * DAY + 61 * 60_000]) {
        offsetMs = at;
        await runRenewals(server.ctx);
        const cycle = await periodOne(subscription.id);
        assert.deepEqual([cycle.status, cycle.attempts, cycle.first_attempt_at], ['processing', 0, null]);
        const wait = Date.parse(cycle.next_attempt_at ?? '') - (Date.now() + offsetMs);
        assert.ok(wait > 0.9 * HOUR && wait <= HOUR, `put off about an hour, not ${wait} ms`);
        assert.equal((await subscriptionOf(email))?.status, 'active', 'not past due');
      }
    } finally {
      rolled.restore();
    }
    assert.deepEqual(
      await mailsTo(email, 'Your payment to'),
      [],
      'the customer is not told their payment failed',
    );
    assert.equal(renewalsOf(subscription.public_id).length, 0, 'nothing was made at Stripe');

    offsetMs = 32 * DAY + 122 * 60_000;
    await runRenewals(server.ctx);
    const cycle = await periodOne(subscription.id);
    assert.deepEqual([cycle.status, cycle.attempts], ['paid', 1]);
    const keys = fake.requests.filter((request) =>
      request.idempotencyKey?.startsWith(`kassa-renew-${cycle.id}-`),
    );
    assert.ok(
      keys.every((request) => request.idempotencyKey === `kassa-renew-${cycle.id}-1`),
      'the same try',
    );
    const operation = await server.ctx.db
      .selectFrom('provider_operations')
      .select(['state', 'outcome'])
      .where('idempotency_key', '=', `kassa-renew-${cycle.id}-1`)
      .executeTakeFirstOrThrow();
    assert.deepEqual({ ...operation }, { state: 'done', outcome: 'succeeded' });
  });

  test('a rate limit on the fifth try is not the last decline: the try waits an hour instead of canceling the subscription', async () => {
    const email = 'stripe-ratelimit@example.com';
    // Every renewal try is a decline.
    const subscription = await paidSignup('Monthly, rate limit', '3.90', email, 'pm_card_chargeCustomerFail');
    for (const day of [32, 33, 35, 39]) {
      offsetMs = day * DAY + 60_000;
      await runRenewals(server.ctx);
    }
    let cycle = await periodOne(subscription.id);
    assert.deepEqual([cycle.status, cycle.attempts], ['retrying', 4]);
    assert.equal((await mailsTo(email, 'Your payment to')).length, 1, 'told once, at the first decline');

    offsetMs = 46 * DAY + 2 * 60_000;
    fake.fail({ method: 'POST', path: /^\/v1\/payment_intents\/pi_\w+\/confirm$/, mode: '429', times: 1 });
    await runRenewals(server.ctx);
    cycle = await periodOne(subscription.id);
    assert.deepEqual([cycle.status, cycle.attempts], ['retrying', 4], 'the fifth try is still to be made');
    assert.equal((await subscriptionOf(email))?.status, 'past_due', 'not canceled');
    assert.equal((await mailsTo(email, 'Your payment to')).length, 1);
    assert.deepEqual(await mailsTo(email, 'Your Monthly, rate limit subscription'), []);

    offsetMs = 46 * DAY + 2 * 60_000 + 2 * HOUR;
    await runRenewals(server.ctx);
    cycle = await periodOne(subscription.id);
    assert.deepEqual([cycle.status, cycle.attempts], ['uncollectible', 5], 'the real fifth try declined');
    const ended = await subscriptionOf(email);
    assert.deepEqual([ended?.status, ended?.cancel_reason], ['canceled', 'payment_failed']);
  });

  test('a trial saves the card through a SetupIntent; authentication_required off-session mails the update-card link, whose new card is charged at once', async () => {
    offsetMs = 0;
    const trial = await plan({ name: 'Trial', amount: '7.00', interval: 'month', trial_days: 14 });
    const email = 'stripe-trial@example.com';
    const token = await start(trial, email);
    const { provider } = await hostedStep(server, token);
    assert.equal((provider as { mode?: string }).mode, 'setup', 'a trial only saves the card');
    assert.match(provider.client_secret ?? '', /^seti_/);
    const confirmed = await fake.confirmInBrowser(
      provider.client_secret as string,
      'pm_card_authenticationRequired',
    );
    assert.equal(confirmed.status, 200, JSON.stringify(confirmed.body));
    const setupId = (provider.client_secret as string).split('_secret_')[0];
    fake.ledger.authenticate(setupId, true);
    const synced = await call<Json>(server, 'POST', '/api/checkout/sync-status/', { body: { token } });
    assert.equal(synced.body.status, 'SUCCESS', synced.text);
    const subscription = await subscriptionOf(email);
    assert.equal(subscription?.status, 'trialing');
    assert.equal(subscription?.card_last4, '3184');
    const charged = [...fake.ledger.intents.values()].filter(
      (intent) => intent.customer === subscription?.provider_customer_id,
    );
    assert.deepEqual(charged, [], 'nothing is charged during the trial');

    offsetMs = 15 * DAY;
    await runRenewals(server.ctx);
    const pastDue = await subscriptionOf(email);
    assert.equal(pastDue?.status, 'past_due');
    const [cycle] = await server.ctx.db
      .selectFrom('subscription_cycles')
      .selectAll()
      .where('subscription_id', '=', pastDue?.id ?? 0)
      .execute();
    assert.equal(cycle.needs_new_card, 1, 'authentication_required: no retry of the same card');
    const directory = `${server.env.KASSA_DATA_DIR}/mail`;
    const mails = await Promise.all(
      (await readdir(directory)).map((name) => readFile(`${directory}/${name}`, 'utf8')),
    );
    const mail = mails.find(
      (text) => text.includes(`To: ${email}`) && text.includes('Subject: Your payment to'),
    );
    assert.ok(mail, 'the customer was mailed');
    const link = /\/checkout\/([A-Za-z0-9_-]{43})/.exec(mail.replace(/=\r?\n/g, ''));
    assert.ok(link, 'with the update-card link');

    const page = await hostedStep(server, link[1]);
    assert.equal((page.provider as { mode?: string }).mode, 'setup');
    assert.notEqual(page.provider.client_secret, provider.client_secret, 'a SetupIntent of its own');
    const replaced = await fake.confirmInBrowser(page.provider.client_secret as string, 'pm_card_visa');
    assert.equal(replaced.status, 200, JSON.stringify(replaced.body));
    const done = await call<Json>(server, 'POST', '/api/checkout/sync-status/', { body: { token: link[1] } });
    assert.equal(done.body.status, 'SUCCESS', done.text);
    const active = await subscriptionOf(email);
    assert.equal(active?.status, 'active');
    assert.equal(active?.card_last4, '4242');
    const paid = await server.ctx.db
      .selectFrom('subscription_cycles')
      .select(['status', 'attempts'])
      .where('id', '=', cycle.id)
      .executeTakeFirstOrThrow();
    assert.deepEqual({ ...paid }, { status: 'paid', attempts: 2 });
  });

  const operationOf = (key: string) =>
    server.ctx.db
      .selectFrom('provider_operations')
      .selectAll()
      .where('idempotency_key', '=', key)
      .executeTakeFirstOrThrow();
  const flaggedGauge = async () => {
    const metrics = await call(server, 'GET', '/metrics');
    const line = /^kassa_provider_operations_flagged\{kind="renewal_charge"\} (\d+)$/m.exec(metrics.text);
    return line ? Number(line[1]) : null;
  };

  test('a renewal Stripe refuses for 72 hours is flagged for the operator (payment review, doctor, /metrics); resolved not charged once the key is back, the same try is charged once', async () => {
    const email = 'stripe-revoked@example.com';
    const subscription = await paidSignup('Monthly, revoked key', '8.90', email);
    const rolled = fake.rollSecretKey();
    let cycle = await periodOne(subscription.id).catch(() => null);
    try {
      // Refused at the first try, an hour later, and 71 hours later: put off each time.
      for (const minutes of [0, 61, 71 * 60 + 1]) {
        offsetMs = 32 * DAY + minutes * 60_000;
        await runRenewals(server.ctx);
        cycle = await periodOne(subscription.id);
        assert.deepEqual([cycle.status, cycle.attempts], ['processing', 0]);
        assert.ok(cycle.next_attempt_at, 'the same try again in an hour');
      }
      assert.ok(cycle);
      const key = `kassa-renew-${cycle.id}-1`;
      assert.equal((await operationOf(key)).state, 'done', 'not flagged before 72 hours');
      assert.equal(await flaggedGauge(), 0);

      offsetMs = 32 * DAY + (72 * 60 + 2) * 60_000;
      await runRenewals(server.ctx);
      cycle = await periodOne(subscription.id);
      assert.deepEqual([cycle.status, cycle.attempts, cycle.next_attempt_at], ['processing', 1, null]);
      const flagged = await operationOf(key);
      assert.deepEqual(
        [flagged.state, flagged.outcome, flagged.outcome_code],
        ['flagged', 'failed', 'provider_authentication'],
      );
      assert.match(
        flagged.last_read_error ?? '',
        /^stripe refused every call of this try since \S+ \(provider_authentication: Invalid API Key/,
      );
      // Not made again by itself, not dunned, nobody mailed.
      const requests = fake.requests.length;
      offsetMs = 32 * DAY + 90 * HOUR;
      await runRenewals(server.ctx);
      assert.equal(fake.requests.length, requests, 'no call to Stripe');
      assert.equal((await subscriptionOf(email))?.status, 'active');
      assert.deepEqual(await mailsTo(email, 'Your payment to'), []);

      // Where flagged calls are seen: the renewal payment's review, /metrics, kassa doctor (read at
      // today's time: the owner's session has not lived 35 days).
      offsetMs = 0;
      const payment = await server.ctx.db
        .selectFrom('payments')
        .select(['public_id', 'status'])
        .where('id', '=', cycle.payment_id ?? 0)
        .executeTakeFirstOrThrow();
      const detail = await call<Json>(server, 'GET', `/api/payments/${payment.public_id}/`, {
        token: owner.token,
      });
      assert.equal(detail.status, 200, detail.text);
      const review = detail.body.provider_review as Json;
      assert.deepEqual([review.state, review.operation], ['flagged', key]);
      assert.match(String(review.reason), /refused every call of this try/);
      assert.equal(await flaggedGauge(), 1);
      const doctor = await kassa(['doctor'], server.env);
      assert.match(
        doctor.stdout,
        /^warn {2}1 provider call\(s\) flagged for review \(1 renewal_charge\): .*kassa renewal list/m,
      );

      // Still refused: the provider cannot be read, nothing changes.
      offsetMs = 32 * DAY + 91 * HOUR;
      await assert.rejects(
        resolveFlaggedRenewal(server.ctx, { operation: key, resolution: 'not_charged' }),
        /^Error: Kassa could not read TX\w+ from stripe \(Invalid API Key.*\)\. Nothing changed; resolve it once the provider answers\.$/,
      );
      assert.equal((await operationOf(key)).state, 'flagged');
    } finally {
      rolled.restore();
    }
    assert.ok(cycle);
    const key = `kassa-renew-${cycle.id}-1`;
    await assert.rejects(
      resolveFlaggedRenewal(server.ctx, { operation: key, resolution: 'paid' }),
      /stripe shows no charge of this try/,
    );
    const resolved = await resolveFlaggedRenewal(server.ctx, { operation: key, resolution: 'not_charged' });
    assert.deepEqual([resolved.cycle.status, resolved.cycle.attempts], ['processing', 0]);
    const waiting = await periodOne(subscription.id);
    assert.equal(waiting.provider_errors_since, null, 'the refusals are counted anew');
    assert.ok(waiting.next_attempt_at && Date.parse(waiting.next_attempt_at) <= Date.now() + offsetMs);

    await runRenewals(server.ctx);
    const paid = await periodOne(subscription.id);
    assert.deepEqual([paid.status, paid.attempts], ['paid', 1]);
    const renewals = renewalsOf(subscription.public_id);
    assert.equal(renewals.length, 1);
    assert.equal(fake.ledger.chargesOf(renewals[0].id).length, 1, 'charged once');
    const keys = fake.requests.filter((request) =>
      request.idempotencyKey?.startsWith(`kassa-renew-${cycle?.id}-`),
    );
    assert.ok(keys.length > 0 && keys.every((request) => request.idempotencyKey === key), 'the same try');
    assert.deepEqual(
      [(await operationOf(key)).state, (await operationOf(key)).outcome],
      ['done', 'succeeded'],
    );
    offsetMs = 0;
    assert.equal(await flaggedGauge(), 0);
  });

  test("a renewal flagged while Stripe's search does not show it: paid names the PaymentIntent, which must be this renewal's", async () => {
    const subscription = await paidSignup('Monthly, named intent', '5.90', 'stripe-named@example.com');
    loseRenewalAnswers();
    await runRenewals(server.ctx);
    const [intent] = renewalsOf(subscription.public_id);
    assert.equal(intent.status, 'succeeded', 'Stripe charged the card');
    const cycle = await periodOne(subscription.id);
    const key = `kassa-renew-${cycle.id}-1`;
    await flagAfterLastRead(server.ctx, key, 'Stripe unreachable');
    const signup = [...fake.ledger.intents.values()].find(
      (other) => other.customer === subscription.provider_customer_id && other.id !== intent.id,
    );
    assert.ok(signup);
    fake.ledger.searchLagSince = intent.created;
    try {
      await assert.rejects(
        resolveFlaggedRenewal(server.ctx, { operation: key, resolution: 'paid' }),
        /^Error: stripe shows no charge of this try \(no payment for TX\w+\)\. Nothing changed\. If its dashboard shows the charge, name it with --provider-payment-id/,
      );
      const wrong = await kassa(
        ['renewal', 'resolve', key, 'paid', '--provider-payment-id', signup.id],
        server.env,
      );
      assert.equal(wrong.code, 1);
      assert.match(
        wrong.stderr,
        new RegExp(
          `^kassa: ${signup.id} is not this renewal's payment: stripe shows it made for TX\\w+, the renewal is TX\\w+\\. Nothing changed\\.$`,
          'm',
        ),
      );
      assert.equal((await operationOf(key)).state, 'flagged');

      const named = await kassa(
        ['renewal', 'resolve', key, 'paid', '--provider-payment-id', intent.id],
        server.env,
      );
      assert.equal(named.code, 0, named.stderr);
      const answer = JSON.parse(named.stdout) as Json;
      assert.deepEqual(
        [answer.provider_payment_id, answer.payment_status, (answer.cycle as Json).status],
        [intent.id, 'paid', 'paid'],
      );
    } finally {
      fake.ledger.searchLagSince = null;
    }
    const payment = await server.ctx.db
      .selectFrom('payments')
      .select(['id', 'status', 'provider_payment_id'])
      .where('id', '=', cycle.payment_id ?? 0)
      .executeTakeFirstOrThrow();
    assert.deepEqual([payment.status, payment.provider_payment_id], ['paid', intent.id]);
    assert.equal(await settlementsOf(server.ctx, payment.id), 1, 'settled once');
    assert.equal(renewalsOf(subscription.public_id).length, 1);
    assert.equal(fake.ledger.chargesOf(intent.id).length, 1, 'charged once');
    const settled = await operationOf(key);
    assert.deepEqual([settled.state, settled.provider_object_id], ['done', intent.id]);
  });

  /**
   * A paid signup whose card fails off-session (pm_card_chargeCustomerFail), and period 1's first try,
   * declined: the cycle retrying, its payment's PaymentIntent known.
   */
  const firstTryDeclined = async (name: string, amount: string, email: string) => {
    const subscription = await paidSignup(name, amount, email, 'pm_card_chargeCustomerFail');
    offsetMs = 32 * DAY;
    await runRenewals(server.ctx);
    const cycle = await periodOne(subscription.id);
    assert.deepEqual([cycle.status, cycle.attempts], ['retrying', 1]);
    return { subscription, cycle };
  };

  /**
   * The customer opens the update-card page of their failed-payment mail and saves a new card in the
   * Payment Element (Stripe confirms its SetupIntent); the page's token, for the sync-status that then
   * records the card and makes the dunned period's next try at once.
   */
  const newCardSaved = async (email: string, card = 'pm_card_visa') => {
    const [failedMail] = await mailsTo(email, 'Your payment to');
    const link = /\/checkout\/([A-Za-z0-9_-]{43})/.exec(failedMail?.replace(/=\r?\n/g, '') ?? '');
    assert.ok(link, 'the update-card link');
    const page = await hostedStep(server, link[1]);
    const saved = await fake.confirmInBrowser(page.provider.client_secret as string, card);
    assert.equal(saved.status, 200, JSON.stringify(saved.body));
    return link[1];
  };

  /**
   * A renewal's try 2 charged at Stripe but unrecorded: try 1 declines and leaves its PaymentIntent
   * known; the customer gives a new card on the failed payment's page, so try 2 is made at once. Stripe
   * charges it, but its answer is lost (a 500 after the change) and the SDK's retry under the same key
   * is rate limited: a refusal, so the same try is put off an hour, the cycle retrying, the payment
   * processing while its PaymentIntent succeeded.
   */
  const chargedUnrecorded = async (name: string, amount: string, email: string) => {
    const declined = await firstTryDeclined(name, amount, email);
    const { subscription } = declined;
    let { cycle } = declined;
    const paymentId = cycle.payment_id ?? 0;
    const paymentOf = () =>
      server.ctx.db.selectFrom('payments').selectAll().where('id', '=', paymentId).executeTakeFirstOrThrow();
    const intentId = (await paymentOf()).provider_payment_id ?? '';
    assert.match(intentId, /^pi_/);

    const token = await newCardSaved(email);
    const confirm = /^\/v1\/payment_intents\/pi_\w+\/confirm$/;
    fake.fail({ method: 'POST', path: confirm, mode: '500_after_success', times: 1 });
    fake.fail({ method: 'POST', path: confirm, mode: '429', times: 1 });
    const updated = await call<Json>(server, 'POST', '/api/checkout/sync-status/', {
      body: { token },
    });
    assert.equal(updated.body.status, 'SUCCESS', updated.text);
    assert.equal(fake.ledger.intent(intentId).status, 'succeeded', 'Stripe charged the new card');
    cycle = await periodOne(subscription.id);
    assert.deepEqual([cycle.status, cycle.attempts], ['retrying', 1], 'try 2 is to be made again');
    assert.equal((await paymentOf()).status, 'processing');
    return { subscription, cycle, intentId, paymentOf };
  };

  test("a renewal whose PaymentIntent succeeded without Kassa's record is not taken for a decline when Stripe refuses to confirm it again: the period is paid, settled once", async () => {
    const email = 'stripe-confirmed-twice@example.com';
    const unrecorded = await chargedUnrecorded('Monthly, confirmed twice', '6.40', email);
    const { subscription, intentId, paymentOf } = unrecorded;
    let { cycle } = unrecorded;
    // No webhook comes (one would end the dunning at once: the next test), so Kassa learns of the
    // charge only from Stripe's refusal below.
    // Kassa's key is refused for a day (rolled), so the same try is refused hourly; by the time it is
    // made again Stripe has forgotten its key (24 hours), so the confirm runs anew and Stripe refuses
    // it: the PaymentIntent already succeeded.
    const rolled = fake.rollSecretKey();
    try {
      for (const minutes of [61, 24 * 60 + 1]) {
        offsetMs = 32 * DAY + minutes * 60_000;
        await runRenewals(server.ctx);
      }
    } finally {
      rolled.restore();
    }
    fake.forgetIdempotencyKeys();
    offsetMs = 32 * DAY + (25 * 60 + 2) * 60_000;
    const refusals = () =>
      fake.requests.filter((request) => request.idempotencyKey === `kassa-renew-${cycle.id}-2`).length;
    const before = refusals();
    await runRenewals(server.ctx);
    assert.ok(refusals() > before, 'try 2 was made again');
    assert.equal(fake.ledger.intent(intentId).status, 'succeeded');

    cycle = await periodOne(subscription.id);
    assert.deepEqual([cycle.status, cycle.attempts, cycle.next_attempt_at], ['paid', 2, null]);
    assert.equal((await subscriptionOf(email))?.status, 'active', 'not past due: the period is paid');
    const payment = await paymentOf();
    assert.deepEqual([payment.status, payment.provider_payment_id], ['paid', intentId]);
    assert.equal(await settlementsOf(server.ctx, payment.id), 1, 'the wallet credited once');
    const charges = fake.ledger.chargesOf(intentId);
    assert.deepEqual(
      charges.map((charge) => charge.status).sort(),
      ['failed', 'succeeded'],
      "try 1's decline and try 2's charge: the card was charged once",
    );
    assert.equal(renewalsOf(subscription.public_id).length, 1);
    const operation = await operationOf(`kassa-renew-${cycle.id}-2`);
    assert.deepEqual([operation.state, operation.outcome], ['done', 'succeeded']);
    assert.equal((await mailsTo(email, 'Your payment to')).length, 1, 'told once, at the first decline');
    assert.equal((await mailsTo(email, 'Receipt:')).length, 1);
    offsetMs = 0;
  });

  test("a renewal's payment paid by Stripe's webhook while its cycle is dunned ends the dunning at once: the worker's next pass records the period paid, without a call to Stripe", async () => {
    const email = 'stripe-paid-by-webhook@example.com';
    const unrecorded = await chargedUnrecorded('Monthly, paid by webhook', '7.10', email);
    const { subscription, intentId, paymentOf } = unrecorded;
    let { cycle } = unrecorded;
    assert.equal((await subscriptionOf(email))?.status, 'past_due');
    assert.ok(
      Date.parse(cycle.next_attempt_at ?? '') > Date.now() + offsetMs + 30 * 60_000,
      `try 2 put off an hour: ${cycle.next_attempt_at}`,
    );
    // Stripe's webhook brings the success: the payment is paid and settled, and the cycle's next try,
    // an hour away, is due now.
    offsetMs += 60_000;
    const delivered = await deliver(server, fake, eventAbout(fake, 'payment_intent.succeeded', intentId));
    assert.equal(delivered.status, 200, delivered.text);
    assert.equal((await paymentOf()).status, 'paid');
    cycle = await periodOne(subscription.id);
    assert.equal(cycle.status, 'retrying');
    assert.ok(
      Date.parse(cycle.next_attempt_at ?? '') <= Date.now() + offsetMs,
      `due now, not at ${cycle.next_attempt_at}`,
    );

    // One pass of the worker, at once: no call to Stripe, the period paid.
    const calls = fake.requests.length;
    await runRenewals(server.ctx);
    assert.equal(fake.requests.length, calls, 'no call to Stripe: the payment was paid already');
    cycle = await periodOne(subscription.id);
    assert.deepEqual(
      [cycle.status, cycle.attempts, cycle.next_attempt_at, cycle.leased_by],
      ['paid', 1, null, null],
      'no try counted',
    );
    assert.equal((await subscriptionOf(email))?.status, 'active', 'no longer past due');
    const payment = await paymentOf();
    assert.deepEqual([payment.status, payment.provider_payment_id], ['paid', intentId]);
    assert.equal(await settlementsOf(server.ctx, payment.id), 1, 'the wallet credited once');
    assert.deepEqual(
      fake.ledger
        .chargesOf(intentId)
        .map((charge) => charge.status)
        .sort(),
      ['failed', 'succeeded'],
      "try 1's decline and try 2's charge: the card was charged once",
    );
    assert.equal((await mailsTo(email, 'Receipt:')).length, 1);
    assert.equal((await mailsTo(email, 'Your payment to')).length, 1, 'told once, at the first decline');
    // Nothing more on later passes: the period is paid, try 2's refused call is not made again.
    offsetMs += 2 * 3_600_000;
    await runRenewals(server.ctx);
    assert.equal(fake.requests.length, calls);
    assert.equal((await mailsTo(email, 'Receipt:')).length, 1);
    assert.equal(await settlementsOf(server.ctx, payment.id), 1);
    offsetMs = 0;
  });

  const paymentById = (id: number | null) =>
    server.ctx.db
      .selectFrom('payments')
      .selectAll()
      .where('id', '=', id ?? 0)
      .executeTakeFirstOrThrow();
  /** The charges Stripe made on every renewal PaymentIntent of a subscription, by status. */
  const renewalCharges = (subscriptionPublicId: string) =>
    renewalsOf(subscriptionPublicId)
      .flatMap((intent) => fake.ledger.chargesOf(intent.id))
      .map((charge) => charge.status)
      .sort();
  /**
   * Period 1's first try declines (the saved card fails off-session), and an operator then cancels its
   * PaymentIntent by hand in Stripe's Dashboard: final, never charged. The cycle and its payment.
   */
  const renewalIntentCanceledByHand = async (name: string, amount: string, email: string) => {
    const { subscription, cycle } = await firstTryDeclined(name, amount, email);
    const first = await paymentById(cycle.payment_id);
    const intentId = first.provider_payment_id ?? '';
    assert.match(intentId, /^pi_/);
    fake.ledger.cancelPaymentIntent(intentId, { cancellation_reason: 'requested_by_customer' });
    return { subscription, first, intentId };
  };

  test("a renewal PaymentIntent canceled by hand at Stripe is that try's failure: the next try of the dunning charges a new PaymentIntent, once", async () => {
    const email = 'stripe-canceled-intent@example.com';
    const canceled = await renewalIntentCanceledByHand('Monthly, canceled intent', '6.70', email);
    const { subscription, first, intentId } = canceled;
    // No webhook reaches Kassa. The customer saves a new card: try 2 is made at once, on the canceled
    // PaymentIntent, which Stripe refuses to confirm: that is try 2's failure.
    offsetMs = 32 * DAY + HOUR;
    const updated = await call<Json>(server, 'POST', '/api/checkout/sync-status/', {
      body: { token: await newCardSaved(email) },
    });
    assert.equal(updated.body.status, 'SUCCESS', updated.text);
    let cycle = await periodOne(subscription.id);
    assert.deepEqual([cycle.status, cycle.attempts, cycle.payment_id], ['retrying', 2, first.id]);
    assert.ok(cycle.next_attempt_at, 'the next try is on the dunning schedule');
    assert.equal((await paymentById(first.id)).status, 'canceled', "the payment shows Stripe's cancel");
    const failed = await operationOf(`kassa-renew-${cycle.id}-2`);
    assert.deepEqual([failed.state, failed.outcome, failed.outcome_code], ['done', 'failed', 'canceled']);
    assert.equal((await subscriptionOf(email))?.status, 'past_due');
    assert.equal(renewalsOf(subscription.public_id).length, 1, 'no new PaymentIntent yet');

    // Try 3, three days after the first: a new renewal payment, charged with a new PaymentIntent.
    offsetMs = 35 * DAY + 60_000;
    await runRenewals(server.ctx);
    cycle = await periodOne(subscription.id);
    assert.deepEqual([cycle.status, cycle.attempts], ['paid', 3]);
    assert.notEqual(cycle.payment_id, first.id, 'a new renewal payment');
    const second = await paymentById(cycle.payment_id);
    assert.deepEqual([second.status, second.subscription_id], ['paid', subscription.id]);
    assert.equal(await settlementsOf(server.ctx, second.id), 1, 'the wallet credited once');
    assert.deepEqual(
      [(await paymentById(first.id)).status, await settlementsOf(server.ctx, first.id)],
      ['canceled', 0],
    );
    const intents = renewalsOf(subscription.public_id);
    assert.deepEqual(
      intents.map((intent) => [intent.id, intent.status, intent.metadata.kassa_transaction_id]).sort(),
      [
        [intentId, 'canceled', first.public_id],
        [second.provider_payment_id, 'succeeded', second.public_id],
      ].sort(),
    );
    assert.deepEqual(renewalCharges(subscription.public_id), ['failed', 'succeeded'], 'charged once');
    assert.ok(
      fake.requests.some(
        (request) =>
          request.method === 'POST' &&
          request.path === '/v1/payment_intents' &&
          request.idempotencyKey === `kassa-renew-${cycle.id}-3`,
      ),
      'made under try 3 key',
    );
    assert.equal((await subscriptionOf(email))?.status, 'active');
    assert.equal((await mailsTo(email, 'Receipt:')).length, 1);

    // Nothing more: the period is paid.
    const calls = fake.requests.length;
    offsetMs = 40 * DAY;
    await runRenewals(server.ctx);
    assert.equal(fake.requests.length, calls);
    offsetMs = 0;
  });

  test("a renewal PaymentIntent canceled at Stripe, whose webhook Kassa recorded, is replaced by the next try's new PaymentIntent", async () => {
    const email = 'stripe-canceled-webhook@example.com';
    const canceled = await renewalIntentCanceledByHand('Monthly, canceled by webhook', '5.20', email);
    const { subscription, first, intentId } = canceled;
    offsetMs = 32 * DAY + HOUR;
    const delivered = await deliver(server, fake, eventAbout(fake, 'payment_intent.canceled', intentId));
    assert.equal(delivered.status, 200, delivered.text);
    assert.equal((await paymentById(first.id)).status, 'canceled');
    // The new card's try, at once: a new payment and PaymentIntent, charged.
    const updated = await call<Json>(server, 'POST', '/api/checkout/sync-status/', {
      body: { token: await newCardSaved(email) },
    });
    assert.equal(updated.body.status, 'SUCCESS', updated.text);
    const cycle = await periodOne(subscription.id);
    assert.deepEqual([cycle.status, cycle.attempts], ['paid', 2]);
    const second = await paymentById(cycle.payment_id);
    assert.notEqual(second.id, first.id);
    assert.equal(second.status, 'paid');
    assert.equal(await settlementsOf(server.ctx, second.id), 1);
    assert.deepEqual(renewalCharges(subscription.public_id), ['failed', 'succeeded'], 'charged once');
    assert.equal((await subscriptionOf(email))?.status, 'active');
    offsetMs = 0;
  });

  test("a later renewal try whose answer was lost is read back by its known PaymentIntent's id, not by Stripe's lagging search", async () => {
    const email = 'stripe-read-by-id@example.com';
    // Stripe's search shows none of the PaymentIntents made from now on (seconds ago at Stripe).
    fake.ledger.searchLagSince = Math.floor(Date.now() / 1000);
    try {
      const declined = await firstTryDeclined('Monthly, read by id', '4.30', email);
      const { subscription } = declined;
      let { cycle } = declined;
      const intentId = (await paymentById(cycle.payment_id)).provider_payment_id ?? '';
      assert.match(intentId, /^pi_/, 'Kassa knows the PaymentIntent from try 1');

      // Try 2 declines at Stripe, but both answers to its confirm are lost.
      const confirm = /^\/v1\/payment_intents\/pi_\w+\/confirm$/;
      fake.fail({ method: 'POST', path: confirm, mode: '500_after_success', times: 2 });
      offsetMs = 33 * DAY + 60_000;
      await runRenewals(server.ctx);
      cycle = await periodOne(subscription.id);
      assert.deepEqual([cycle.status, cycle.attempts, cycle.next_attempt_at], ['retrying', 2, null]);
      assert.equal(fake.ledger.chargesOf(intentId).length, 2, 'Stripe declined try 2');

      const searches = () =>
        fake.requests.filter((request) => request.path === '/v1/payment_intents/search').length;
      const before = searches();
      for (const minute of [2, 6, 61]) {
        offsetMs = 33 * DAY + (1 + minute) * 60_000;
        await reconcile(server.ctx);
        await runRenewals(server.ctx);
      }
      assert.equal(searches(), before, 'no search: the PaymentIntent is read by its id');
      cycle = await periodOne(subscription.id);
      assert.deepEqual([cycle.status, cycle.attempts], ['retrying', 2], "try 2's decline, recorded");
      assert.equal(
        Date.parse(cycle.next_attempt_at ?? ''),
        Date.parse(cycle.first_attempt_at ?? '') + 3 * DAY,
        'try 3 on the dunning schedule, not at once',
      );
      const read = await operationOf(`kassa-renew-${cycle.id}-2`);
      assert.deepEqual([read.state, read.outcome, read.outcome_code], ['done', 'failed', 'generic_decline']);
      assert.equal(fake.ledger.chargesOf(intentId).length, 2, 'the card was not tried again');
      assert.ok(
        !fake.requests.some((request) => request.idempotencyKey === `kassa-renew-${cycle.id}-3`),
        'try 2 was not taken for never made',
      );
    } finally {
      fake.ledger.searchLagSince = null;
    }
    offsetMs = 0;
  });
  /**
   * A paid signup whose saved payment method is a bank debit (its charges process at the bank for days),
   * and period 1's off-session charge made on it: processing at the bank, its payment pending. Run with
   * Stripe's clock Kassa's (fake.useClock), as in production (the tests move Kassa's).
   */
  const renewalAtBank = async (name: string, amount: string, email: string) => {
    const subscription = await paidSignup(name, amount, email);
    await server.ctx.db
      .updateTable('subscriptions')
      .set({ payment_method_id: 'pm_fake_processing' })
      .where('id', '=', subscription.id)
      .execute();
    offsetMs = 32 * DAY;
    await runRenewals(server.ctx);
    const cycle = await periodOne(subscription.id);
    const payment = await paymentById(cycle.payment_id);
    const intentId = payment.provider_payment_id ?? '';
    assert.equal(fake.ledger.intent(intentId).status, 'processing');
    assert.deepEqual([cycle.status, cycle.attempts, cycle.next_attempt_at], ['processing', 1, null]);
    assert.equal(payment.status, 'pending', 'the bank is deciding');
    return { subscription, cycle, payment, intentId };
  };

  test("a renewal whose off-session charge is processing at the bank, then declined: the try is declined once (past due, one mail), its payment failed, and the new card's try pays the period on a new payment, once", async () => {
    const email = 'stripe-pending-declined@example.com';
    const stripeClock = fake.useClock(() => Date.now() + offsetMs);
    try {
      const atBank = await renewalAtBank('Monthly, bank debit', '7.10', email);
      const { subscription, intentId } = atBank;
      let { cycle } = atBank;
      const first = atBank.payment;
      assert.equal((await subscriptionOf(email))?.status, 'active');

      // The bank declines; Stripe's webhook says so at once, and the reconciler reads the try back.
      fake.ledger.settleProcessing(intentId, false);
      const hook = await deliver(server, fake, eventAbout(fake, 'payment_intent.payment_failed', intentId));
      assert.equal(hook.status, 200, hook.text);
      await reconcileAt([2, 6, 61]);
      cycle = await periodOne(subscription.id);
      assert.equal(cycle.status, 'retrying');
      assert.equal(cycle.attempts, 1, 'the declined try is not made again as one never made');
      assert.ok(cycle.next_attempt_at, 'the next try is on the dunning schedule');
      const read = await operationOf(`kassa-renew-${cycle.id}-1`);
      assert.deepEqual([read.state, read.outcome, read.outcome_code], ['done', 'failed', 'generic_decline']);
      assert.equal((await subscriptionOf(email))?.status, 'past_due');
      assert.equal((await paymentById(first.id)).status, 'failed', "the bank's decline fails the payment");
      assert.deepEqual(renewalCharges(subscription.public_id), ['failed'], 'the card was not charged again');
      assert.equal((await mailsTo(email, 'Your payment to')).length, 1);

      // The customer saves a card on the update-card page: the next try is made at once, on a new
      // renewal payment (the failed one takes no more attempts), and pays the period.
      offsetMs = 32 * DAY + 2 * HOUR;
      const updated = await call<Json>(server, 'POST', '/api/checkout/sync-status/', {
        body: { token: await newCardSaved(email) },
      });
      assert.equal(updated.body.status, 'SUCCESS', updated.text);
      cycle = await periodOne(subscription.id);
      assert.deepEqual([cycle.status, cycle.attempts], ['paid', 2]);
      assert.notEqual(cycle.payment_id, first.id, 'a new renewal payment');
      const second = await paymentById(cycle.payment_id);
      assert.deepEqual([second.status, second.subscription_id], ['paid', subscription.id]);
      assert.equal((await subscriptionOf(email))?.status, 'active');
      assert.deepEqual(
        [await settlementsOf(server.ctx, first.id), await settlementsOf(server.ctx, second.id)],
        [0, 1],
        'renewed once',
      );
      assert.deepEqual(renewalCharges(subscription.public_id), ['failed', 'succeeded']);
      assert.equal(fake.ledger.intent(intentId).status, 'requires_payment_method', 'never confirmed again');
      assert.deepEqual(await eventStatuses(server.ctx, first.public_id), [
        'processing',
        'pending',
        'pending',
        'failed',
      ]);
      assert.deepEqual(await eventStatuses(server.ctx, second.public_id), ['processing', 'paid']);
      assert.equal((await mailsTo(email, 'Receipt:')).length, 1);

      // Nothing more: the period is paid, and no read moves the failed payment.
      offsetMs = 40 * DAY;
      await reconcile(server.ctx);
      await runRenewals(server.ctx);
      assert.deepEqual(renewalCharges(subscription.public_id), ['failed', 'succeeded']);
      assert.ok(!fake.requests.some((request) => request.idempotencyKey === `kassa-renew-${cycle.id}-3`));
      assert.deepEqual(
        [(await periodOne(subscription.id)).status, (await paymentById(first.id)).status],
        ['paid', 'failed'],
      );
    } finally {
      stripeClock.restore();
      offsetMs = 0;
    }
  });

  /** A session of the owner's now (Kassa's clock may be months past the first login's). */
  const ownerToken = async () => {
    const login = await call<{ token: string }>(server, 'POST', '/api/auth/login/', {
      body: { email: owner.email, password: owner.password },
    });
    assert.equal(login.status, 200, login.text);
    return login.body.token;
  };

  /**
   * Period 1's off-session charge is processing at the bank (the saved payment method a bank debit); the
   * reconciler reads the try back until its last read (20 hours), which flags it, so the merchant's cancel
   * now, refused while the try was being read, is allowed from then on (`cancelNow`). Run with Stripe's
   * clock Kassa's (fake.useClock).
   */
  const flaggedAtBank = async (name: string, amount: string, email: string) => {
    const atBank = await renewalAtBank(name, amount, email);
    const cancelNow = async () =>
      call<Json>(server, 'POST', `/api/subscriptions/${atBank.subscription.public_id}/cancel/`, {
        token: await ownerToken(),
        body: { at_period_end: false },
      });
    assert.equal((await cancelNow()).status, 409, 'the try is being read back');
    await reconcileAt([2, 6, 61, 6 * 60 + 1, 20 * 60 + 1]);
    assert.equal((await operationOf(`kassa-renew-${atBank.cycle.id}-1`)).state, 'flagged');
    offsetMs = 32 * DAY + 21 * HOUR;
    return { ...atBank, cancelNow };
  };

  /**
   * Period 1 paid after its subscription was canceled (one receipt sent): weeks later, nothing more, no
   * second settlement, receipt or charge, no new period for a canceled subscription, the period still paid.
   */
  const nothingMoreAfterPaidPeriod = async (
    {
      subscription,
      cycle,
      payment,
    }: Pick<Awaited<ReturnType<typeof renewalAtBank>>, 'subscription' | 'cycle' | 'payment'>,
    email: string,
  ) => {
    offsetMs = 70 * DAY;
    await syncDuePayments(server.ctx);
    await reconcile(server.ctx);
    await runRenewals(server.ctx);
    assert.equal(await settlementsOf(server.ctx, payment.id), 1);
    assert.equal((await mailsTo(email, 'Receipt:')).length, 1);
    assert.deepEqual(renewalCharges(subscription.public_id), ['succeeded'], 'charged once');
    assert.ok(!fake.requests.some((request) => request.idempotencyKey === `kassa-renew-${cycle.id}-2`));
    assert.equal((await periodOne(subscription.id)).status, 'paid');
    const cycles = await server.ctx.db
      .selectFrom('subscription_cycles')
      .select('period_index')
      .where('subscription_id', '=', subscription.id)
      .execute();
    assert.deepEqual(cycles.map((row) => row.period_index).sort(), [0, 1], 'no new period');
    assert.deepEqual(await eventStatuses(server.ctx, payment.public_id), ['processing', 'pending', 'paid']);
  };

  /**
   * flaggedAtBank, then the merchant's cancel now goes ahead: the cycle void, the payment left pending
   * (the bank still decides). Three days later the bank pays (or declines), and `check` looks at what
   * follows, with Stripe's clock Kassa's (as in production) until it returns.
   */
  const bankDecidesAfterCancel = async (
    plan: { name: string; amount: string; email: string; bankPays: boolean },
    check: (pending: Awaited<ReturnType<typeof renewalAtBank>>) => Promise<void>,
  ) => {
    const stripeClock = fake.useClock(() => Date.now() + offsetMs);
    try {
      const { subscription, cycle, payment, intentId, cancelNow } = await flaggedAtBank(
        plan.name,
        plan.amount,
        plan.email,
      );
      const canceled = await cancelNow();
      assert.equal(canceled.status, 200, canceled.text);
      const after = await subscriptionOf(plan.email);
      assert.ok(after);
      assert.deepEqual([after.status, after.cancel_reason], ['canceled', 'merchant']);
      assert.equal((await periodOne(subscription.id)).status, 'void');
      assert.equal((await paymentById(payment.id)).status, 'pending', 'Kassa cannot take the charge back');

      offsetMs = 35 * DAY;
      fake.ledger.settleProcessing(intentId, plan.bankPays);
      await check({ subscription: after, cycle, payment, intentId });
    } finally {
      stripeClock.restore();
      offsetMs = 0;
    }
  };

  test('a renewal charge processing at the bank when the merchant cancels now is followed: the bank pays, the payment is paid and settled once, the period paid, the subscription stays canceled, one receipt', async () => {
    const email = 'stripe-pending-canceled-paid@example.com';
    const plan = { name: 'Monthly, debit paid after cancel', amount: '8.20', email, bankPays: true };
    await bankDecidesAfterCancel(plan, async ({ subscription, cycle, payment }) => {
      // The sync loop, which reads every pending payment, finds it paid.
      await syncDuePayments(server.ctx);
      const paid = await paymentById(payment.id);
      assert.equal(paid.status, 'paid', 'the money is real');
      assert.equal(await settlementsOf(server.ctx, payment.id), 1);
      const period = await periodOne(subscription.id);
      assert.deepEqual([period.status, period.payment_id], ['paid', payment.id], 'the period is paid');
      const after = await subscriptionOf(email);
      assert.deepEqual(
        [after?.status, after?.cancel_reason, after?.canceled_at, after?.next_renewal_at],
        ['canceled', 'merchant', subscription.canceled_at, null],
        'a canceled subscription stays canceled',
      );
      assert.equal((await mailsTo(email, 'Receipt:')).length, 1);
      const detail = await call<Json>(server, 'GET', `/api/subscriptions/${subscription.public_id}/`, {
        token: await ownerToken(),
      });
      assert.equal(detail.status, 200, detail.text);
      const shown = (detail.body.cycles as Json[]).find((row) => row.period_index === 1);
      assert.deepEqual([shown?.status, shown?.transaction_id], ['paid', paid.public_id]);

      await nothingMoreAfterPaidPeriod({ subscription, cycle, payment }, email);
    });
  });

  test("a renewal charge processing at the bank when the merchant cancels now, then declined, fails its payment (not pending for ever): Stripe's webhook stops the PaymentIntent, nothing is charged or settled", async () => {
    const email = 'stripe-pending-canceled-declined@example.com';
    const plan = { name: 'Monthly, debit declined after cancel', amount: '8.30', email, bankPays: false };
    await bankDecidesAfterCancel(plan, async ({ subscription, payment, intentId }) => {
      const hook = await deliver(server, fake, eventAbout(fake, 'payment_intent.payment_failed', intentId));
      assert.equal(hook.status, 200, hook.text);
      assert.equal((await paymentById(payment.id)).status, 'failed', "the bank's decline fails the payment");
      assert.equal(
        fake.ledger.intent(intentId).status,
        'canceled',
        'stopped at Stripe: its client secret can never confirm it again',
      );
      assert.equal((await periodOne(subscription.id)).status, 'void');
      assert.equal((await subscriptionOf(email))?.status, 'canceled');
      assert.equal(await settlementsOf(server.ctx, payment.id), 0);
      assert.deepEqual(await mailsTo(email, 'Receipt:'), []);
      assert.deepEqual(await eventStatuses(server.ctx, payment.public_id), [
        'processing',
        'pending',
        'failed',
      ]);

      // The sync loop has nothing more to read of it, and nothing moves.
      const reads = () =>
        fake.requests.filter((request) => request.method === 'GET' && request.path.includes(intentId)).length;
      const before = reads();
      offsetMs = 40 * DAY;
      await syncDuePayments(server.ctx);
      await reconcile(server.ctx);
      await runRenewals(server.ctx);
      assert.equal(reads(), before, 'no longer read by the sync loop');
      assert.equal((await paymentById(payment.id)).status, 'failed');
      assert.deepEqual(renewalCharges(subscription.public_id), ['failed']);
    });
  });
  /**
   * After a cancel now that found period 1's renewal payment paid (flaggedAtBank, the bank paid): the
   * period is paid (not void beside a paid payment), the payment settled once, one receipt, the
   * subscription canceled now by the merchant; later passes charge, settle and mail nothing more.
   */
  const paidPeriodKeptByCancel = async (
    { subscription, cycle, payment }: Awaited<ReturnType<typeof renewalAtBank>>,
    email: string,
    canceled: { status: number; text: string; body: Json },
  ) => {
    assert.equal(canceled.status, 200, canceled.text);
    assert.equal(canceled.body.status, 'canceled');
    const paid = await paymentById(payment.id);
    assert.equal(paid.status, 'paid');
    const period = await periodOne(subscription.id);
    assert.deepEqual([period.status, period.payment_id], ['paid', payment.id], 'the period was paid');
    const after = await subscriptionOf(email);
    assert.deepEqual(
      [after?.status, after?.cancel_reason, after?.next_renewal_at],
      ['canceled', 'merchant', null],
      'the cancel still ends the subscription',
    );
    assert.equal(await settlementsOf(server.ctx, payment.id), 1);
    assert.equal((await mailsTo(email, 'Receipt:')).length, 1, 'the receipt, once');
    const shown = (canceled.body.cycles as Json[]).find((row) => row.period_index === 1);
    assert.deepEqual([shown?.status, shown?.transaction_id], ['paid', paid.public_id]);
    await nothingMoreAfterPaidPeriod({ subscription, cycle, payment }, email);
  };

  /** `body` with Stripe's clock Kassa's (as in production), restored after it. */
  const onStripeClock = async (body: () => Promise<void>) => {
    const stripeClock = fake.useClock(() => Date.now() + offsetMs);
    try {
      await body();
    } finally {
      stripeClock.restore();
      offsetMs = 0;
    }
  };

  /**
   * flaggedAtBank, then the bank pays and the sync loop records it: the payment paid and settled, while
   * the cycle stays open (its try flagged: no next try), no receipt yet.
   */
  const paidWhileFlagged = async (name: string, amount: string, email: string) => {
    const atBank = await flaggedAtBank(name, amount, email);
    fake.ledger.settleProcessing(atBank.intentId, true);
    await syncDuePayments(server.ctx);
    assert.equal((await paymentById(atBank.payment.id)).status, 'paid');
    assert.equal(await settlementsOf(server.ctx, atBank.payment.id), 1);
    assert.equal((await periodOne(atBank.subscription.id)).status, 'processing');
    assert.deepEqual(await mailsTo(email, 'Receipt:'), []);
    return atBank;
  };

  test('a renewal charge the bank paid, recorded while its flagged try waited, then a cancel now: the period is paid, not void, settled once, one receipt, the subscription canceled', () =>
    onStripeClock(async () => {
      const email = 'stripe-paid-then-canceled@example.com';
      const atBank = await paidWhileFlagged('Monthly, debit paid before cancel', '8.40', email);
      await paidPeriodKeptByCancel(atBank, email, await atBank.cancelNow());
    }));

  test("a renewal charge the bank paid, recorded while its flagged try waited, then a cancel at the period's end: at that end the period is paid, not void, one receipt, and the subscription ends", () =>
    onStripeClock(async () => {
      const email = 'stripe-paid-then-period-end@example.com';
      const atBank = await paidWhileFlagged('Monthly, debit paid before period end', '8.60', email);
      const asked = await call<Json>(
        server,
        'POST',
        `/api/subscriptions/${atBank.subscription.public_id}/cancel/`,
        { token: await ownerToken(), body: { at_period_end: true } },
      );
      assert.equal(asked.status, 200, asked.text);
      assert.equal((await periodOne(atBank.subscription.id)).status, 'processing');

      // Period 1 ends (two months after the signup): the cancel at its end closes the open cycle.
      offsetMs = 63 * DAY;
      await runRenewals(server.ctx);
      const period = await periodOne(atBank.subscription.id);
      assert.deepEqual(
        [period.status, period.payment_id],
        ['paid', atBank.payment.id],
        'the period was paid',
      );
      const after = await subscriptionOf(email);
      assert.deepEqual([after?.status, after?.cancel_reason], ['canceled', 'merchant']);
      assert.equal(await settlementsOf(server.ctx, atBank.payment.id), 1);
      assert.equal((await mailsTo(email, 'Receipt:')).length, 1, 'the receipt, once');
      assert.equal((await mailsTo(email, 'Your Monthly, debit paid before period end')).length, 1, 'ended');
      await nothingMoreAfterPaidPeriod(atBank, email);
    }));

  test(
    "a cancel now that waits for a renewal payment's lock while a read records the bank's success: the period is paid, not void, one receipt",
    { skip: DB_KIND === 'sqlite' && 'row locks: SQLite runs one write transaction at a time' },
    () =>
      onStripeClock(async () => {
        const email = 'stripe-paid-during-cancel@example.com';
        const atBank = await flaggedAtBank('Monthly, debit paid during cancel', '8.50', email);
        fake.ledger.settleProcessing(atBank.intentId, true);
        const state = await readProviderPayment(server.ctx, atBank.payment);
        assert.ok(state);
        assert.equal(state.outcome, 'PAYMENT_SUCCESS');
        // A read of the payment (a webhook's, the sync loop's) in another connection: it holds the
        // payment's row lock while the cancel voids its cycle and then waits for that lock.
        const locked = Promise.withResolvers<number>();
        const released = Promise.withResolvers<void>();
        const read = server.ctx.db.transaction().execute(async (trx) => {
          const backend = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
          await lockPayment(trx, atBank.payment.id);
          locked.resolve(backend.rows[0].pid);
          await released.promise;
          return applyProviderState(trx, atBank.payment.id, state, server.ctx.clock().toISOString());
        });
        read.catch(locked.reject);
        const pid = await locked.promise;
        const cancel = atBank.cancelNow();
        try {
          const deadline = Date.now() + 10_000;
          for (;;) {
            const waiting = await sql<{ waiting: boolean }>`select exists (
                select 1 from pg_stat_activity where ${pid}::int = any(pg_blocking_pids(pid))
              ) as waiting`.execute(server.ctx.db);
            if (waiting.rows[0].waiting) break;
            assert.ok(Date.now() < deadline, "the cancel never waited for the payment's lock");
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
        } finally {
          released.resolve();
        }
        // The cycle's void was not committed: the read found no closed cycle to pay, and owes no receipt.
        const applied = await read;
        assert.deepEqual([applied.payment.status, applied.closedPeriodPaid], ['paid', null]);
        await afterPaymentRead(server.ctx, applied);

        await paidPeriodKeptByCancel(atBank, email, await cancel);
      }),
  );
});
