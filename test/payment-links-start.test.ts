// Starting checkouts from a payment link: the session comes from the snapshot, each start reserves one
// use atomically (never past max_uses, also under 50 parallel starts), and paid payments feed the stats.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Transaction } from 'kysely';
import type { Database } from '../src/db/database.ts';
import { lockSession } from '../src/modules/checkout/store.ts';
import { lockLink } from '../src/modules/payment-links/store.ts';
import { billing, CARDS, pay } from './helpers/checkout.ts';
import type { FakeStripe } from './helpers/fake-stripe/server.ts';
import { someoneWaitsOnALock } from './helpers/locks.ts';
import {
  call,
  createTestMerchant,
  DB_KIND,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import { startWithStripe } from './helpers/stripe.ts';

type Json = Record<string, unknown>;

describe(`starting checkouts from payment links (${DB_KIND})`, () => {
  const servers: TestServer[] = [];
  let server: TestServer;
  let merchant: Merchant;
  before(async () => {
    server = await startTestServer({ worker: false });
    servers.push(server);
    // On PostgreSQL the concurrent starts also come through a second service instance on the same data.
    if (DB_KIND === 'postgres') servers.push(await startTestServer({ worker: false, shareWith: server }));
    merchant = await createTestMerchant(server, 'Start Shop');
    // Return URLs sent to a public start must be on the organization's redirect_origins.
    const origins = await call(server, 'PATCH', '/api/organization/', {
      token: merchant.token,
      body: { redirect_origins: ['https://shop.test'] },
    });
    assert.equal(origins.status, 200, origins.text);
  });
  after(async () => {
    for (const instance of [...servers].reverse()) await instance.close();
  });

  async function product(price: string, currency = 'USD'): Promise<string> {
    const response = await call<Json>(server, 'POST', '/api/products/', {
      token: merchant.token,
      body: { name: `Item ${price}`, unit_price: price, currency },
    });
    assert.equal(response.status, 201, response.text);
    return response.body.id as string;
  }

  async function createLink(body: Json): Promise<string> {
    const response = await call<Json>(server, 'POST', '/api/payment-links/', {
      token: merchant.token,
      body: { name: 'Start link', ...body },
    });
    assert.equal(response.status, 201, response.text);
    return response.body.id as string;
  }

  const start = (id: string, via: TestServer = server, body: Json = billing()) =>
    call<Json>(via, 'POST', `/api/payment-links/public/${id}/start/`, { body });
  const detail = async (id: string) =>
    (await call<Json>(server, 'GET', `/api/payment-links/${id}/`, { token: merchant.token })).body;

  test('start answers 201 with the checkout session object and counts one use', async () => {
    const id = await createLink({ products: [{ product_id: await product('12.50'), quantity: 2 }] });
    const urls = { successUrl: 'https://shop.test/ok', cancelUrl: 'https://shop.test/cancel' };
    const response = await start(id, server, billing(urls));
    assert.equal(response.status, 201, response.text);
    assert.deepEqual(Object.keys(response.body).sort(), [
      'checkout_id',
      'checkout_url',
      'expires_at',
      'order_id',
      'token',
    ]);
    assert.match(response.body.checkout_id as string, /^CO[0-9A-Za-z]{20}$/);
    assert.equal(response.body.order_id, response.body.checkout_id);
    assert.equal(response.body.checkout_url, `${server.url}/checkout/${response.body.token}`);
    assert.ok(Number.isInteger(response.body.expires_at));
    assert.ok((response.body.expires_at as number) > Date.now() / 1000);
    const session = await server.ctx.db
      .selectFrom('checkout_sessions')
      .selectAll()
      .where('public_id', '=', response.body.checkout_id as string)
      .executeTakeFirstOrThrow();
    assert.equal(session.payment_link_id, id);
    assert.equal(session.environment, 'production');
    assert.equal(session.success_url, urls.successUrl);
    assert.equal(session.billing_email, 'ada@example.com');
    const link = await detail(id);
    assert.equal(link.uses_count, 1);
    assert.equal((link.stats as Json).checkouts_started, 1);
  });

  test('the link keeps its snapshot when the catalog price changes, and its checkout charges the snapshot', async () => {
    const productId = await product('10.00');
    const id = await createLink({ products: [{ product_id: productId, quantity: 3 }] });
    const changed = await call(server, 'PATCH', `/api/products/${productId}/`, {
      token: merchant.token,
      body: { unit_price: '99.00', name: 'Renamed' },
    });
    assert.equal(changed.status, 200, changed.text);
    const link = await detail(id);
    assert.deepEqual(link.products, [
      { product_id: productId, name: 'Item 10.00', unit_price: '10.00', quantity: 3 },
    ]);
    const preview = await call<Json>(server, 'GET', `/api/payment-links/public/${id}/`);
    assert.equal((preview.body.totals as Json).gross, '30.00');
    const started = await start(id);
    assert.equal(started.status, 201, started.text);
    const page = await call<Json>(server, 'GET', `/api/checkout/${started.body.token}/`);
    assert.equal(page.status, 200, page.text);
    assert.equal(page.body.total, '30.00');
    assert.deepEqual(
      (page.body.items as Json[]).map((item) => [item.name, item.unit_price, item.quantity]),
      [['Item 10.00', '10.00', 3]],
    );
    const paid = await pay(server, started.body.token as string, CARDS.success);
    assert.equal(paid.body.payment_status, 'paid', paid.text);
    const payment = await server.ctx.db
      .selectFrom('payments')
      .select(['gross', 'payment_link_id'])
      .where('public_id', '=', paid.body.transaction_id as string)
      .executeTakeFirstOrThrow();
    assert.equal(Number(payment.gross), 3000);
    assert.equal(payment.payment_link_id, id);
  });

  test('max_uses 5 and 50 parallel starts: exactly 5 created, 45 gone, uses_count 5', async () => {
    const id = await createLink({ products: [{ product_id: await product('4.00') }], max_uses: 5 });
    const responses = await Promise.all(
      Array.from({ length: 50 }, (_, i) => start(id, servers[i % servers.length])),
    );
    const statuses = responses.map((response) => response.status);
    assert.equal(statuses.filter((status) => status === 201).length, 5, JSON.stringify(statuses));
    assert.equal(statuses.filter((status) => status === 410).length, 45, JSON.stringify(statuses));
    for (const response of responses.filter((r) => r.status === 410)) {
      assert.deepEqual(response.body, {
        detail: 'This payment link has reached its maximum number of uses.',
      });
    }
    const link = await detail(id);
    assert.equal(link.uses_count, 5);
    assert.equal(link.status, 'exhausted');
    const sessions = await server.ctx.db
      .selectFrom('checkout_sessions')
      .select('id')
      .where('payment_link_id', '=', id)
      .execute();
    assert.equal(sessions.length, 5);
    assert.equal((await call(server, 'GET', `/api/payment-links/public/${id}/`)).status, 410);
  });

  test('a start that checkout refuses gives its use back', async () => {
    const id = await createLink({ products: [{ product_id: await product('5.00') }], max_uses: 1 });
    // The operator raises the minimum payment after the link was made: checkout now refuses the total.
    await server.ctx.db
      .updateTable('organizations')
      .set({ min_payment: 1000 })
      .where('id', '=', merchant.organizationId)
      .execute();
    try {
      const refused = await start(id);
      assert.equal(refused.status, 400, refused.text);
      assert.match(
        refused.body.detail as string,
        /^products: the total 5\.00 USD is below the minimum payment/,
      );
      assert.equal((await detail(id)).uses_count, 0);
    } finally {
      await server.ctx.db
        .updateTable('organizations')
        .set({ min_payment: 50 })
        .where('id', '=', merchant.organizationId)
        .execute();
    }
    assert.equal((await start(id)).status, 201);
    assert.equal((await detail(id)).uses_count, 1);
  });

  test('paid payments from a link show in its stats and its payments list; unpaid ones only as started', async () => {
    const id = await createLink({
      products: [{ product_id: await product('20.00', 'EUR') }],
      currency: 'EUR',
    });
    const paidIds: string[] = [];
    for (let i = 0; i < 2; i += 1) {
      const started = await start(id);
      const paid = await pay(server, started.body.token as string, CARDS.success);
      assert.equal(paid.body.payment_status, 'paid', paid.text);
      paidIds.push(paid.body.transaction_id as string);
    }
    const failed = await start(id);
    const attempt = await pay(server, failed.body.token as string, CARDS.error);
    assert.equal(attempt.body.payment_status, 'failed', attempt.text);
    await start(id); // started, never paid
    const link = await detail(id);
    assert.deepEqual(link.stats, { views: 0, checkouts_started: 4, payments_paid: 2, revenue: '40.00' });
    assert.equal(link.currency, 'EUR');

    const payments = await call<Json[]>(server, 'GET', `/api/payment-links/${id}/payments/`, {
      token: merchant.token,
    });
    assert.equal(payments.status, 200);
    assert.equal(payments.body.length, 3);
    assert.deepEqual(
      payments.body.map((payment) => payment.status),
      ['failed', 'paid', 'paid'],
    );
    assert.deepEqual(
      payments.body
        .slice(1)
        .map((payment) => payment.id)
        .sort(),
      [...paidIds].sort(),
    );
    const first = payments.body[2];
    assert.equal(first.amount, '20.00');
    assert.equal(first.currency, 'EUR');
    assert.equal(first.payer_email, 'ada@example.com');
    assert.equal((first.depositAttempts as Json[]).length, 1);
    assert.equal(typeof first.checkout_id, 'string');

    const listed = await call<Json[]>(server, 'GET', '/api/payment-links/', { token: merchant.token });
    const row = listed.body.find((entry) => entry.id === id);
    assert.deepEqual(row?.stats, link.stats);
  });
});

/** A link of one use and the checkout started from it (which holds that use). */
async function oneUseCheckout(server: TestServer, merchant: Merchant) {
  const product = await call<Json>(server, 'POST', '/api/products/', {
    token: merchant.token,
    body: { name: 'Last one', unit_price: '9.00', currency: 'USD' },
  });
  const link = await call<Json>(server, 'POST', '/api/payment-links/', {
    token: merchant.token,
    body: { name: 'One use', products: [{ product_id: product.body.id }], max_uses: 1 },
  });
  assert.equal(link.status, 201, link.text);
  const linkId = link.body.id as string;
  const start = () =>
    call<Json>(server, 'POST', `/api/payment-links/public/${linkId}/start/`, { body: billing() });
  const started = await start();
  assert.equal(started.status, 201, started.text);
  const session = await server.ctx.db
    .selectFrom('checkout_sessions')
    .innerJoin('payment_links', 'payment_links.uuid', 'checkout_sessions.payment_link_id')
    .select(['checkout_sessions.id', 'checkout_sessions.expires_at', 'payment_links.id as link_row_id'])
    .where('checkout_sessions.public_id', '=', started.body.checkout_id as string)
    .executeTakeFirstOrThrow();
  return {
    linkId,
    start,
    checkoutId: started.body.checkout_id as string,
    token: started.body.token as string,
    session,
  };
}

/**
 * A request made while a transaction holds a row lock (`hold`), until the request waits for it (or
 * answers without waiting: its outcome then shows it); `meanwhile` runs in that transaction before it
 * commits. `waiter` names the request for the failure message.
 */
async function requestWhileHeld<T>(
  server: TestServer,
  waiter: string,
  hold: (trx: Transaction<Database>) => Promise<unknown>,
  request: () => Promise<T>,
  meanwhile: (trx: Transaction<Database>) => Promise<unknown>,
): Promise<T> {
  const { promise: released, resolve: release } = Promise.withResolvers<void>();
  const { promise: heldYet, resolve: held } = Promise.withResolvers<Transaction<Database>>();
  const holder = server.ctx.db.transaction().execute(async (trx) => {
    await hold(trx);
    held(trx);
    await released;
  });
  const trx = await heldYet;
  const answer = request();
  try {
    await Promise.race([someoneWaitsOnALock(server.ctx.db, waiter), answer]);
    await meanwhile(trx);
  } finally {
    release();
    await holder;
  }
  return answer;
}

describe(`a link checkout's first payment at its expiry (${DB_KIND})`, () => {
  let server: TestServer;
  let merchant: Merchant;
  let offsetMs = 0;
  before(async () => {
    server = await startTestServer({ worker: false, clock: () => new Date(Date.now() + offsetMs) });
    merchant = await createTestMerchant(server, 'Last Use Shop');
  });
  after(() => server.close());

  test('a start that found the checkout expired and unpaid is never followed by its payment (max_uses 1)', async () => {
    const { linkId, token, session } = await oneUseCheckout(server, merchant);
    // A second start holds the link's lock at the checkout's expiry: it counts no use (the checkout
    // expired unpaid) and takes the last one. Meanwhile the customer's card attempt, begun a moment
    // before the expiry, reaches the link: it waits for the lock, then judges the expiry by the clock
    // after it. (SQLite: one process's requests queue on its one connection before they read the
    // clock, so this passes there either way; across processes the attempt would queue at BEGIN.)
    offsetMs = Date.parse(session.expires_at) - Date.now() - 2_000;
    let answer: Awaited<ReturnType<typeof pay>>;
    try {
      answer = await requestWhileHeld(
        server,
        'the card attempt (the link lock)',
        (trx) => lockLink(trx, session.link_row_id),
        () => pay(server, token, CARDS.success),
        async () => {
          offsetMs = Date.parse(session.expires_at) - Date.now() + 1_000;
        },
      );
    } finally {
      offsetMs = 0;
    }
    assert.equal(answer.status, 410, answer.text);
    assert.equal((answer.body as Json).detail, 'This checkout has expired.');
    const paid = await server.ctx.db
      .selectFrom('payments')
      .select('id')
      .where('payment_link_id', '=', linkId)
      .execute();
    assert.deepEqual(paid, []);
  });
});

describe(`a link checkout's PaymentIntent for Stripe's form, opened as its use is given back (${DB_KIND})`, () => {
  let fake: FakeStripe;
  let server: TestServer;
  let close: () => Promise<void>;
  let merchant: Merchant;
  let offsetMs = 0;
  before(async () => {
    ({ fake, server, close } = await startWithStripe({
      worker: false,
      clock: () => new Date(Date.now() + offsetMs),
    }));
    merchant = await createTestMerchant(server, 'Last Use Stripe Shop');
  });
  after(() => close());

  /** The customer's page (which opens the payment and its PaymentIntent for Stripe's form). */
  async function page(token: string): Promise<Json> {
    const answer = await call<Json>(server, 'GET', `/api/checkout/${token}/`);
    assert.equal(answer.status, 200, answer.text);
    return answer.body;
  }

  /** The page offered no PaymentIntent, and none was opened, neither in Kassa nor at Stripe. */
  async function nothingToConfirm(shown: Json, linkId: string, checkoutId: string) {
    assert.deepEqual(
      [shown.transaction_id, (shown.provider as Json).client_secret],
      [null, null],
      'no PaymentIntent to confirm in the form',
    );
    const opened = await server.ctx.db
      .selectFrom('payments')
      .select('id')
      .where('payment_link_id', '=', linkId)
      .execute();
    assert.deepEqual(opened, []);
    const intents = [...fake.ledger.intents.values()].filter(
      (intent) => intent.metadata.kassa_checkout_id === checkoutId,
    );
    assert.deepEqual(intents, []);
  }

  test('a start that found the checkout expired and unpaid is never followed by a PaymentIntent to confirm (max_uses 1)', async () => {
    const { linkId, start, checkoutId, token, session } = await oneUseCheckout(server, merchant);
    // A second start holds the link's lock at the checkout's expiry: it counts no use (the checkout
    // expired unpaid) and takes the last one. Meanwhile the customer's page, read a moment before the
    // expiry, opens the payment and its PaymentIntent for Stripe's form: it must wait for the lock and
    // judge the expiry by the clock after it, or the customer confirms a PaymentIntent in the form after
    // the use was given away. (SQLite: one process's requests queue on its one connection before they
    // read the clock, so this passes there either way.)
    offsetMs = Date.parse(session.expires_at) - Date.now() - 2_000;
    try {
      const shown = await requestWhileHeld(
        server,
        'the hosted step (the link lock)',
        (trx) => lockLink(trx, session.link_row_id),
        () => page(token),
        async () => {
          offsetMs = Date.parse(session.expires_at) - Date.now() + 1_000;
        },
      );
      assert.equal(shown.status, 'expired');
      await nothingToConfirm(shown, linkId, checkoutId);
      // The use is the new start's: one more start takes it, and the link is exhausted then.
      const again = await start();
      assert.equal(again.status, 201, again.text);
      assert.equal((await start()).status, 410);
    } finally {
      offsetMs = 0;
    }
  });

  test('a checkout canceled while its page waited to open the PaymentIntent gets none (its use given back)', async () => {
    const { linkId, start, checkoutId, token, session } = await oneUseCheckout(server, merchant);
    // The customer's cancel holds the checkout's lock as the page (read before it) comes to open the
    // payment: the page reads the checkout again under the lock, and finds it canceled.
    const shown = await requestWhileHeld(
      server,
      'the hosted step (the checkout lock)',
      (trx) => lockSession(trx, session.id),
      () => page(token),
      (trx) =>
        trx
          .updateTable('checkout_sessions')
          .set({ canceled_at: new Date().toISOString() })
          .where('id', '=', session.id)
          .execute(),
    );
    await nothingToConfirm(shown, linkId, checkoutId);
    const again = await start();
    assert.equal(again.status, 201, again.text);
  });
});
