// A stateful fake Stripe on loopback (node:http) for the tests: the SDK is pointed at it through
// KASSA_STRIPE_API_URL. It keeps customers, payment methods, PaymentIntents, SetupIntents, charges,
// refunds and events (ledger.ts), honours Idempotency-Key as Stripe does (the same key and parameters
// replay the first answer with Idempotent-Replayed: true; other parameters are a 400 idempotency_error;
// the key while its first request runs is a 409; a test may make it forget keys, as Stripe does after
// 24 hours), and injects faults: a 500, or a timeout or 500 after the change was recorded (a retry with
// the same key then gets the recorded answer). A test may also make a change at Stripe land just before
// one of Kassa's requests (interleave), as a customer's browser confirming between two of Kassa's calls.
import { createHmac, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import Stripe from 'stripe';
import { canonical, type FormObject, parseForm, text } from './form.ts';
import { FakeStripeLedger, StripeApiError } from './ledger.ts';
import * as make from './objects.ts';

export interface FaultRule {
  method: string;
  path: RegExp;
  /**
   * 500: refused before anything happens; 429: rate limited (refused before anything happens, no
   * idempotent result saved, as Stripe); *_after_success: the change is recorded, the answer lost.
   */
  mode: '500' | '429' | '500_after_success' | 'timeout_after_success';
  times: number;
}

export interface WebhookEndpointFixture {
  url: string;
  enabled_events: string[];
  status: 'enabled' | 'disabled';
}

interface Recorded {
  params: string;
  path: string;
  status: number;
  body: unknown;
  done: boolean;
}

type Handler = (params: FormObject, match: RegExpExecArray, publishable: boolean) => unknown;

export interface FakeStripe {
  url: string;
  secretKey: string;
  publishableKey: string;
  webhookSecret: string;
  ledger: FakeStripeLedger;
  /** Every request: method, path, and its Idempotency-Key. */
  requests: { method: string; path: string; idempotencyKey: string | null }[];
  webhookEndpoints: WebhookEndpointFixture[];
  /** Injects a fault; `stop` ends it before its `times` run out (the provider answers again). */
  fail(rule: FaultRule): { stop: () => void };
  /**
   * Runs `change` once, just before the next request matching `method` and `path` is handled: what the
   * customer's browser (or the bank) does at Stripe between two of Kassa's calls, such as a confirm that
   * lands between Kassa's last read of a PaymentIntent and its cancel.
   */
  interleave(method: string, path: RegExp, change: () => void): void;
  /** Rolls the secret key, as in the Dashboard: the key Kassa holds is refused (401) until `restore`. */
  rollSecretKey(): { restore: () => void };
  /**
   * Stripe keeps an idempotency key's result for 24 hours, then a request under that key runs anew:
   * a test whose clock moved past that forgets every key saved so far.
   */
  forgetIdempotencyKeys(): void;
  /**
   * Stripe's clock follows `clock` (a test's moved clock, as Kassa's) until `restore`: the objects it
   * makes are dated as Stripe would date them when both clocks agree, as in production.
   */
  useClock(clock: () => number): { restore: () => void };
  /** What Stripe.js does in the customer's browser: confirm the PaymentIntent with a test payment method. */
  confirmInBrowser(clientSecret: string, paymentMethod: string): Promise<{ status: number; body: unknown }>;
  close(): Promise<void>;
}

const json = (
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
) => {
  response.writeHead(status, {
    'content-type': 'application/json',
    'request-id': `req_${randomBytes(6).toString('hex')}`,
    ...headers,
  });
  response.end(JSON.stringify(body));
};

const list = (url: string, data: unknown[]) => ({ object: 'list', data, has_more: false, url });

/** A list endpoint filtered on one parameter (refunds by payment_intent, setup intents by customer). */
function listOf<T extends object>(url: string, all: () => Iterable<T>, field: keyof T & string): Handler {
  return (params) =>
    list(
      url,
      [...all()].filter((item) => item[field] === text(params, field)),
    );
}

export async function startFakeStripe(): Promise<FakeStripe> {
  const secretKey = `sk_test_fake${randomBytes(12).toString('hex')}`;
  let acceptedKey = secretKey;
  const publishableKey = `pk_test_fake${randomBytes(12).toString('hex')}`;
  const webhookSecret = `whsec_${randomBytes(24).toString('base64')}`;
  const ledger = new FakeStripeLedger(Stripe.API_VERSION);
  const requests: FakeStripe['requests'] = [];
  const faults: FaultRule[] = [];
  const interleavings: { method: string; path: RegExp; change: () => void }[] = [];
  const idempotency = new Map<string, Recorded>();
  const sockets = new Set<Socket>();
  const webhookEndpoints: WebhookEndpointFixture[] = [];

  const clientSecretMatches = (id: string, params: FormObject) => {
    const known = id.startsWith('seti_') ? ledger.setup(id).client_secret : ledger.intent(id).client_secret;
    return text(params, 'client_secret') === known;
  };

  const routes: [string, RegExp, Handler][] = [
    ['GET', /^\/v1\/account$/, () => ({ id: 'acct_fake', object: 'account', charges_enabled: true })],
    [
      'GET',
      /^\/v1\/webhook_endpoints$/,
      () =>
        list(
          '/v1/webhook_endpoints',
          webhookEndpoints.map((endpoint, index) => ({
            id: `we_${index}`,
            object: 'webhook_endpoint',
            ...endpoint,
          })),
        ),
    ],
    ['POST', /^\/v1\/payment_intents$/, (params) => ledger.createPaymentIntent(params)],
    [
      'GET',
      /^\/v1\/payment_intents$/,
      (params) => list('/v1/payment_intents', ledger.intentsOf(text(params, 'customer') ?? null)),
    ],
    [
      'GET',
      /^\/v1\/payment_intents\/search$/,
      (params) => ({
        object: 'search_result',
        data: ledger.searchIntents(text(params, 'query') ?? ''),
        has_more: false,
        next_page: null,
        url: '/v1/payment_intents/search',
      }),
    ],
    ['GET', /^\/v1\/payment_intents\/(pi_\w+)$/, (_p, match) => ledger.intent(match[1])],
    [
      'POST',
      /^\/v1\/payment_intents\/(pi_\w+)\/cancel$/,
      (params, match) => ledger.cancelPaymentIntent(match[1], params),
    ],
    [
      'POST',
      /^\/v1\/payment_intents\/(pi_\w+)\/confirm$/,
      (params, match, publishable) => {
        if (publishable && !clientSecretMatches(match[1], params))
          throw new StripeApiError(400, { type: 'invalid_request_error', message: 'Invalid client_secret.' });
        return ledger.confirmPaymentIntent(match[1], params);
      },
    ],
    [
      'GET',
      /^\/v1\/charges$/,
      (params) => list('/v1/charges', ledger.chargesOf(text(params, 'payment_intent') ?? '')),
    ],
    ['POST', /^\/v1\/refunds$/, (params) => ledger.createRefund(params)],
    ['GET', /^\/v1\/refunds\/(re_\w+)$/, (_p, match) => ledger.refund(match[1])],
    ['GET', /^\/v1\/refunds$/, listOf('/v1/refunds', () => ledger.refunds.values(), 'payment_intent')],
    ['POST', /^\/v1\/customers$/, (params) => ledger.createCustomer(params)],
    ['GET', /^\/v1\/customers\/(cus_\w+)$/, (_p, match) => ledger.customer(match[1])],
    ['GET', /^\/v1\/payment_methods\/(pm_\w+)$/, (_p, match) => ledger.retrievePaymentMethod(match[1])],
    ['POST', /^\/v1\/setup_intents$/, (params) => ledger.createSetupIntent(params)],
    ['GET', /^\/v1\/setup_intents\/(seti_\w+)$/, (_p, match) => ledger.setup(match[1])],
    ['GET', /^\/v1\/setup_intents$/, listOf('/v1/setup_intents', () => ledger.setups.values(), 'customer')],
    [
      'POST',
      /^\/v1\/setup_intents\/(seti_\w+)\/confirm$/,
      (params, match, publishable) => {
        if (publishable && !clientSecretMatches(match[1], params))
          throw new StripeApiError(400, { type: 'invalid_request_error', message: 'Invalid client_secret.' });
        return ledger.confirmSetupIntent(match[1], params);
      },
    ],
  ];
  /** The publishable key may only confirm, with the object's client secret (what Stripe.js does). */
  const BROWSER_ROUTES = /\/confirm$/;

  function execute(
    method: string,
    path: string,
    params: FormObject,
    publishable: boolean,
  ): { status: number; body: unknown } {
    for (const [routeMethod, pattern, handler] of routes) {
      const match = pattern.exec(path);
      if (!match || routeMethod !== method) continue;
      try {
        return { status: 200, body: structuredClone(handler(params, match, publishable)) };
      } catch (error) {
        if (error instanceof StripeApiError) return { status: error.status, body: error.body };
        throw error;
      }
    }
    return {
      status: 404,
      body: {
        error: { type: 'invalid_request_error', message: `Unrecognized request URL (${method}: ${path}).` },
      },
    };
  }

  function faultFor(method: string, path: string): FaultRule | null {
    const rule = faults.find(
      (candidate) => candidate.times > 0 && candidate.method === method && candidate.path.test(path),
    );
    if (!rule) return null;
    rule.times -= 1;
    return rule;
  }

  async function handle(request: IncomingMessage, response: ServerResponse) {
    const url = new URL(request.url ?? '/', 'http://fake');
    const method = request.method ?? 'GET';
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const params = parseForm(method === 'GET' ? url.searchParams.toString() : body);
    const key = (request.headers['idempotency-key'] as string | undefined) ?? null;
    requests.push({ method, path: url.pathname, idempotencyKey: key });
    const auth = /^Bearer (\S+)$/.exec(request.headers.authorization ?? '')?.[1];
    const publishable = auth === publishableKey && BROWSER_ROUTES.test(url.pathname);
    if (auth !== acceptedKey && !publishable) {
      return json(response, 401, {
        error: { type: 'invalid_request_error', message: `Invalid API Key provided: ${auth ?? ''}` },
      });
    }
    const interleaved = interleavings.findIndex(
      (candidate) => candidate.method === method && candidate.path.test(url.pathname),
    );
    if (interleaved >= 0) interleavings.splice(interleaved, 1)[0].change();
    const fault = faultFor(method, url.pathname);
    if (fault?.mode === '500')
      return json(response, 500, {
        error: { type: 'api_error', message: 'An unknown error occurred (injected).' },
      });
    if (fault?.mode === '429')
      return json(response, 429, {
        error: {
          type: 'invalid_request_error',
          code: 'rate_limit',
          message:
            'Request rate limit exceeded. Learn more about rate limits here https://stripe.com/docs/rate-limits.',
        },
      });
    let answer: { status: number; body: unknown };
    let replayed = false;
    const recorded = key && method === 'POST' ? idempotency.get(key) : undefined;
    if (recorded) {
      if (!recorded.done)
        return json(response, 409, {
          error: {
            type: 'idempotency_error',
            message: 'There is currently another in-progress request using this Idempotent Key.',
          },
        });
      if (recorded.params !== canonical(params) || recorded.path !== url.pathname) {
        return json(response, 400, {
          error: {
            type: 'idempotency_error',
            message: `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}' if you meant to execute a different request.`,
          },
        });
      }
      answer = { status: recorded.status, body: recorded.body };
      replayed = true;
    } else {
      const entry: Recorded = {
        params: canonical(params),
        path: url.pathname,
        status: 0,
        body: null,
        done: false,
      };
      if (key && method === 'POST') idempotency.set(key, entry);
      answer = execute(method, url.pathname, params, publishable);
      Object.assign(entry, { status: answer.status, body: answer.body, done: true });
      // As Stripe: a request refused before it ran (bad parameters, unknown object) saves no result.
      if (answer.status === 400 || answer.status === 404) idempotency.delete(key ?? '');
    }
    if (fault?.mode === '500_after_success')
      return json(response, 500, {
        error: { type: 'api_error', message: 'An unknown error occurred (injected after the change).' },
      });
    if (fault?.mode === 'timeout_after_success') return; // never answers: the client times out
    json(response, answer.status, answer.body, replayed ? { 'idempotent-replayed': 'true' } : {});
  }

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) =>
      json(response, 500, { error: { type: 'api_error', message: String(error) } }),
    );
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    secretKey,
    publishableKey,
    webhookSecret,
    ledger,
    requests,
    webhookEndpoints,
    fail(rule) {
      const injected = { ...rule };
      faults.push(injected);
      return {
        stop: () => {
          injected.times = 0;
        },
      };
    },
    interleave(method, path, change) {
      interleavings.push({ method, path, change });
    },
    rollSecretKey() {
      acceptedKey = `sk_test_fake${randomBytes(12).toString('hex')}`;
      return {
        restore: () => {
          acceptedKey = secretKey;
        },
      };
    },
    forgetIdempotencyKeys: () => idempotency.clear(),
    useClock: (clock) => ({ restore: make.useClock(clock) }),
    async confirmInBrowser(clientSecret, paymentMethod) {
      const id = clientSecret.split('_secret_')[0];
      const kind = id.startsWith('seti_') ? 'setup_intents' : 'payment_intents';
      const response = await fetch(`${url}/v1/${kind}/${id}/confirm`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${publishableKey}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({ client_secret: clientSecret, payment_method: paymentMethod }).toString(),
      });
      return { status: response.status, body: await response.json() };
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Signs a webhook body as Stripe does, with the SDK's test helper. */
export function signWithSdk(
  payload: string,
  secret: string,
  timestamp = Math.floor(Date.now() / 1000),
): string {
  return Stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp });
}

/** Signs a webhook body independently of the SDK: t=<unix>,v1=<hex HMAC-SHA256 of "t.payload">. */
export function signWithHmac(
  payload: string,
  secret: string,
  timestamp = Math.floor(Date.now() / 1000),
): string {
  const v1 = createHmac('sha256', secret).update(`${timestamp}.${payload}`, 'utf8').digest('hex');
  return `t=${timestamp},v1=${v1}`;
}
