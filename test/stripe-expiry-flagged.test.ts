// An expired checkout's payment at a Stripe that stops answering: the expirer's stop at the provider (its
// last read and its cancel of the PaymentIntent) becomes a provider operation, kassa-cancel-TX…, that the
// reconciler retries on its schedule instead of the expirer asking again at every round for ever. While
// Stripe stays silent the payment stays `processing` (the customer's browser may still pay), and after the
// schedule's last read the call is flagged for review (kassa operation list, the payment's provider_review)
// like any other provider call whose outcome is unknown. kassa operation resolve then settles it from one
// more read of Stripe, never charging or canceling anything itself: a PaymentIntent canceled (the cancel
// landed, its answer lost) fails the payment, as the expiry does; one the browser paid meanwhile is paid
// and settled once; one still open is recorded as not final and the expirer stops it on its next round.
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import { expireCheckouts } from '../src/modules/payments/sync.ts';
import { listFlaggedOperations, resolveFlaggedOperation } from '../src/provider/operations/resolve.ts';
import { operationByKey } from '../src/provider/operations/store.ts';
import { operationHandlers } from '../src/worker/loops.ts';
import { createCheckout, paymentRow } from './helpers/checkout.ts';
import type { FakeStripe, FaultRule } from './helpers/fake-stripe/server.ts';
import { reconcile, settlementsOf } from './helpers/provider-checks.ts';
import { call, DB_KIND, type Merchant, type TestServer } from './helpers/server.ts';
import { CANCEL_PATH, hostedStep, type Json, startShopWithStripe } from './helpers/stripe.ts';

const DAY = 86_400_000;
const SCHEDULE_MS = [300, 600, 1200, 2400, 4800];
const readPath = /^\/v1\/payment_intents\//;

describe(`expiry at a Stripe that stops answering ends flagged for review (${DB_KIND})`, () => {
  let fake: FakeStripe;
  let server: TestServer;
  let close: () => Promise<void>;
  let merchant: Merchant;
  let key: string;
  let offsetMs = 0;
  before(async () => {
    ({ fake, server, close, merchant, key } = await startShopWithStripe('Silent Stripe Shop', {
      worker: false,
      clock: () => new Date(Date.now() + offsetMs),
      env: {
        KASSA_PROVIDER_TIMEOUT_MS: '1500',
        KASSA_RECONCILE_SCHEDULE_MS: SCHEDULE_MS.join(','),
      },
    }));
  });
  after(() => close());

  /** The faults injected by the running test, ended after it (a failed test leaves none behind). */
  let injected: { stop: () => void }[] = [];
  function stopFaults() {
    for (const rule of injected) rule.stop();
    injected = [];
  }
  afterEach(stopFaults);

  /**
   * Stripe answers none of Kassa's cancels and reads (a 500 each time) until `stop`; the customer's browser
   * still reaches it. `landed`: the expirer's last look is answered, and its cancel is made at Stripe but
   * both tries of it (the SDK sends a 5xx once more) answer 500, so the answer is lost; Stripe is silent
   * from then on.
   */
  function silence(landed: boolean) {
    const fail = (rule: FaultRule) => injected.push(fake.fail(rule));
    if (landed) fail({ method: 'POST', path: CANCEL_PATH, mode: '500_after_success', times: 2 });
    fail({ method: 'POST', path: CANCEL_PATH, mode: '500', times: 1_000_000 });
    const silenceReads = () => fail({ method: 'GET', path: readPath, mode: '500', times: 1_000_000 });
    if (!landed) silenceReads();
    return { silenceReads, stop: stopFaults };
  }

  const kassaRequests = () => fake.requests.filter((request) => !request.path.includes('/confirm')).length;

  /** A checkout whose PaymentIntent the page opened, expired while Stripe is silent, handed to the reconciler. */
  async function expiredWhileSilent(landed = false) {
    const checkout = await createCheckout(server, key);
    const { page, provider } = await hostedStep(server, checkout.token);
    const transactionId = page.transaction_id as string;
    offsetMs += DAY + 1000;
    const silent = silence(landed);
    // The round does not fail: the unanswered stop is recorded for the reconciler, which owns it now.
    await expireCheckouts(server.ctx);
    if (landed) silent.silenceReads();
    const operationKey = `kassa-cancel-${transactionId}`;
    const recorded = await operationByKey(server.ctx.db, operationKey);
    assert.equal(recorded?.state, 'unknown', 'the unanswered stop is a provider operation');
    assert.equal(recorded.kind, 'payment_cancel');
    assert.equal((await paymentRow(server, transactionId)).status, 'processing', 'not failed unanswered');
    // The expirer leaves it to the reconciler's schedule: its next rounds do not ask Stripe again.
    const asked = kassaRequests();
    assert.equal(await expireCheckouts(server.ctx), 0);
    assert.equal(kassaRequests(), asked, 'the expirer no longer asks Stripe about it');
    return {
      ...checkout,
      transactionId,
      operationKey,
      clientSecret: provider.client_secret as string,
      silent,
    };
  }

  /** The reconciler's reads on its schedule, every one unanswered: the call ends flagged. */
  async function readUntilFlagged(operationKey: string) {
    for (let read = 0; read < SCHEDULE_MS.length; read += 1) {
      offsetMs += SCHEDULE_MS[SCHEDULE_MS.length - 1];
      assert.equal(await reconcile(server.ctx), 0, 'nothing settled while Stripe is silent');
    }
    const flagged = await operationByKey(server.ctx.db, operationKey);
    assert.equal(flagged?.state, 'flagged');
    assert.equal(flagged.reads, SCHEDULE_MS.length);
    const listed = await listFlaggedOperations(server.ctx.db, operationHandlers, { limit: 100 });
    const entry = listed.find((row) => row.operation === operationKey);
    assert.ok(entry, 'kassa operation list shows it');
    assert.equal(entry.kind, 'payment_cancel');
    assert.equal(entry.why, 'unknown');
    assert.equal(entry.resolve, `kassa operation resolve ${operationKey}`);
    assert.equal(entry.reference, flagged.reference);
    // Flagged: nothing reads it again, and the expirer does not take it back.
    const asked = kassaRequests();
    offsetMs += DAY;
    assert.equal(await reconcile(server.ctx), 0);
    assert.equal(await expireCheckouts(server.ctx), 0);
    assert.equal(kassaRequests(), asked);
  }

  async function providerReview(transactionId: string) {
    const login = await call<{ token: string }>(server, 'POST', '/api/auth/login/', {
      body: { email: merchant.email, password: merchant.password },
    });
    const detail = await call<Json>(server, 'GET', `/api/payments/${transactionId}/`, {
      token: login.body.token,
    });
    assert.equal(detail.status, 200, detail.text);
    return detail.body.provider_review as Json | null;
  }

  const resolve = (operationKey: string) =>
    resolveFlaggedOperation(server.ctx, operationHandlers, operationKey);

  test('a cancel that landed but was never answered: flagged after the schedule, resolved as failed from the canceled PaymentIntent', async () => {
    const checkout = await expiredWhileSilent(true);
    const row = await paymentRow(server, checkout.transactionId);
    assert.equal(fake.ledger.intent(row.provider_payment_id as string).status, 'canceled');
    await readUntilFlagged(checkout.operationKey);
    assert.equal((await paymentRow(server, checkout.transactionId)).status, 'processing');
    const review = await providerReview(checkout.transactionId);
    assert.deepEqual([review?.state, review?.operation], ['flagged', checkout.operationKey]);

    // Still silent: the operator's resolve is refused and changes nothing.
    await assert.rejects(resolve(checkout.operationKey), /could not read/);
    assert.equal((await operationByKey(server.ctx.db, checkout.operationKey))?.state, 'flagged');

    checkout.silent.stop();
    const posts = fake.requests.filter((request) => request.method === 'POST').length;
    const resolved = await resolve(checkout.operationKey);
    assert.equal(
      fake.requests.filter((request) => request.method === 'POST').length,
      posts,
      'the resolution only reads',
    );
    assert.equal(resolved.payment_status, 'failed');
    assert.equal(resolved.waiting, null);
    assert.equal(resolved.outcome, 'succeeded');
    const failed = await paymentRow(server, checkout.transactionId);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.provider_conflict, null);
    assert.equal(await settlementsOf(server.ctx, failed.id), 0);
    assert.equal((await operationByKey(server.ctx.db, checkout.operationKey))?.state, 'done');
    assert.equal(await providerReview(checkout.transactionId), null);
    await assert.rejects(resolve(checkout.operationKey), /is not flagged/);
  });

  test('the browser paid while Stripe was silent to Kassa: flagged, then resolved as paid and settled once, never charged again', async () => {
    const checkout = await expiredWhileSilent();
    const late = await fake.confirmInBrowser(checkout.clientSecret, 'pm_card_visa');
    assert.equal(late.status, 200, 'the PaymentIntent was never canceled: the browser can still pay');
    await readUntilFlagged(checkout.operationKey);
    assert.equal((await paymentRow(server, checkout.transactionId)).status, 'processing');

    checkout.silent.stop();
    const posts = fake.requests.filter((request) => request.method === 'POST').length;
    const resolved = await resolve(checkout.operationKey);
    assert.equal(fake.requests.filter((request) => request.method === 'POST').length, posts);
    assert.equal(resolved.payment_status, 'paid');
    assert.equal(resolved.waiting, null);
    const paid = await paymentRow(server, checkout.transactionId);
    assert.equal(paid.status, 'paid');
    assert.equal(paid.provider_conflict, null);
    assert.equal(await settlementsOf(server.ctx, paid.id), 1);
    assert.equal(fake.ledger.intent(paid.provider_payment_id as string).status, 'succeeded');
    // The expirer has nothing left to do with it.
    assert.equal(await expireCheckouts(server.ctx), 0);
    assert.equal((await paymentRow(server, checkout.transactionId)).status, 'paid');
  });

  test('a PaymentIntent still open when resolved is recorded as not final; the next expiry round cancels it and fails the payment', async () => {
    const checkout = await expiredWhileSilent();
    await readUntilFlagged(checkout.operationKey);
    checkout.silent.stop();
    const resolved = await resolve(checkout.operationKey);
    assert.equal(resolved.payment_status, 'processing');
    assert.equal(resolved.waiting, 'still processing at the provider');
    const row = await paymentRow(server, checkout.transactionId);
    assert.equal(fake.ledger.intent(row.provider_payment_id as string).status, 'requires_payment_method');
    assert.equal(await expireCheckouts(server.ctx), 1);
    assert.equal((await paymentRow(server, checkout.transactionId)).status, 'failed');
    assert.equal(fake.ledger.intent(row.provider_payment_id as string).status, 'canceled');
  });

  test('a reconciler read that finds Stripe answering again settles the call before any flag', async () => {
    const checkout = await expiredWhileSilent();
    checkout.silent.stop();
    offsetMs += SCHEDULE_MS[0];
    assert.equal(await reconcile(server.ctx), 1);
    const row = await paymentRow(server, checkout.transactionId);
    assert.equal(row.status, 'failed');
    assert.equal(fake.ledger.intent(row.provider_payment_id as string).status, 'canceled');
    const done = await operationByKey(server.ctx.db, checkout.operationKey);
    assert.deepEqual([done?.state, done?.outcome], ['done', 'succeeded']);
  });
});
