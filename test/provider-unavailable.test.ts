// The payment provider does not answer (a 5xx, a rate limit, a timeout) while a customer's or a merchant's
// request waits on it: Kassa answers 503 {"detail"} with Retry-After, never a 500 and never Stripe's own
// words, and changes nothing of its own (the payment and the checkout stay as they were; the next sync or
// the worker settles them once Stripe answers again). And the expirer: payments whose stop a provider
// does not answer are handed to the reconciler (a payment_cancel operation) and never keep the others'
// expiry out.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { PROVIDER_RETRY_AFTER_S, PROVIDER_UNAVAILABLE_DETAIL } from '../src/http/errors.ts';
import { expireCheckouts } from '../src/modules/payments/sync.ts';
import { operationByKey } from '../src/provider/operations/store.ts';
import { CARDS, createCheckout, pay, paymentRow } from './helpers/checkout.ts';
import type { FakeStripe, FaultRule } from './helpers/fake-stripe/server.ts';
import {
  type ApiResponse,
  call,
  createTestKey,
  createTestMerchant,
  DB_KIND,
  type TestServer,
} from './helpers/server.ts';
import { deliver, eventAbout, hostedStep, type Json, startWithStripe } from './helpers/stripe.ts';

const DAY = 86_400_000;
const cancelPath = /^\/v1\/payment_intents\/pi_\w+\/cancel$/;
const intentPath = /^\/v1\/payment_intents\/pi_\w+$/;

type Fault = Omit<FaultRule, 'method' | 'path'>;
// The SDK asks once more after a 5xx or a timeout (maxNetworkRetries 1); after a 429 it does not.
const FAULTS: [string, Fault][] = [
  ['a 500', { mode: '500', times: 2 }],
  ['a rate limit (429)', { mode: '429', times: 1 }],
  ['no answer (a timeout)', { mode: 'timeout_after_success', times: 2 }],
];

function assertUnavailable(answer: ApiResponse<Json>) {
  assert.equal(answer.status, 503, answer.text);
  assert.deepEqual(answer.body, { detail: PROVIDER_UNAVAILABLE_DETAIL });
  assert.equal(answer.headers.get('retry-after'), String(PROVIDER_RETRY_AFTER_S));
  assert.doesNotMatch(answer.text, /stripe|rate limit|injected/i, "never the provider's own words");
}

describe(`the provider does not answer a request (${DB_KIND})`, () => {
  let fake: FakeStripe;
  let server: TestServer;
  let close: () => Promise<void>;
  let key: string;
  let offsetMs = 0;
  before(async () => {
    ({ fake, server, close } = await startWithStripe({
      worker: false,
      clock: () => new Date(Date.now() + offsetMs),
      // A request that never answers fails in seconds (the SDK's timeout, and its one retry).
      env: { KASSA_PROVIDER_TIMEOUT_MS: '1000' },
    }));
    const merchant = await createTestMerchant(server, 'Provider Down Shop');
    key = await createTestKey(server, merchant);
  });
  after(() => close());

  /** A checkout whose PaymentIntent the page opened; its payment row and checkout row as they stand. */
  async function openCheckout() {
    const checkout = await createCheckout(server, key);
    const { page } = await hostedStep(server, checkout.token);
    const transactionId = page.transaction_id as string;
    const rows = async () => ({
      payment: await paymentRow(server, transactionId),
      session: await server.ctx.db
        .selectFrom('checkout_sessions')
        .selectAll()
        .where('public_id', '=', checkout.checkout_id)
        .executeTakeFirstOrThrow(),
    });
    return { ...checkout, transactionId, rows };
  }

  for (const [name, fault] of FAULTS) {
    test(`sync-status of an expired checkout whose cancel gets ${name}: 503, nothing changed`, async () => {
      const checkout = await openCheckout();
      offsetMs += DAY + 1000;
      const before = await checkout.rows();
      assert.equal(before.payment.status, 'processing');
      fake.fail({ method: 'POST', path: cancelPath, ...fault });
      const sync = await call<Json>(server, 'POST', '/api/checkout/sync-status/', {
        body: { token: checkout.token },
      });
      assertUnavailable(sync);
      assert.deepEqual(await checkout.rows(), before, 'the payment and its checkout are as they were');
      // Stripe answers again: the same call settles it.
      const again = await call<Json>(server, 'POST', '/api/checkout/sync-status/', {
        body: { token: checkout.token },
      });
      assert.deepEqual([again.status, again.body.payment_status], [200, 'failed'], again.text);
    });

    test(`the customer's cancel whose cancel at Stripe gets ${name}: 503, nothing changed`, async () => {
      const checkout = await openCheckout();
      const before = await checkout.rows();
      fake.fail({ method: 'POST', path: cancelPath, ...fault });
      const canceled = await call<Json>(server, 'POST', `/api/checkout/${checkout.token}/cancel/`);
      assertUnavailable(canceled);
      const now = await checkout.rows();
      assert.deepEqual(now, before, 'still processing, the checkout not canceled');
      // Stripe answers again: the same call completes the cancel. A cancel that landed (its answer lost) is
      // read back first, and the retry finishes it rather than finding the checkout gone (410).
      const again = await call<Json>(server, 'POST', `/api/checkout/${checkout.token}/cancel/`);
      assert.deepEqual([again.status, again.body.status], [200, 'CANCELED'], again.text);
      assert.equal((await paymentRow(server, checkout.transactionId)).status, 'canceled');
    });
  }

  test("the merchant's sync-status (by checkout_id) when Stripe's read answers 500: 503, nothing changed", async () => {
    const checkout = await openCheckout();
    const before = await checkout.rows();
    fake.fail({ method: 'GET', path: intentPath, mode: '500', times: 2 });
    const sync = await call<Json>(server, 'POST', '/api/checkout/sync-status/', {
      apiKey: key,
      body: { checkout_id: checkout.checkout_id },
    });
    assertUnavailable(sync);
    assert.deepEqual(await checkout.rows(), before);
  });

  for (const [name, fault] of FAULTS) {
    test(`a new checkout whose PaymentIntent Stripe does not open (${name}): 200 with Retry-After, then the client secret without`, async () => {
      const checkout = await createCheckout(server, key);
      fake.fail({ method: 'POST', path: /^\/v1\/payment_intents$/, ...fault });
      const read = () => call<Json>(server, 'GET', `/api/checkout/${checkout.token}/`);
      const first = await read();
      assert.equal(first.status, 200, first.text);
      assert.equal(first.body.status, 'open');
      assert.equal((first.body.provider as Json).client_secret, null, 'not opened at Stripe');
      // The page reads again when the server says, as after the provider's 503s.
      assert.equal(first.headers.get('retry-after'), String(PROVIDER_RETRY_AFTER_S));
      // A read that still finds Stripe silent (a timed-out call's own retry may take the next fault) says
      // the same; the one that opens it carries the client secret and no Retry-After.
      let next = await read();
      for (let reads = 2; (next.body.provider as Json).client_secret === null && reads < 4; reads++) {
        assert.equal(next.headers.get('retry-after'), String(PROVIDER_RETRY_AFTER_S));
        next = await read();
      }
      assert.equal(next.status, 200, next.text);
      assert.match(String((next.body.provider as Json).client_secret), /^pi_\w+_secret_/);
      assert.equal(next.headers.get('retry-after'), null, 'opened: nothing to wait for');
      assert.equal(next.body.transaction_id, first.body.transaction_id, 'the same payment');
    });
  }

  test("the hosted page when Stripe's read of the client secret answers 429: 503", async () => {
    const checkout = await openCheckout();
    const before = await checkout.rows();
    fake.fail({ method: 'GET', path: intentPath, mode: '429', times: 1 });
    const page = await call<Json>(server, 'GET', `/api/checkout/${checkout.token}/`);
    assertUnavailable(page);
    assert.deepEqual(await checkout.rows(), before);
    assert.equal((await call<Json>(server, 'GET', `/api/checkout/${checkout.token}/`)).status, 200);
  });

  test('a Stripe webhook whose re-read answers 500: 503 (Stripe delivers it again), applied on the next delivery', async () => {
    const checkout = await openCheckout();
    const before = await checkout.rows();
    const { provider } = await hostedStep(server, checkout.token);
    await fake.confirmInBrowser(provider.client_secret as string, 'pm_card_visa');
    const event = eventAbout(fake, 'payment_intent.succeeded', before.payment.provider_payment_id as string);
    fake.fail({ method: 'GET', path: intentPath, mode: '500', times: 2 });
    assertUnavailable(await deliver(server, fake, event));
    assert.deepEqual(await checkout.rows(), before);
    const again = await deliver(server, fake, event);
    assert.equal(again.status, 200, again.text);
    assert.equal((await paymentRow(server, checkout.transactionId)).status, 'paid');
  });
});

describe(`the expirer hands payments stuck at a provider that does not answer to the reconciler (${DB_KIND})`, () => {
  let fake: FakeStripe;
  let server: TestServer;
  let close: () => Promise<void>;
  let key: string;
  let sandboxKey: string;
  let offsetMs = 0;
  before(async () => {
    ({ fake, server, close } = await startWithStripe({
      worker: false,
      clock: () => new Date(Date.now() + offsetMs),
    }));
    const merchant = await createTestMerchant(server, 'Stuck Expiry Shop');
    key = await createTestKey(server, merchant);
    sandboxKey = await createTestKey(server, merchant, { environment: 'sandbox' });
  });
  after(() => close());

  const cancels = () =>
    fake.requests
      .filter((request) => request.method === 'POST' && cancelPath.test(request.path))
      .map((request) => request.path);

  test("with a batch of 2, three Stripe payments whose cancel is refused are handed to the reconciler and do not keep a simulator payment's expiry out", async () => {
    // The stuck ones come first in id order: an unordered or fixed first batch would be them for ever.
    const stuck: string[] = [];
    for (let i = 0; i < 3; i += 1) {
      const checkout = await createCheckout(server, key);
      stuck.push((await hostedStep(server, checkout.token)).page.transaction_id as string);
    }
    const sandbox = await createCheckout(server, sandboxKey, {}, '/sandbox/api');
    const declined = await pay(server, sandbox.token, CARDS.declined);
    const simulated = declined.body.transaction_id as string;
    assert.equal((await paymentRow(server, simulated)).status, 'processing', declined.text);
    offsetMs += DAY + 1000;
    fake.fail({ method: 'POST', path: cancelPath, mode: '429', times: 1000 });

    // Round 1: the first two stuck payments (Stripe refuses both cancels: handed to the reconciler).
    assert.equal(await expireCheckouts(server.ctx, 2), 0);
    assert.equal(cancels().length, 2, 'one batch asked, not every expired payment');
    assert.equal((await paymentRow(server, simulated)).status, 'processing');
    // Round 2: the next batch, the third stuck one and the simulator's, which fails as its expiry says.
    assert.equal(await expireCheckouts(server.ctx, 2), 1);
    assert.equal((await paymentRow(server, simulated)).status, 'failed');
    assert.equal(cancels().length, 3);
    for (const id of stuck) {
      assert.equal((await paymentRow(server, id)).status, 'processing');
      const operation = await operationByKey(server.ctx.db, `kassa-cancel-${id}`);
      assert.deepEqual([operation?.kind, operation?.state], ['payment_cancel', 'unknown']);
    }
    // The stuck ones are the reconciler's now (read on its schedule, flagged after the last read): the
    // expirer's later rounds, the cycle started over, ask Stripe nothing more about them.
    const before = cancels();
    assert.equal(await expireCheckouts(server.ctx, 2), 0);
    assert.equal(await expireCheckouts(server.ctx, 2), 0);
    assert.deepEqual(cancels(), before);
  });
});
