// #14 finding 4: one checkout took 40 declines and then a success, and declines told the customer
// (or a card tester) exactly why. Now: 5 declines fail the checkout, declines are limited per address
// across checkouts, and the customer sees one generic message while the merchant keeps the reason.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CARDS, createCheckout, eventsOf, type Json, pay } from '../helpers/checkout.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  DB_KIND,
  startTestServer,
  type TestServer,
} from '../helpers/server.ts';

const GENERIC = 'Your card was declined.';

describe(`security #4: card testing (${DB_KIND})`, () => {
  let server: TestServer;
  let apiKey: string;
  before(async () => {
    server = await startTestServer({ worker: false, env: { KASSA_RATE_LIMIT_DECLINES_PER_ADDRESS: '8' } });
    apiKey = await createTestKey(server, await createTestMerchant(server, 'Card Test Shop'));
  });
  after(() => server.close());

  test('the fifth decline fails the checkout with one event; a sixth attempt is a 410', async () => {
    const checkout = await createCheckout(server, apiKey);
    const answers: Json[] = [];
    for (const number of [
      CARDS.declined,
      CARDS.insufficient,
      CARDS.expired,
      CARDS.declined,
      CARDS.declined,
    ]) {
      const response = await pay(server, checkout.token, number);
      assert.equal(response.status, 200, response.text);
      answers.push(response.body);
    }
    assert.deepEqual(
      answers.map((answer) => answer.payment_status),
      ['processing', 'processing', 'processing', 'processing', 'failed'],
    );
    assert.equal(answers[4].status, 'FAILED');
    const sixth = await pay(server, checkout.token, CARDS.success);
    assert.equal(sixth.status, 410, sixth.text);
    const failedEvents = (await eventsOf(server, checkout.order_id)).filter((e) => e.status === 'failed');
    assert.equal(failedEvents.length, 1);
  });

  test('the customer sees one generic decline message; the merchant sees the precise reason', async () => {
    const checkout = await createCheckout(server, apiKey);
    const declined = await pay(server, checkout.token, CARDS.insufficient);
    assert.equal((declined.body.attempt as Json).errorMessage, GENERIC);
    const hosted = await call<Json>(server, 'GET', `/api/checkout/${checkout.token}/`);
    assert.ok(!hosted.text.includes('insufficient'), hosted.text);
    assert.equal(((hosted.body.attempts as Json[])[0] as Json).errorMessage, GENERIC);
    const merchantView = await call<Json>(
      server,
      'GET',
      `/api/transactions/${declined.body.transaction_id}/`,
      {
        apiKey,
      },
    );
    assert.equal(
      ((merchantView.body.depositAttempts as Json[])[0] as Json).errorMessage,
      'Your card has insufficient funds.',
    );
  });

  test('declines from one address across checkouts are limited (429 with Retry-After)', async () => {
    // 5 + 1 declines were made above; the limit of 8 leaves 2 more before every attempt is refused.
    const checkouts = [await createCheckout(server, apiKey), await createCheckout(server, apiKey)];
    assert.equal((await pay(server, checkouts[0].token, CARDS.declined)).status, 200);
    assert.equal((await pay(server, checkouts[1].token, CARDS.declined)).status, 200);
    const refused = await pay(server, checkouts[1].token, CARDS.success);
    assert.equal(refused.status, 429, refused.text);
    assert.ok(Number(refused.headers.get('retry-after')) >= 1);
    const fresh = await createCheckout(server, apiKey);
    assert.equal((await pay(server, fresh.token, CARDS.success)).status, 429);
  });
});
