// The crash matrix: the real service runs as a child process (`kassa serve`) while the test drives a
// stream of checkouts, payments (pay + sync), refunds and webhook deliveries through its HTTP API, and
// kills it with SIGKILL at random moments, restarting it on the same data each time. The test keeps
// every answer it saw succeed, and retries unanswered requests with the same Idempotency-Key (whose
// lock is short here, so a retry takes over the key of a request that died). At the end, once the
// last server has drained its outbox, nothing acknowledged may be missing or have moved backwards, no
// request may have made its change twice, no ledger effect may be applied twice, the wallet must
// equal its ledger, the provider and Kassa must agree, and every committed event must have reached
// the receiver signed (bench/invariants.ts).
//
// KASSA_CRASH_KILLS sets the number of kills (default 50); KASSA_CRASH_LONG=1 makes it 300.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  checkInvariants,
  checkRefundsInFlight,
  formatInvariants,
  type ReceivedDelivery,
  sha256Hex,
  signatureMatches,
} from '../bench/invariants.ts';
import { loadConfig } from '../src/config.ts';
import { createContext } from '../src/context.ts';
import { type DbHandle, openAndMigrate } from '../src/db/connection.ts';
import { createMerchant } from '../src/modules/organizations/service.ts';
import type { PaymentStatus } from '../src/modules/payments/table.ts';
import { webhooksInFlight } from '../src/modules/webhooks/worker-store.ts';
import { simulatorDb } from '../src/provider/simulator/store.ts';
import { DB_KIND, freePort, testEnv } from './helpers/server.ts';
import { ServiceUnderTest } from './helpers/service-process.ts';
import { header, type Receiver, startReceiver } from './webhooks-helpers.ts';

const LONG = process.env.KASSA_CRASH_LONG === '1';
const KILLS = Number(process.env.KASSA_CRASH_KILLS) || (LONG ? 300 : 50);
/** Clients driving traffic at once. */
const LANES = 4;
/** The server runs this long (uniformly random) between its start and its SIGKILL. */
const ACTIVITY_MS = [300, 800] as const;
const CARD = { exp_month: 12, exp_year: 2099, cvc: '123', cardholder_name: 'Ada Lovelace' };
const SUCCEEDS = '4242424242424242';
/** Short, so a retry takes over the key of a request that died with the server within the run. */
const IDEMPOTENCY_LOCK_MS = 900;
const DECLINED = '4000000000000002';

/** Raised when no answer came back: the server died (or was not up). The outcome is unknown. */
class NoAnswer extends Error {}

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

/** Where a payment may go from each status: an acknowledged status may only be followed by these. */
const REACHABLE: Record<PaymentStatus, PaymentStatus[]> = {
  processing: ['processing', 'pending', 'paid', 'failed', 'canceled', 'refund_pending', 'refunded'],
  pending: ['pending', 'paid', 'failed', 'canceled', 'refund_pending', 'refunded'],
  paid: ['paid', 'refund_pending', 'refunded'],
  refund_pending: ['paid', 'refund_pending', 'refunded'],
  refunded: ['refunded'],
  failed: ['failed'],
  canceled: ['canceled'],
};
const REFUND_REACHABLE: Record<string, string[]> = {
  pending: ['pending', 'processing', 'completed', 'failed'],
  processing: ['processing', 'completed', 'failed'],
  completed: ['completed'],
  failed: ['failed'],
};

/** Everything the clients were told succeeded. */
const acked = {
  checkouts: new Map<string, { canceled: boolean }>(),
  payments: new Map<string, PaymentStatus[]>(),
  refunds: new Map<number, { status: string; amount: string; paymentId: number }>(),
  testDeliveries: new Set<string>(),
};
/** What the clients saw, by "method path status" (printed when the run fails). */
const stats = { requests: 0, noAnswer: 0, serverErrors: [] as string[], statuses: new Map<string, number>() };

let env: Record<string, string>;
let cleanup: () => Promise<void>;
let receiver: Receiver;
let service: ServiceUnderTest;
let handle: DbHandle | null = null;

before(async () => {
  receiver = await startReceiver();
  const port = await freePort();
  ({ env, cleanup } = await testEnv({
    KASSA_PORT: String(port),
    KASSA_SIM_REFUND_DELAY_MS: '300',
    KASSA_WEBHOOK_TIMEOUT_MS: '1000',
    KASSA_WEBHOOK_RETRY_SCHEDULE_MS: '100,200,300,400,500,600,700',
    KASSA_IDEMPOTENCY_LOCK_MS: String(IDEMPOTENCY_LOCK_MS),
    // Calls whose answer a kill lost are read back within seconds (the decisions' schedule, compressed).
    KASSA_RECONCILE_SCHEDULE_MS: '400,800,1600,3200,6400',
    KASSA_PROVIDER_TIMEOUT_MS: '2000',
  }));
  service = new ServiceUnderTest(env, `http://127.0.0.1:${port}`);
});

after(async () => {
  await service?.kill();
  await handle?.close();
  await receiver?.close();
  await cleanup?.();
});

async function send(
  method: string,
  path: string,
  options: { apiKey?: string; token?: string; body?: unknown; idempotencyKey?: string } = {},
): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (options.apiKey) headers.authorization = `Api-Key ${options.apiKey}`;
  if (options.token) headers.authorization = `Token ${options.token}`;
  if (options.idempotencyKey) headers['idempotency-key'] = options.idempotencyKey;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  stats.requests += 1;
  let response: Response;
  let text: string;
  try {
    response = await fetch(service.url + path, {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: AbortSignal.timeout(15_000),
    });
    text = await response.text();
  } catch (error) {
    stats.noAnswer += 1;
    throw new NoAnswer(String(error));
  }
  const key = `${method} ${path.replace(/\/[A-Za-z0-9_-]{16,}\//g, '/:id/')} ${response.status}`;
  stats.statuses.set(key, (stats.statuses.get(key) ?? 0) + 1);
  if (response.status >= 500) stats.serverErrors.push(`${key}: ${text}`);
  return { status: response.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

/**
 * Sends; when no answer comes, waits for the server and sends again with the same idempotency key, as
 * a merchant's client would; a 409 for that key (its first request died with the server) is retried
 * until the key's lock (KASSA_IDEMPOTENCY_LOCK_MS) runs out and the retry takes it over.
 */
async function sendRetrying(
  method: string,
  path: string,
  options: Parameters<typeof send>[2] = {},
): Promise<Answer | null> {
  for (let attempt = 0; attempt < 12; attempt += 1) {
    try {
      const answer = await send(method, path, options);
      if (answer.status !== 409 || !options.idempotencyKey) return answer;
      await sleep(IDEMPOTENCY_LOCK_MS / 3);
    } catch (error) {
      if (!(error instanceof NoAnswer)) throw error;
      await service.whenUp();
    }
  }
  return null;
}

/** Sends once; a lost answer is null (after waiting for the server to come back). */
async function sendOnce(
  method: string,
  path: string,
  options: Parameters<typeof send>[2] = {},
): Promise<Answer | null> {
  try {
    return await send(method, path, options);
  } catch (error) {
    if (!(error instanceof NoAnswer)) throw error;
    await service.whenUp();
    return null;
  }
}

function ackPayment(body: Record<string, unknown>) {
  const id = body.transaction_id;
  const status = body.payment_status;
  if (typeof id !== 'string' || typeof status !== 'string') return;
  acked.payments.set(id, [...(acked.payments.get(id) ?? []), status as PaymentStatus]);
}

interface Credentials {
  apiKey: string;
  token: string;
}

/** Paid payments that may take another (partial) refund, shared by the lanes. */
const refundable: string[] = [];

async function refund(credentials: Credentials, transactionId: string) {
  const half = Math.random() < 0.5;
  const key = randomUUID();
  // The key in the reason: at the end, one request (one key) must have made at most one refund.
  const answer = await sendRetrying('POST', `/api/transactions/${transactionId}/refund/`, {
    apiKey: credentials.apiKey,
    idempotencyKey: key,
    body: { reason: `crash matrix ${key}`, ...(half ? { amount: '10.00' } : {}) },
  });
  if (answer?.status !== 200) return;
  acked.refunds.set(Number(answer.body.refund_id), {
    status: String(answer.body.status),
    amount: String(answer.body.amount),
    paymentId: Number(answer.body.transaction_id),
  });
  if (half) refundable.push(transactionId);
}

/** One customer journey: a checkout, perhaps a declined card, a paying card, sync, perhaps a refund. */
async function journey(credentials: Credentials) {
  const roll = Math.random();
  if (roll < 0.05) {
    const test = await sendOnce('POST', '/api/organization/webhook/test/', { token: credentials.token });
    if (test?.status === 202) acked.testDeliveries.add(String(test.body.delivery_id));
    return;
  }
  if (roll < 0.15 && refundable.length > 0) {
    const [again] = refundable.splice(Math.floor(Math.random() * refundable.length), 1);
    await refund(credentials, again);
    return;
  }
  const key = randomUUID();
  const created = await sendRetrying('POST', '/api/checkout/create/', {
    apiKey: credentials.apiKey,
    idempotencyKey: key,
    body: {
      billing_country: 'FR',
      billing_first_name: 'Ada',
      billing_last_name: 'Lovelace',
      // The key in the email: at the end, one request (one key) must have made at most one checkout.
      billing_email: `${key}@crash.test`,
      products: [{ name: 'Widget', unit_price: 20, quantity: 2 }],
    },
  });
  if (created?.status !== 201) return;
  const checkoutId = String(created.body.checkout_id);
  const token = String(created.body.token);
  acked.checkouts.set(checkoutId, { canceled: false });

  if (roll < 0.22) {
    const canceled = await sendOnce('POST', `/api/checkout/${token}/cancel/`);
    if (canceled?.status === 200) acked.checkouts.set(checkoutId, { canceled: true });
    return;
  }
  if (roll < 0.35) {
    const declined = await sendOnce('POST', `/api/checkout/${token}/pay/`, {
      body: { ...CARD, card_number: DECLINED },
    });
    if (declined?.status === 200) ackPayment(declined.body);
  }
  let paid: string | null = null;
  for (let attempt = 0; attempt < 2 && paid === null; attempt += 1) {
    const payment = await sendOnce('POST', `/api/checkout/${token}/pay/`, {
      body: { ...CARD, card_number: SUCCEEDS },
    });
    if (payment?.status === 200) ackPayment(payment.body);
    const synced = await sendRetrying('POST', '/api/checkout/sync-status/', { body: { token } });
    if (synced?.status !== 200) return;
    ackPayment(synced.body);
    if (synced.body.status === 'SUCCESS') paid = String(synced.body.transaction_id);
    else if (synced.body.status !== 'CHECKOUT_PENDING') return;
  }
  if (paid !== null && Math.random() < 0.6) await refund(credentials, paid);
}

async function drive(credentials: Credentials, stop: { stopped: boolean }) {
  while (!stop.stopped) {
    try {
      await journey(credentials);
    } catch (error) {
      if (!(error instanceof NoAnswer)) throw error;
      await service.whenUp();
    }
  }
}

async function count(query: Promise<{ n: number | string | bigint } | undefined>): Promise<number> {
  return Number((await query)?.n ?? 0);
}

test(`acknowledged changes survive ${KILLS} SIGKILLs of the service, applied once, every event delivered signed (${DB_KIND})`, {
  timeout: (LONG ? 40 : 8) * 60_000,
}, async (t) => {
  const startedAt = Date.now();
  const config = loadConfig(env);
  handle = await openAndMigrate(config.database);
  const db = handle.db;
  const email = 'crash-owner@acme.test';
  const password = 'correct horse battery';
  await createMerchant(createContext(config, handle), { organization: 'Crash Matrix', email, password });

  await service.start();
  const login = await send('POST', '/api/auth/login/', { body: { email, password } });
  assert.equal(login.status, 200);
  const token = String(login.body.token);
  const key = await send('POST', '/api/organization/api-keys/', {
    token,
    body: { name: 'crash', allowed_scopes: '' },
  });
  assert.equal(key.status, 201);
  const endpoint = await send('PUT', '/api/organization/webhook/', {
    token,
    body: { endpoint_url: `${receiver.url}/hooks` },
  });
  assert.equal(endpoint.status, 200);
  const secret = String(endpoint.body.raw_secret);
  // A slow, sometimes failing receiver keeps deliveries in flight and retries scheduled when a kill lands.
  receiver.respond = () =>
    Math.random() < 0.05
      ? { status: 503, body: 'busy' }
      : { status: 200, delayMs: Math.floor(Math.random() * 20) };
  const credentials: Credentials = { apiKey: String(key.body.raw_key), token };

  const stop = { stopped: false };
  const lanes = Array.from({ length: LANES }, () => drive(credentials, stop));
  const killLoopStarted = Date.now();
  // "At most one refund in flight per payment" holds at every moment: checked at each kill, when refunds
  // are still in flight (after the drain there are none left to count).
  const inFlightProblems: string[] = [];
  let paymentsWithRefundInFlight = 0;
  for (let kill = 0; kill < KILLS; kill += 1) {
    await sleep(ACTIVITY_MS[0] + Math.random() * (ACTIVITY_MS[1] - ACTIVITY_MS[0]));
    await service.kill();
    const inFlight = await checkRefundsInFlight(db);
    paymentsWithRefundInFlight += inFlight.checked;
    inFlightProblems.push(...inFlight.problems);
    await service.start();
  }
  assert.deepEqual(inFlightProblems, []);
  assert.ok(paymentsWithRefundInFlight > 0, 'no refund was ever in flight at a kill: the check saw nothing');
  const killLoopMs = Date.now() - killLoopStarted;
  // A last stretch of traffic on a server that stays up, then the clients stop.
  await sleep(1000);
  stop.stopped = true;
  await Promise.all(lanes);

  // Let the last server finish what the crashes left: stale pending refunds, leases, retries, the outbox.
  const drainStarted = Date.now();
  const deadline = Date.now() + 120_000;
  for (;;) {
    const [webhooks, refundsInFlight, unrecorded] = await Promise.all([
      // Events not yet claimed, claims' leases a killed service left (they lapse and are recovered),
      // deliveries still pending.
      webhooksInFlight(db),
      count(
        db
          .selectFrom('refunds')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('status', 'in', ['pending', 'processing'])
          .executeTakeFirst(),
      ),
      // Payments the provider has decided that Kassa still shows processing (a lost answer, not yet re-read).
      count(
        simulatorDb(db)
          .selectFrom('sim_payments')
          .innerJoin('payments', 'payments.public_id', 'sim_payments.reference')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('payments.status', '=', 'processing')
          .where('sim_payments.outcome', '!=', 'PROCESSING')
          .executeTakeFirst(),
      ),
    ]);
    if (webhooks + refundsInFlight + unrecorded === 0) break;
    if (Date.now() > deadline) {
      assert.fail(
        `not drained after 120 s: ${webhooks} events or deliveries not sent, ${refundsInFlight} refunds in flight, ${unrecorded} provider answers unrecorded; ` +
          `service output:\n${service.output()}`,
      );
    }
    await sleep(250);
  }
  const drainMs = Date.now() - drainStarted;

  // 1. Nothing acknowledged is missing or has moved backwards.
  const lost: string[] = [];
  for (const [checkoutId, { canceled }] of acked.checkouts) {
    const row = await db
      .selectFrom('checkout_sessions')
      .leftJoin('payments', 'payments.checkout_session_id', 'checkout_sessions.id')
      .select(['checkout_sessions.canceled_at', 'payments.status'])
      .where('checkout_sessions.public_id', '=', checkoutId)
      .executeTakeFirst();
    if (!row) lost.push(`checkout ${checkoutId} is missing`);
    else if (canceled && row.canceled_at === null && row.status !== 'canceled')
      lost.push(`checkout ${checkoutId} was canceled, now is not`);
  }
  for (const [publicId, statuses] of acked.payments) {
    const row = await db
      .selectFrom('payments')
      .select('status')
      .where('public_id', '=', publicId)
      .executeTakeFirst();
    if (!row) lost.push(`payment ${publicId} is missing`);
    else
      for (const status of statuses)
        if (!REACHABLE[status].includes(row.status))
          lost.push(`payment ${publicId} was acknowledged ${status}, now ${row.status}`);
  }
  for (const [id, refund] of acked.refunds) {
    const row = await db
      .selectFrom('refunds')
      .select(['status', 'amount', 'payment_id'])
      .where('id', '=', id)
      .executeTakeFirst();
    if (!row) lost.push(`refund ${id} is missing`);
    else if (!(REFUND_REACHABLE[refund.status] ?? []).includes(row.status))
      lost.push(`refund ${id} was acknowledged ${refund.status}, now ${row.status}`);
    else if (row.payment_id !== refund.paymentId) lost.push(`refund ${id} moved to another payment`);
  }
  for (const deliveryId of acked.testDeliveries) {
    const row = await db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('delivery_id', '=', deliveryId)
      .executeTakeFirst();
    if (!row) lost.push(`test delivery ${deliveryId} is missing`);
  }

  // 2. One request, one effect: a retried Idempotency-Key never made a second checkout or refund.
  const doubled = [
    ...(await db
      .selectFrom('checkout_sessions')
      .select(['billing_email as intent'])
      .select((eb) => eb.fn.countAll().as('n'))
      .where('billing_email', 'like', '%@crash.test')
      .groupBy('billing_email')
      .execute()),
    ...(await db
      .selectFrom('refunds')
      .select(['reason as intent'])
      .select((eb) => eb.fn.countAll().as('n'))
      .where('reason', 'like', 'crash matrix %')
      .groupBy('reason')
      .execute()),
  ]
    .filter((row) => Number(row.n) > 1)
    .map((row) => `${row.intent}: ${row.n} times`);

  // 3. The ledger, the provider's view and the outbox (bench/invariants.ts), with what the receiver got.
  const received: ReceivedDelivery[] = receiver.requests.map((request) => ({
    deliveryId: header(request, 'x-webhook-delivery-id'),
    bodySha256: sha256Hex(request.body),
    signatureValid: signatureMatches(secret, request.body, header(request, 'x-webhook-signature')),
  }));
  const invariants = await checkInvariants(db, { received });
  const settlements = await count(
    db
      .selectFrom('wallet_movements')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('kind', '=', 'settlement')
      .executeTakeFirst(),
  );
  const events = await count(
    db
      .selectFrom('events')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirst(),
  );
  const refundsCompleted = await count(
    db
      .selectFrom('refunds')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('status', '=', 'completed')
      .executeTakeFirst(),
  );
  const startTimes = [...service.startMs].sort((a, b) => a - b);
  const summary =
    `crash matrix (${DB_KIND}): ${service.kills} kills in ${(killLoopMs / 1000).toFixed(0)} s ` +
    `(restart p50 ${startTimes[Math.floor(startTimes.length / 2)]} ms), drained in ` +
    `${(drainMs / 1000).toFixed(1)} s, ${((Date.now() - startedAt) / 1000).toFixed(0)} s in all; ` +
    `acknowledged ${acked.checkouts.size} checkouts, ${acked.payments.size} payments, ` +
    `${acked.refunds.size} refunds, ${acked.testDeliveries.size} test deliveries; ` +
    `${settlements} settlements, ${refundsCompleted} refunds completed, ${events} events, ` +
    `${receiver.requests.length} webhook requests received; ${stats.requests} requests, ` +
    `${stats.noAnswer} unanswered, ${doubled.length} idempotent requests applied twice`;
  t.diagnostic(summary);
  console.log(`${summary}\n${formatInvariants(invariants)}`);
  if (lost.length || doubled.length || stats.serverErrors.length)
    console.log([...stats.statuses].map(([what, n]) => `  ${n}× ${what}`).join('\n'));

  assert.deepEqual(lost, [], 'acknowledged changes lost');
  assert.deepEqual(doubled, [], 'one idempotent request made its change more than once');
  assert.deepEqual(
    invariants.filter((result) => result.problemCount > 0),
    [],
    formatInvariants(invariants),
  );
  assert.deepEqual(stats.serverErrors.slice(0, 10), [], 'the service answered 5xx');
  assert.equal(service.kills, KILLS);
  assert.ok(acked.payments.size > 0 && acked.refunds.size > 0, 'the run made payments and refunds');
});
