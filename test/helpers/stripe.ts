// Kassa with KASSA_PROVIDER=stripe against the fake Stripe: the environment that points the SDK at it,
// the hosted step as the Payment Element sees it, and Stripe's webhooks delivered signed.
import assert from 'node:assert/strict';
import type Stripe from 'stripe';
import { type FakeStripe, signWithHmac, signWithSdk, startFakeStripe } from './fake-stripe/server.ts';
import {
  type ApiResponse,
  call,
  createTestKey,
  createTestMerchant,
  type Merchant,
  type StartTestServerOptions,
  startTestServer,
  type TestServer,
} from './server.ts';

export type Json = Record<string, unknown>;

export function stripeEnv(fake: FakeStripe): Record<string, string> {
  return {
    KASSA_PROVIDER: 'stripe',
    KASSA_STRIPE_SECRET_KEY: fake.secretKey,
    KASSA_STRIPE_PUBLISHABLE_KEY: fake.publishableKey,
    KASSA_STRIPE_WEBHOOK_SECRET: fake.webhookSecret,
    KASSA_STRIPE_API_URL: fake.url,
  };
}

/** Kassa started against a fake Stripe of its own; `close` stops both. */
export interface StartedWithStripe {
  fake: FakeStripe;
  server: TestServer;
  close: () => Promise<void>;
}

export async function startWithStripe(options: StartTestServerOptions = {}): Promise<StartedWithStripe> {
  const fake = await startFakeStripe();
  const server = await startTestServer({ ...options, env: { ...stripeEnv(fake), ...options.env } });
  return {
    fake,
    server,
    async close() {
      await server.close();
      await fake.close();
    },
  };
}

/** startWithStripe, and a merchant called `shop` with a production API key (`key`). */
export async function startShopWithStripe(
  shop: string,
  options: StartTestServerOptions = {},
): Promise<StartedWithStripe & { merchant: Merchant; key: string }> {
  const started = await startWithStripe(options);
  const merchant = await createTestMerchant(started.server, shop);
  const key = await createTestKey(started.server, merchant);
  return { ...started, merchant, key };
}

/** The path of Kassa's cancel of a PaymentIntent at Stripe. */
export const CANCEL_PATH = /^\/v1\/payment_intents\/pi_\w+\/cancel$/;

/** How many cancels of a PaymentIntent Kassa has sent the fake Stripe so far. */
export function cancelsSent(fake: FakeStripe): number {
  return fake.requests.filter((request) => request.method === 'POST' && CANCEL_PATH.test(request.path))
    .length;
}

/** The hosted step as the page reads it: opens the PaymentIntent on the first read. */
export async function hostedStep(server: TestServer, token: string) {
  const page = await call<Json>(server, 'GET', `/api/checkout/${token}/`);
  assert.equal(page.status, 200, page.text);
  const provider = page.body.provider as {
    name: string;
    publishable_key: string;
    client_secret: string | null;
  };
  return { page: page.body, provider };
}

/** The customer pays in the Payment Element, then lands on ?return=1, whose page asks sync-status. */
export async function payInElement(
  server: TestServer,
  fake: FakeStripe,
  token: string,
  paymentMethod: string,
): Promise<{ confirm: { status: number; body: unknown }; sync: ApiResponse }> {
  const { provider } = await hostedStep(server, token);
  assert.ok(provider.client_secret, 'the page has a client secret');
  const confirm = await fake.confirmInBrowser(provider.client_secret, paymentMethod);
  const sync = await call(server, 'POST', '/api/checkout/sync-status/', { body: { token } });
  return { confirm, sync };
}

/** The newest event of a type about an object. */
export function eventAbout(fake: FakeStripe, type: string, objectId: string): Stripe.Event {
  const found = [...fake.ledger.events]
    .reverse()
    .find((event) => event.type === type && (event.data.object as { id: string }).id === objectId);
  assert.ok(found, `no ${type} event for ${objectId}`);
  return found;
}

/** Delivers an event to Kassa as Stripe would: signed by the SDK's helper or by an independent HMAC. */
export function deliver(
  server: TestServer,
  fake: FakeStripe,
  event: Stripe.Event,
  options: { sign?: 'sdk' | 'hmac'; timestamp?: number; secret?: string; body?: string } = {},
) {
  const payload = options.body ?? JSON.stringify(event);
  const secret = options.secret ?? fake.webhookSecret;
  const header =
    (options.sign ?? 'sdk') === 'sdk'
      ? signWithSdk(payload, secret, options.timestamp)
      : signWithHmac(payload, secret, options.timestamp);
  return call<Json>(server, 'POST', '/api/provider/webhooks/stripe/', {
    body: payload,
    headers: { 'stripe-signature': header, 'content-type': 'application/json; charset=utf-8' },
  });
}
