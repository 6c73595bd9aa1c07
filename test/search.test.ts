// Search everywhere: payments by payment or checkout id, customer email and a card's last 4 digits,
// refunds by refund or payment id and reason; one organization and one environment at a time. Also the
// dashboard's payment detail: each card attempt's brand and last 4.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { billing, CARDS, createCheckout, pay } from './helpers/checkout.ts';
import { insertCompletedRefund } from './helpers/refund-rows.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import { eventually } from './helpers/wallet-fixtures.ts';

interface Result {
  type: string;
  id: string;
  summary: string;
  status: string;
  amount: string;
  currency: string;
  environment: string;
}

describe('search', () => {
  let server: TestServer;
  let merchant: Merchant;
  let other: Merchant;
  let grace = { payment: '', checkout: '' };
  let alan = { payment: '', checkout: '' };
  let sandboxPayment = '';

  /** A paid checkout by `email`: a declined card first, then `number`. */
  async function paidBy(
    apiKey: string,
    email: string,
    number: string,
    base: '/api' | '/sandbox/api' = '/api',
    extra: Record<string, unknown> = {},
  ) {
    const created = await createCheckout(server, apiKey, billing({ billing_email: email, ...extra }), base);
    await pay(server, created.token, CARDS.declined);
    const paid = await pay(server, created.token, number);
    assert.equal(paid.status, 200, paid.text);
    const payment = String(paid.body.transaction_id);
    await eventually(async () => {
      const row = await server.ctx.db
        .selectFrom('payments')
        .select('status')
        .where('public_id', '=', payment)
        .executeTakeFirst();
      return row?.status === 'paid' ? true : undefined;
    });
    return { payment, checkout: created.checkout_id };
  }

  before(async () => {
    server = await startTestServer({ env: { KASSA_SIM_REFUND_DELAY_MS: '600000' } });
    merchant = await createTestMerchant(server, 'Search Shop');
    other = await createTestMerchant(server, 'Other Shop');
    const key = await createTestKey(server, merchant);
    const sandboxKey = await createTestKey(server, merchant, { environment: 'sandbox' });
    grace = await paidBy(key, 'grace@hopper.test', CARDS.success);
    alan = await paidBy(key, 'alan@turing.test', CARDS.otherValid, '/api', {
      client_reference_id: 'order-Enigma-1912',
    });
    sandboxPayment = (await paidBy(sandboxKey, 'grace@hopper.test', CARDS.success, '/sandbox/api')).payment;
    await paidBy(await createTestKey(server, other), 'grace@hopper.test', CARDS.success);
    await insertCompletedRefund(server.ctx, {
      organizationId: merchant.organizationId,
      paymentPublicId: alan.payment,
      publicId: 'RFsearch000000001',
      reason: 'Scratched lens',
    });
  });
  after(() => server.close());

  const find = async (q: string, environment = 'production', who = merchant) => {
    const answer = await call<{ results: Result[]; query: string; detail?: string }>(
      server,
      'GET',
      `/api/search/?q=${encodeURIComponent(q)}&environment=${environment}`,
      { token: who.token },
    );
    assert.equal(answer.status, 200, answer.text);
    return answer.body.results.map((result) => `${result.type} ${result.id}`);
  };

  test('a payment is found by its id, its checkout id, in part, and by the customer email', async () => {
    assert.deepEqual(await find(grace.payment), [`payment ${grace.payment}`]);
    assert.deepEqual(await find(grace.payment.slice(0, 12).toLowerCase()), [`payment ${grace.payment}`]);
    assert.deepEqual(await find(grace.checkout), [`payment ${grace.payment}`]);
    assert.deepEqual(await find('GRACE@hopper'), [`payment ${grace.payment}`]);
    assert.deepEqual(await find('nobody@nowhere.test'), []);
  });

  test("a payment is found by the merchant's client_reference_id, in part", async () => {
    assert.deepEqual(await find('order-enigma-1912'), [`payment ${alan.payment}`]);
    assert.deepEqual(await find('ENIGMA'), [`payment ${alan.payment}`]);
  });

  test('a payment is found by the last 4 digits of a card tried on it, not by other digits', async () => {
    assert.deepEqual(await find('4444'), [`payment ${alan.payment}`]);
    // Both payments tried the declined card 4000 0000 0000 0002 first.
    assert.deepEqual(
      (await find('0002')).sort(),
      [`payment ${alan.payment}`, `payment ${grace.payment}`].sort(),
    );
    assert.deepEqual(await find('4243'), []);
  });

  test('refunds are found by refund id, payment id and reason', async () => {
    assert.deepEqual(await find('RFsearch000000001'), ['refund RFsearch000000001']);
    assert.deepEqual(await find('scratched'), ['refund RFsearch000000001']);
    assert.deepEqual(await find(alan.payment), [`payment ${alan.payment}`, 'refund RFsearch000000001']);
    const [refund] = (
      await call<{ results: Result[] }>(server, 'GET', '/api/search/?q=scratched', { token: merchant.token })
    ).body.results;
    assert.deepEqual(refund, {
      ...refund,
      payment_id: alan.payment,
      summary: `${alan.payment} · Scratched lens`,
      status: 'completed',
      amount: '5.00',
      currency: 'USD',
      environment: 'production',
    });
  });

  test('sandbox and production, and organizations, never see each other', async () => {
    assert.deepEqual(await find('grace@hopper', 'sandbox'), [`payment ${sandboxPayment}`]);
    assert.deepEqual(await find(sandboxPayment), []);
    assert.deepEqual(await find(grace.payment, 'sandbox'), []);
    assert.deepEqual(await find(grace.payment, 'production', other), []);
    assert.equal((await find('grace@hopper', 'production', other)).length, 1);
  });

  test('a blank or too long query and a bad environment are 400s with a detail; no session is a 401', async () => {
    for (const [path, detail] of [
      ['/api/search/?q=%20', 'q: may not be blank.'],
      ['/api/search/', 'q: may not be blank.'],
      [`/api/search/?q=${'x'.repeat(201)}`, 'q: must be at most 200 characters.'],
      ['/api/search/?q=a&environment=live', 'environment: must be one of production, sandbox.'],
    ]) {
      const refused = await call<{ detail: string }>(server, 'GET', path, { token: merchant.token });
      assert.equal(refused.status, 400, path);
      assert.equal(refused.body.detail, detail);
    }
    assert.equal((await call(server, 'GET', '/api/search/?q=a')).status, 401);
  });

  test("the dashboard's payment shows each attempt's card brand and last 4, newest first", async () => {
    const detail = await call<{
      depositAttempts: { status: string; cardBrand: string | null; cardLast4: string | null }[];
      payment_link_id: string | null;
    }>(server, 'GET', `/api/payments/${alan.payment}/`, { token: merchant.token });
    assert.deepEqual(
      detail.body.depositAttempts.map((attempt) => [attempt.status, attempt.cardBrand, attempt.cardLast4]),
      [
        ['succeeded', 'mastercard', '4444'],
        ['requires_payment_method', 'visa', '0002'],
      ],
    );
    assert.equal(detail.body.payment_link_id, null);
  });
});
