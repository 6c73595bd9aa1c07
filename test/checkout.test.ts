import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { transactionEventPayload } from '../src/modules/payments/events.ts';
import { expireCheckouts } from '../src/modules/payments/sync.ts';
import {
  attemptsOf,
  CARDS,
  card,
  createCheckout,
  eventsOf,
  type Json,
  pay,
  paymentRow,
  syncStatus,
} from './helpers/checkout.ts';
import { useProvider, wrapProvider } from './helpers/providers.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';

const URLS = {
  successUrl: 'https://shop.test/ok',
  failedUrl: 'https://shop.test/failed',
  cancelUrl: 'https://shop.test/cancel',
};

describe('the hosted checkout with test cards (production)', () => {
  let server: TestServer;
  let merchant: Merchant;
  let key: string;
  let offsetMs = 0;
  before(async () => {
    server = await startTestServer({ worker: false, clock: () => new Date(Date.now() + offsetMs) });
    merchant = await createTestMerchant(server, 'Card Shop');
    key = await createTestKey(server, merchant);
  });
  after(() => server.close());

  test('4242 succeeds: paid and settled, one succeeded attempt, a processing then a paid event', async () => {
    const checkout = await createCheckout(server, key, URLS);
    const page = await call<Json>(server, 'GET', `/api/checkout/${checkout.token}/`);
    assert.equal(page.status, 200, page.text);
    assert.equal(page.body.status, 'open');
    assert.equal(page.body.total, '50.00');
    assert.deepEqual((page.body.merchant as Json).name, 'Card Shop');
    const paid = await pay(server, checkout.token, CARDS.success);
    assert.equal(paid.status, 200, paid.text);
    assert.equal(paid.body.status, 'SUCCESS');
    assert.equal(paid.body.payment_status, 'paid');
    assert.equal(paid.body.redirect_url, URLS.successUrl);
    const attempt = paid.body.attempt as Json;
    assert.equal(attempt.status, 'succeeded');
    assert.equal(attempt.errorMessage, null);
    assert.equal(attempt.paymentMethod, 'card');
    assert.equal(attempt.cardLast4, '4242');
    assert.equal(attempt.cardBrand, 'visa');
    const row = await paymentRow(server, paid.body.transaction_id as string);
    assert.equal(row.status, 'paid');
    assert.equal(row.deposit_status, 'succeeded');
    assert.ok(row.settled_at);
    const events = await eventsOf(server, checkout.checkout_id);
    assert.deepEqual(
      events.map((event) => [event.status, attemptsOf(event).length]),
      [
        ['processing', 0],
        ['paid', 1],
      ],
    );
    const last = events[1];
    assert.equal(last.event, 'transaction.status_changed');
    assert.equal(last.transaction_id, paid.body.transaction_id);
    assert.equal(last.amount, '48.55');
    assert.equal(last.gross_amount, '50.00');
    assert.equal(last.fee_percent, 2.9);
    assert.equal(last.currency, 'USD');
    assert.equal(last.livemode, true);
    assert.equal(attemptsOf(last)[0].status, 'succeeded');
    const sync = await syncStatus(server, checkout.token);
    assert.deepEqual(sync.body, {
      checkout_id: checkout.checkout_id,
      order_id: checkout.checkout_id,
      status: 'SUCCESS',
      transaction_id: paid.body.transaction_id,
      payment_status: 'paid',
      redirect_url: URLS.successUrl,
    });
    assert.equal((await eventsOf(server, checkout.checkout_id)).length, 2);
  });

  test("a card payment's events carry its checkout's references and its attempts as the API reads them", async () => {
    // The pay step builds these payloads from what it holds (the checkout, the attempts it has just
    // written) instead of reading them again: they must be what a read gives.
    const checkout = await createCheckout(server, key, {
      metadata: { order: 'A-17', channel: 'web' },
      client_reference_id: 'cart-99',
    });
    await pay(server, checkout.token, CARDS.declined);
    const paid = await pay(server, checkout.token, CARDS.success);
    assert.equal(paid.body.payment_status, 'paid', paid.text);
    const events = await eventsOf(server, checkout.checkout_id);
    assert.deepEqual(
      events.map((event) => [event.status, attemptsOf(event).length]),
      [
        ['processing', 0],
        ['processing', 1],
        ['paid', 2],
      ],
    );
    for (const event of events) {
      assert.deepEqual(event.metadata, { order: 'A-17', channel: 'web' });
      assert.equal(event.client_reference_id, 'cart-99');
      assert.equal(event.subscription_id, null);
      assert.equal(event.order_id, checkout.checkout_id);
    }
    const api = await call<Json>(server, 'GET', `/api/transactions/${paid.body.transaction_id}/`, {
      apiKey: key,
    });
    assert.equal(api.status, 200, api.text);
    const { event: _event, livemode: _livemode, ...last } = events[2];
    const row = await paymentRow(server, paid.body.transaction_id as string);
    assert.deepEqual(last, await transactionEventPayload(server.ctx.db, row));
    assert.deepEqual(last.depositAttempts, api.body.depositAttempts);
    assert.deepEqual(attemptsOf(events[1]), (api.body.depositAttempts as Json[]).slice(1));
  });

  test('any other Luhn-valid number succeeds and keeps its brand', async () => {
    const checkout = await createCheckout(server, key);
    const paid = await pay(server, checkout.token, CARDS.otherValid);
    assert.equal(paid.body.payment_status, 'paid');
    assert.equal((paid.body.attempt as Json).cardBrand, 'mastercard');
  });

  for (const [name, number, message] of [
    ['declined', CARDS.declined, 'Your card was declined.'],
    ['insufficient funds', CARDS.insufficient, 'Your card has insufficient funds.'],
    ['expired card', CARDS.expired, 'Your card has expired.'],
  ] as const) {
    test(`a declined card (${name}) keeps the payment processing with a new attempt, and a retry can succeed`, async () => {
      const checkout = await createCheckout(server, key);
      const declined = await pay(server, checkout.token, number);
      assert.equal(declined.status, 200, declined.text);
      assert.equal(declined.body.status, 'CHECKOUT_PENDING');
      assert.equal(declined.body.payment_status, 'processing');
      const attempt = declined.body.attempt as Json;
      assert.equal(attempt.status, 'requires_payment_method');
      // The customer is told one generic message (card testing); the merchant's API keeps the reason.
      assert.equal(attempt.errorMessage, 'Your card was declined.');
      let events = await eventsOf(server, checkout.checkout_id);
      assert.deepEqual(
        events.map((event) => [event.status, attemptsOf(event).length]),
        [
          ['processing', 0],
          ['processing', 1],
        ],
      );
      const retried = await pay(server, checkout.token, CARDS.success);
      assert.equal(retried.body.payment_status, 'paid');
      assert.equal(retried.body.transaction_id, declined.body.transaction_id);
      events = await eventsOf(server, checkout.checkout_id);
      assert.equal(events.length, 3);
      const attempts = attemptsOf(events[2]);
      assert.deepEqual(
        attempts.map((a) => a.status),
        ['succeeded', 'requires_payment_method'],
      );
      const api = await call<Json>(server, 'GET', `/api/transactions/${retried.body.transaction_id}/`, {
        apiKey: key,
      });
      assert.deepEqual(
        (api.body.depositAttempts as Json[]).map((a) => a.errorMessage),
        [null, message],
      );
    });
  }

  test('an expiry date in the past is declined as expired by the provider', async () => {
    const checkout = await createCheckout(server, key);
    const response = await call<Json>(server, 'POST', `/api/checkout/${checkout.token}/pay/`, {
      body: { ...card(CARDS.success), exp_month: 1, exp_year: 2020 },
    });
    assert.equal((response.body.attempt as Json).errorMessage, 'Your card was declined.');
    const api = await call<Json>(server, 'GET', `/api/transactions/${response.body.transaction_id}/`, {
      apiKey: key,
    });
    assert.equal((api.body.depositAttempts as Json[])[0].errorMessage, 'Your card has expired.');
  });

  test('0119 fails the payment for good: failed, a failed attempt, no more attempts (410)', async () => {
    const checkout = await createCheckout(server, key, URLS);
    const failed = await pay(server, checkout.token, CARDS.error);
    assert.equal(failed.body.status, 'FAILED');
    assert.equal(failed.body.payment_status, 'failed');
    assert.equal(failed.body.redirect_url, URLS.failedUrl);
    assert.equal((failed.body.attempt as Json).status, 'failed');
    assert.equal((failed.body.attempt as Json).errorMessage, 'Your card was declined.');
    const api = await call<Json>(server, 'GET', `/api/transactions/${failed.body.transaction_id}/`, {
      apiKey: key,
    });
    assert.equal(
      (api.body.depositAttempts as Json[])[0].errorMessage,
      'An error occurred while processing your card.',
    );
    const events = await eventsOf(server, checkout.checkout_id);
    assert.deepEqual(
      events.map((event) => event.status),
      ['processing', 'failed'],
    );
    const again = await pay(server, checkout.token, CARDS.success);
    assert.equal(again.status, 410);
    assert.equal(typeof (again.body as Json).detail, 'string');
    assert.equal((await call(server, 'POST', `/api/checkout/${checkout.token}/cancel/`)).status, 410);
    const row = await paymentRow(server, failed.body.transaction_id as string);
    assert.equal(row.settled_at, null);
  });

  test('concurrent pay calls make one attempt at a time and settle once', async () => {
    const checkout = await createCheckout(server, key);
    const before = await syncStatus(server, checkout.token);
    assert.deepEqual(
      [before.body.status, before.body.transaction_id, before.body.payment_status],
      ['CHECKOUT_PENDING', null, null],
    );
    const results = await Promise.all(Array.from({ length: 4 }, () => pay(server, checkout.token)));
    const statuses = results.map((result) => result.status);
    assert.equal(statuses.filter((status) => status === 200).length, 1, String(statuses));
    assert.ok(
      statuses.every((status) => [200, 409, 410].includes(status)),
      String(statuses),
    );
    const events = await eventsOf(server, checkout.checkout_id);
    assert.deepEqual(
      events.map((event) => [event.status, attemptsOf(event).length]),
      [
        ['processing', 0],
        ['paid', 1],
      ],
    );
    const row = await paymentRow(server, events[1].transaction_id as string);
    const movements = await server.ctx.db
      .selectFrom('wallet_movements')
      .select('id')
      .where('kind', '=', 'settlement')
      .where('reference_id', '=', row.id)
      .execute();
    assert.equal(movements.length, 1);
  });

  test('a number that fails the Luhn check is a 400 naming card_number, and nothing is recorded', async () => {
    const checkout = await createCheckout(server, key);
    const response = await pay(server, checkout.token, CARDS.notLuhn);
    assert.equal(response.status, 400);
    assert.match((response.body as Json).detail as string, /^card_number: /);
    const session = await server.ctx.db
      .selectFrom('checkout_sessions')
      .select('id')
      .where('public_id', '=', checkout.checkout_id)
      .executeTakeFirstOrThrow();
    const payment = await server.ctx.db
      .selectFrom('payments')
      .select('id')
      .where('checkout_session_id', '=', session.id)
      .executeTakeFirst();
    assert.equal(payment, undefined);
    assert.deepEqual(await eventsOf(server, checkout.checkout_id), []);
  });

  test('other card fields are checked and named: exp_month, exp_year, cvc, cardholder_name', async () => {
    const checkout = await createCheckout(server, key);
    for (const [field, value] of [
      ['exp_month', 13],
      ['exp_year', 'soon'],
      ['cvc', '12'],
      ['cardholder_name', '  '],
    ] as const) {
      const response = await call<Json>(server, 'POST', `/api/checkout/${checkout.token}/pay/`, {
        body: { ...card(), [field]: value },
      });
      assert.equal(response.status, 400, field);
      assert.match(response.body.detail as string, new RegExp(`^${field}: `));
    }
    const missing = await call<Json>(server, 'POST', `/api/checkout/${checkout.token}/pay/`, {
      body: { card_number: CARDS.success },
    });
    assert.equal(missing.status, 400);
    assert.match(missing.body.detail as string, /^exp_month: /);
  });

  test('the card number is never stored: only brand and last 4 digits', async () => {
    const checkout = await createCheckout(server, key);
    await pay(server, checkout.token, CARDS.declined);
    await pay(server, checkout.token, CARDS.success);
    const digits = ['4242424242424242', '4000000000000002'];
    const tables = ['deposit_attempts', 'payments', 'events', 'checkout_sessions', 'sim_payments'] as const;
    for (const table of tables) {
      const rows = await server.ctx.db
        .withTables<Record<string, Json>>()
        .selectFrom(table)
        .selectAll()
        .execute();
      const text = JSON.stringify(rows);
      for (const number of digits) assert.ok(!text.includes(number), `${table} holds a card number`);
    }
    const attempts = await server.ctx.db
      .selectFrom('deposit_attempts')
      .select(['card_brand', 'card_last4', 'status'])
      .orderBy('id', 'desc')
      .limit(2)
      .execute();
    assert.deepEqual(
      attempts.map((a) => [a.card_brand, a.card_last4, a.status]),
      [
        ['visa', '4242', 'succeeded'],
        ['visa', '0002', 'requires_payment_method'],
      ],
    );
  });

  test('canceling before any attempt emits canceled with a null transaction id and the product total', async () => {
    const checkout = await createCheckout(server, key, URLS);
    const canceled = await call<Json>(server, 'POST', `/api/checkout/${checkout.token}/cancel/`);
    assert.equal(canceled.status, 200, canceled.text);
    assert.deepEqual(canceled.body, {
      checkout_id: checkout.checkout_id,
      order_id: checkout.checkout_id,
      status: 'CANCELED',
      transaction_id: null,
      payment_status: null,
      redirect_url: URLS.cancelUrl,
    });
    const events = await eventsOf(server, checkout.checkout_id);
    assert.equal(events.length, 1);
    assert.equal(events[0].transaction_id, null);
    assert.equal(events[0].status, 'canceled');
    assert.equal(events[0].amount, '50.00');
    assert.equal(events[0].gross_amount, '50.00');
    assert.deepEqual(events[0].depositAttempts, []);
    assert.equal((await pay(server, checkout.token)).status, 410);
    assert.equal((await call(server, 'POST', `/api/checkout/${checkout.token}/cancel/`)).status, 410);
    assert.equal((await syncStatus(server, checkout.token)).body.status, 'CANCELED');
    assert.equal(
      (await call<Json>(server, 'GET', `/api/checkout/${checkout.token}/`)).body.status,
      'canceled',
    );
    assert.equal((await eventsOf(server, checkout.checkout_id)).length, 1);
  });

  test('canceling after a decline cancels the payment, with its attempts in the event', async () => {
    const checkout = await createCheckout(server, key);
    const declined = await pay(server, checkout.token, CARDS.declined);
    const canceled = await call<Json>(server, 'POST', `/api/checkout/${checkout.token}/cancel/`);
    assert.equal(canceled.body.status, 'CANCELED');
    assert.equal(canceled.body.payment_status, 'canceled');
    assert.equal(canceled.body.transaction_id, declined.body.transaction_id);
    const events = await eventsOf(server, checkout.checkout_id);
    assert.deepEqual(
      events.map((event) => [event.status, attemptsOf(event).length]),
      [
        ['processing', 0],
        ['processing', 1],
        ['canceled', 1],
      ],
    );
  });

  test('an unknown or malformed token is a 404 everywhere', async () => {
    const token = 'A'.repeat(43);
    assert.equal((await call(server, 'GET', `/api/checkout/${token}/`)).status, 404);
    assert.equal((await call(server, 'GET', '/api/checkout/short/')).status, 404);
    assert.equal((await pay(server, token)).status, 404);
    assert.equal((await call(server, 'POST', `/api/checkout/${token}/cancel/`)).status, 404);
    const sync = await syncStatus(server, token);
    assert.equal(sync.status, 404);
    assert.deepEqual(sync.body, { detail: 'Checkout not found.' });
  });

  test('an expired session refuses pay and cancel with 410 and reports FAILED', async () => {
    const checkout = await createCheckout(server, key, URLS);
    offsetMs += 86_400_000 + 1000;
    try {
      const page = await call<Json>(server, 'GET', `/api/checkout/${checkout.token}/`);
      assert.equal(page.body.status, 'expired');
      const paid = await pay(server, checkout.token);
      assert.equal(paid.status, 410);
      assert.deepEqual(paid.body, { detail: 'This checkout has expired.' });
      assert.equal((await call(server, 'POST', `/api/checkout/${checkout.token}/cancel/`)).status, 410);
      const sync = await syncStatus(server, checkout.token);
      assert.equal(sync.body.status, 'FAILED');
      assert.equal(sync.body.transaction_id, null);
      assert.equal(sync.body.redirect_url, URLS.failedUrl);
    } finally {
      offsetMs = 0;
    }
  });

  test('a session that expires after declined attempts fails its payment on sync, once', async () => {
    const checkout = await createCheckout(server, key);
    const declined = await pay(server, checkout.token, CARDS.declined);
    offsetMs += 86_400_000 + 1000;
    try {
      const [first, second] = await Promise.all([
        syncStatus(server, checkout.token),
        syncStatus(server, checkout.token),
      ]);
      assert.equal(first.body.status, 'FAILED');
      assert.equal(second.body.status, 'FAILED');
      assert.equal(first.body.payment_status, 'failed');
      assert.equal((await paymentRow(server, declined.body.transaction_id as string)).status, 'failed');
      const events = await eventsOf(server, checkout.checkout_id);
      assert.deepEqual(
        events.map((event) => event.status),
        ['processing', 'processing', 'failed'],
      );
    } finally {
      offsetMs = 0;
    }
  });

  test('a session that expires while a card attempt is in flight is pending, not failed, until the attempt ends', async () => {
    const checkout = await createCheckout(server, key, URLS);
    const declined = await pay(server, checkout.token, CARDS.declined);
    const transactionId = declined.body.transaction_id as string;
    // A retry's attempt in flight (its slot taken a moment before the expiry, its provider call running).
    const inFlightUntil = (ms: number) =>
      server.ctx.db
        .updateTable('checkout_sessions')
        .set({ attempt_locked_until: new Date(Date.now() + ms).toISOString() })
        .where('public_id', '=', checkout.checkout_id)
        .execute();
    await inFlightUntil(86_400_000 + 60_000);
    offsetMs += 86_400_000 + 1000;
    try {
      for (const answer of [
        await syncStatus(server, checkout.token),
        await call<Json>(server, 'POST', '/api/checkout/sync-status/', {
          apiKey: key,
          body: { checkout_id: checkout.checkout_id },
        }),
      ]) {
        assert.equal(answer.status, 200, answer.text);
        assert.equal(answer.body.status, 'CHECKOUT_PENDING');
        assert.equal(answer.body.payment_status, 'processing');
        assert.equal(answer.body.redirect_url, null);
      }
      assert.equal((await paymentRow(server, transactionId)).status, 'processing');
      // Pay and cancel on the expired checkout are 410, as for any expired checkout.
      const refused = await pay(server, checkout.token, CARDS.success);
      assert.deepEqual([refused.status, refused.body.detail], [410, 'This checkout has expired.']);
      const cancel = await call<Json>(server, 'POST', `/api/checkout/${checkout.token}/cancel/`);
      assert.equal(cancel.status, 410, cancel.text);
      assert.equal((await paymentRow(server, transactionId)).status, 'processing');
      // The attempt ended (its answer recorded, the slot freed): the expiry fails the payment.
      await inFlightUntil(-1000);
      const ended = await syncStatus(server, checkout.token);
      assert.equal(ended.body.status, 'FAILED');
      assert.equal(ended.body.redirect_url, URLS.failedUrl);
      assert.equal((await paymentRow(server, transactionId)).status, 'failed');
    } finally {
      offsetMs = 0;
    }
  });

  test("the worker's expiry leaves a payment alone when an attempt takes the slot while the worker stops it at the provider", async () => {
    const checkout = await createCheckout(server, key);
    const declined = await pay(server, checkout.token, CARDS.declined);
    const transactionId = declined.body.transaction_id as string;
    const lockSlot = (ms: number) =>
      server.ctx.db
        .updateTable('checkout_sessions')
        .set({ attempt_locked_until: new Date(Date.now() + ms).toISOString() })
        .where('public_id', '=', checkout.checkout_id)
        .execute();
    const real = server.ctx.providers.forEnvironment('production');
    // The worker read the payment as expired with no attempt in flight; while it asks the provider to
    // stop it, a retry takes the slot (its clock a moment behind the worker's).
    const undo = useProvider(
      server.ctx,
      wrapProvider(real, {
        async cancelPayment(providerPaymentId) {
          await lockSlot(86_400_000 + 60_000);
          return real.cancelPayment(providerPaymentId);
        },
      }),
    );
    offsetMs += 86_400_000 + 1000;
    try {
      await expireCheckouts(server.ctx);
      assert.equal((await paymentRow(server, transactionId)).status, 'processing');
      undo();
      // Once that attempt is over, the expiry fails the payment.
      await lockSlot(-1000);
      await expireCheckouts(server.ctx);
      assert.equal((await paymentRow(server, transactionId)).status, 'failed');
    } finally {
      undo();
      offsetMs = 0;
    }
  });

  test('the checkout page shows items, totals, urls and expiry', async () => {
    const checkout = await createCheckout(server, key, {
      ...URLS,
      products: [
        { name: 'Mug', unit_price: '12.50', quantity: 2 },
        { name: 'Poster', unit_price: 5 },
      ],
    });
    const page = await call<Json>(server, 'GET', `/api/checkout/${checkout.token}/`);
    assert.equal(page.body.checkout_id, checkout.checkout_id);
    assert.equal(page.body.expires_at, checkout.expires_at);
    assert.equal(page.body.currency, 'USD');
    assert.deepEqual(page.body.items, [
      { id: 'item_1', name: 'Mug', unit_price: '12.50', quantity: 2, amount: '25.00' },
      { id: 'item_2', name: 'Poster', unit_price: '5.00', quantity: 1, amount: '5.00' },
    ]);
    assert.equal(page.body.total, '30.00');
    assert.deepEqual(page.body.urls, {
      success_url: URLS.successUrl,
      failed_url: URLS.failedUrl,
      cancel_url: URLS.cancelUrl,
    });
    assert.deepEqual(page.body.attempts, []);
    assert.equal(page.body.payment_status, null);
  });
});

describe('the public checkout endpoints are rate limited per address and checkout', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ worker: false, env: { KASSA_RATE_LIMIT_PUBLIC: '3' } });
  });
  after(() => server.close());

  test('past the limit a caller gets 429 with Retry-After and RateLimit headers', async () => {
    const apiKey = await createTestKey(server, await createTestMerchant(server, 'Limited Shop'));
    const [first, second] = [await createCheckout(server, apiKey), await createCheckout(server, apiKey)];
    for (let i = 0; i < 3; i += 1)
      assert.equal((await call(server, 'GET', `/api/checkout/${first.token}/`)).status, 200);
    const limited = await call<Json>(server, 'POST', `/api/checkout/${first.token}/pay/`, { body: card() });
    assert.equal(limited.status, 429);
    assert.ok(Number(limited.headers.get('retry-after')) > 0);
    assert.equal(limited.headers.get('ratelimit-limit'), '3');
    assert.equal(typeof limited.body.detail, 'string');
    assert.equal((await syncStatus(server, first.token)).status, 429);
    // Another checkout from the same address has its own window.
    assert.equal((await call(server, 'GET', `/api/checkout/${second.token}/`)).status, 200);
  });
});
