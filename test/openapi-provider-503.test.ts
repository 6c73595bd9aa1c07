// The payment provider's 503 in the OpenAPI document, through the real server: every route that can
// answer it (its handler asks the provider while the caller waits, outside the write-ahead calls whose
// lost answer is the `unknown` outcome) is made to answer it here, with {"detail"} and Retry-After, and
// documents it; the operations that document it are exactly those. The routes declare it in their own
// schema (ASKS_PROVIDER, src/http/schemas.ts): a route that starts asking the provider without the mark
// fails here, or in whichever e2e test meets its 503 (call() checks it against the document).
// advance-clock is the counter-example: its renewals charge through the provider, but as write-ahead
// calls, so a provider without answer leaves the tries to the reconciler and the answer is a 200.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { PROVIDER_RETRY_AFTER_S, PROVIDER_UNAVAILABLE_DETAIL } from '../src/http/errors.ts';
import { GUARDED_CALLS } from '../src/provider/index.ts';
import { signSimulatorWebhook } from '../src/provider/simulator/webhook-signature.ts';
import type { PaymentProvider } from '../src/provider/types.ts';
import { billing, card, createCheckout, type Json, pay } from './helpers/checkout.ts';
import {
  assertRetryAfterDocumented,
  routesDocumenting,
  type ServedDocument,
} from './helpers/documented-errors.ts';
import type { FakeStripe } from './helpers/fake-stripe/server.ts';
import { useProvider as swapProvider, wrapProvider } from './helpers/providers.ts';
import {
  type ApiResponse,
  call,
  createTestKey,
  createTestMerchant,
  DB_KIND,
  type Merchant,
  type TestServer,
} from './helpers/server.ts';
import { deliver, eventAbout, hostedStep, startWithStripe } from './helpers/stripe.ts';
import { subscribeWithSavedCard } from './helpers/subscriptions.ts';

/** Every operation that can answer the provider's 503, as the document names it. */
const PROVIDER_503 = [
  'GET /api/checkout/{token}/',
  'POST /api/checkout/{token}/pay/',
  'POST /api/checkout/{token}/cancel/',
  'POST /api/checkout/sync-status/',
  'POST /api/provider/webhooks/stripe/',
  'POST /api/provider/webhooks/{provider}/',
  'POST /api/provider/simulator/challenges/{id}/',
].sort();

const intentPath = /^\/v1\/payment_intents\/pi_\w+$/;
const cancelPath = /^\/v1\/payment_intents\/pi_\w+\/cancel$/;
const THREE_DS = '4000 0027 6000 3184';

describe(`the provider's 503 is documented on exactly the routes that answer it (${DB_KIND})`, () => {
  let fake: FakeStripe;
  let server: TestServer;
  let close: () => Promise<void>;
  let owner: Merchant;
  let key: string;
  let sandboxKey: string;
  let document: ServedDocument;
  const provoked = new Set<string>();

  before(async () => {
    ({ fake, server, close } = await startWithStripe({ worker: false }));
    owner = await createTestMerchant(server, 'Provider 503 Shop');
    key = await createTestKey(server, owner);
    sandboxKey = await createTestKey(server, owner, { environment: 'sandbox' });
    const served = await call<Json>(server, 'GET', '/api/openapi.json');
    assert.equal(served.status, 200, served.text);
    document = served.body as unknown as ServedDocument;
  });
  after(() => close());

  /** The sandbox's simulator with these calls failing as a provider without answer does, until undone. */
  function simulatorFailing(calls: readonly (typeof GUARDED_CALLS)[number][]): () => void {
    const fail = async () => {
      throw new Error('no answer (the test stopped the simulator)');
    };
    const overrides = Object.fromEntries(calls.map((name) => [name, fail])) as Partial<PaymentProvider>;
    return swapProvider(server.ctx, wrapProvider(server.ctx.providers.simulator, overrides));
  }

  /** The 503 as the interface gives it, and the document's 503 for the route that answered it. */
  function assertUnavailable(route: string, answer: ApiResponse<Json>) {
    assert.equal(answer.status, 503, `${route}: ${answer.text}`);
    assert.deepEqual(answer.body, { detail: PROVIDER_UNAVAILABLE_DETAIL });
    assert.equal(answer.headers.get('retry-after'), String(PROVIDER_RETRY_AFTER_S));
    assertRetryAfterDocumented(document, route, 503);
    provoked.add(route);
  }

  /** A production checkout whose PaymentIntent the hosted page opened at Stripe. */
  async function openStripeCheckout() {
    const checkout = await createCheckout(server, key);
    const { page } = await hostedStep(server, checkout.token);
    return { ...checkout, transactionId: page.transaction_id as string };
  }

  test("the hosted page, when Stripe's read of the client secret gets no answer: 503", async () => {
    const checkout = await openStripeCheckout();
    fake.fail({ method: 'GET', path: intentPath, mode: '429', times: 1 });
    assertUnavailable(
      'GET /api/checkout/{token}/',
      await call(server, 'GET', `/api/checkout/${checkout.token}/`),
    );
  });

  test("the customer's cancel, when Stripe's cancel gets no answer: 503", async () => {
    const checkout = await openStripeCheckout();
    fake.fail({ method: 'POST', path: cancelPath, mode: '429', times: 1 });
    const canceled = await call<Json>(server, 'POST', `/api/checkout/${checkout.token}/cancel/`);
    assertUnavailable('POST /api/checkout/{token}/cancel/', canceled);
  });

  test("sync-status, when Stripe's read of the payment gets no answer: 503", async () => {
    const checkout = await openStripeCheckout();
    fake.fail({ method: 'GET', path: intentPath, mode: '429', times: 1 });
    const sync = await call<Json>(server, 'POST', '/api/checkout/sync-status/', {
      body: { token: checkout.token },
    });
    assertUnavailable('POST /api/checkout/sync-status/', sync);
  });

  test("Stripe's webhook, when the re-read of its payment gets no answer: 503", async () => {
    const checkout = await openStripeCheckout();
    const { provider } = await hostedStep(server, checkout.token);
    await fake.confirmInBrowser(provider.client_secret as string, 'pm_card_visa');
    const payment = await server.ctx.db
      .selectFrom('payments')
      .select('provider_payment_id')
      .where('public_id', '=', checkout.transactionId)
      .executeTakeFirstOrThrow();
    const event = eventAbout(fake, 'payment_intent.succeeded', payment.provider_payment_id as string);
    fake.fail({ method: 'GET', path: intentPath, mode: '429', times: 1 });
    assertUnavailable('POST /api/provider/webhooks/stripe/', await deliver(server, fake, event));
  });

  /** A sandbox checkout paid with a 3-D Secure card: its payment waits at the simulator, with its id. */
  async function challengedSandboxPayment() {
    const checkout = await createCheckout(server, sandboxKey, {}, '/sandbox/api');
    const attempt = await pay(server, checkout.token, THREE_DS);
    assert.equal(attempt.status, 200, attempt.text);
    const challengeId = (attempt.body.next_action as Json).challenge_id as string;
    const payment = await server.ctx.db
      .selectFrom('payments')
      .select('provider_payment_id')
      .where('public_id', '=', attempt.body.transaction_id as string)
      .executeTakeFirstOrThrow();
    return { challengeId, providerPaymentId: payment.provider_payment_id as string };
  }

  test("the simulator's webhook, when the re-read of its payment gets no answer: 503", async () => {
    const { providerPaymentId } = await challengedSandboxPayment();
    const raw = JSON.stringify({ payment_id: providerPaymentId });
    const signature = signSimulatorWebhook(
      server.ctx.config.secretKey,
      raw,
      Math.floor(server.ctx.clock().getTime() / 1000),
    );
    const undo = simulatorFailing(['getPayment', 'findPayment']);
    try {
      const notified = await call<Json>(server, 'POST', '/api/provider/webhooks/simulator/', {
        body: raw,
        headers: { 'content-type': 'application/json', 'kassa-signature': signature },
      });
      assertUnavailable('POST /api/provider/webhooks/{provider}/', notified);
    } finally {
      undo();
    }
  });

  test("the simulator's 3-D Secure answer, when the re-read of its payment gets no answer: 503", async () => {
    const { challengeId } = await challengedSandboxPayment();
    const undo = simulatorFailing(['getPayment', 'findPayment']);
    try {
      const answered = await call<Json>(
        server,
        'POST',
        `/api/provider/simulator/challenges/${challengeId}/`,
        {
          body: { answer: 'approve' },
        },
      );
      assertUnavailable('POST /api/provider/simulator/challenges/{id}/', answered);
    } finally {
      undo();
    }
  });

  /** A sandbox plan (the simulator takes the card in Kassa's own form, so `pay` is its path). */
  async function sandboxPlan(body: Json): Promise<string> {
    const plan = await call<{ id: string }>(server, 'POST', '/api/subscriptions/plans/', {
      token: owner.token,
      body: { amount: '9.99', interval: 'month', environment: 'sandbox', ...body },
    });
    assert.equal(plan.status, 201, plan.text);
    return plan.body.id;
  }

  test("a signup's pay, when making its customer gets no answer: 503", async () => {
    const plan = await sandboxPlan({ name: 'Sandbox monthly' });
    const started = await call<{ token: string }>(
      server,
      'POST',
      `/api/subscriptions/public/${plan}/start/`,
      {
        body: billing(),
      },
    );
    assert.equal(started.status, 201, started.text);
    const undo = simulatorFailing(['createCustomer']);
    try {
      const paid = await call<Json>(server, 'POST', `/api/checkout/${started.body.token}/pay/`, {
        body: card(),
      });
      assertUnavailable('POST /api/checkout/{token}/pay/', paid);
    } finally {
      undo();
    }
  });

  test('advance-clock with every provider call failing: 200, its renewals left to the reconciler, no 503', async () => {
    const plan = await sandboxPlan({ name: 'Sandbox clocked' });
    const subscription = await subscribeWithSavedCard(server, {
      organizationId: owner.organizationId,
      planPublicId: plan,
      cardNumber: '4242424242424242',
      anchorAt: new Date(Date.UTC(2031, 0, 31, 9, 30)).toISOString(),
      testClock: true,
    });
    const undo = simulatorFailing(GUARDED_CALLS);
    try {
      const advanced = await call<Json & { cycles: Json[] }>(
        server,
        'POST',
        `/api/subscriptions/${subscription.publicId}/advance-clock/`,
        { token: owner.token, body: { days: 40 } },
      );
      assert.equal(advanced.status, 200, advanced.text);
      // The renewal was tried (a write-ahead row), and its lost answer keeps the cycle processing.
      assert.ok(advanced.body.cycles.length > 0, advanced.text);
      assert.ok(
        advanced.body.cycles.every((cycle) => cycle.status === 'processing'),
        advanced.text,
      );
    } finally {
      undo();
    }
    const operation = document.paths['/api/subscriptions/{id}/advance-clock/']?.post;
    assert.ok(operation, 'advance-clock is in the document');
    assert.equal(operation.responses[503], undefined);
  });

  test("the operations that document the provider's 503 are exactly the routes made to answer it", () => {
    // The password line's 503 is documented from a mark of its own (openapi-password-503.test.ts).
    assert.deepEqual(routesDocumenting(document, 503, 'payment provider'), PROVIDER_503);
    assert.deepEqual([...provoked].sort(), PROVIDER_503, 'each one was made to answer 503 above');
  });
});
