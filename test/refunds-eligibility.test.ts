import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { PaymentStatus } from '../src/modules/payments/table.ts';
import { createCheckout, pay } from './helpers/checkout.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import { assertLedgerBalanced, createPaidPayment } from './helpers/wallet-fixtures.ts';

describe('refund eligibility and validation', () => {
  let server: TestServer;
  // Refunds stay processing for the whole suite, so "in progress" can be observed.
  before(async () => {
    server = await startTestServer({ env: { KASSA_SIM_REFUND_DELAY_MS: '600000' } });
  });
  after(() => server.close());

  async function shop(): Promise<Merchant & { key: string }> {
    const merchant = await createTestMerchant(server);
    return { ...merchant, key: await createTestKey(server, merchant) };
  }
  const refund = (apiKey: string, id: string | number, body: unknown, base = '/api') =>
    call<{ detail: string; status: string; amount_usd: string }>(
      server,
      'POST',
      `${base}/transactions/${id}/refund/`,
      {
        apiKey,
        body,
      },
    );
  const detail = async (apiKey: string, id: string | number, body: unknown) => {
    const response = await refund(apiKey, id, body);
    assert.equal(response.status, 400, response.text);
    return response.body.detail;
  };

  test('a payment that is not paid or refund_pending is refused with its status', async () => {
    const merchant = await shop();
    for (const status of ['processing', 'pending', 'failed', 'canceled'] as PaymentStatus[]) {
      const payment = await createPaidPayment(server.ctx, {
        organizationId: merchant.organizationId,
        gross: 1000n,
        status,
      });
      assert.equal(
        await detail(merchant.key, payment.public_id, { reason: 'x' }),
        `Payment is not refundable in status ${status}.`,
      );
    }
  });

  test('a payment refunded here or marked refunded by the provider is refused as already refunded', async () => {
    const merchant = await shop();
    const { organizationId } = merchant;
    const refunded = await createPaidPayment(server.ctx, {
      organizationId,
      gross: 1000n,
      status: 'refunded',
      settle: false,
    });
    assert.match(
      await detail(merchant.key, refunded.id, { reason: 'x' }),
      /^Payment has already been refunded/,
    );
    for (const providerRefundState of ['FULLY_REFUNDED', 'PARTIAL_REFUNDED']) {
      const marked = await createPaidPayment(server.ctx, {
        organizationId,
        gross: 1000n,
        providerRefundState,
      });
      assert.match(
        await detail(merchant.key, marked.id, { reason: 'x' }),
        /^Payment has already been refunded/,
      );
    }
  });

  test('a second refund while one is processing is refused as in progress', async () => {
    const merchant = await shop();
    const payment = await createPaidPayment(server.ctx, {
      organizationId: merchant.organizationId,
      gross: 5000n,
    });
    const first = await refund(merchant.key, payment.public_id, { reason: 'first', amount: '10.00' });
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.status, 'processing');
    assert.equal(
      await detail(merchant.key, payment.public_id, { reason: 'second', amount: '1.00' }),
      'A refund is already in progress for this payment.',
    );
  });

  test('an amount above the remainder is refused with the remaining amount', async () => {
    const merchant = await shop();
    const payment = await createPaidPayment(server.ctx, {
      organizationId: merchant.organizationId,
      gross: 10_000n,
      currency: 'EUR',
    });
    assert.equal(
      await detail(merchant.key, payment.id, { reason: 'x', amount: '100.01' }),
      'Refund amount exceeds remaining refundable amount (100.00 EUR remaining).',
    );
  });

  test('an empty wallet refuses any amount; a small one limits the amount, also when it is omitted', async () => {
    const merchant = await shop();
    const { organizationId } = merchant;
    const unsettled = await createPaidPayment(server.ctx, { organizationId, gross: 10_000n, settle: false });
    for (const body of [{ reason: 'x' }, { reason: 'x', amount: '1.00' }]) {
      assert.equal(
        await detail(merchant.key, unsettled.id, body),
        'Insufficient wallet balance to refund any amount.',
      );
    }
    // 10.00 settled: available 9.71 USD = 10.00 of a 100.00 payment whose net is 97.10.
    await createPaidPayment(server.ctx, { organizationId, gross: 1000n });
    for (const body of [{ reason: 'x' }, { reason: 'x', amount: '10.01' }]) {
      const message = await detail(merchant.key, unsettled.id, body);
      assert.equal(
        message,
        'Refund amount exceeds wallet-available limit (at most 10.00 USD can be refunded now).',
      );
    }
    const ok = await refund(merchant.key, unsettled.id, { reason: 'x', amount: '10.00' });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.amount_usd, '9.71');
    const buckets = await assertLedgerBalanced(server.ctx, organizationId);
    assert.equal(buckets.held, buckets.balance + buckets.reserve);
  });

  test('reason and amount are validated, naming the field', async () => {
    const merchant = await shop();
    const payment = await createPaidPayment(server.ctx, {
      organizationId: merchant.organizationId,
      gross: 1000n,
    });
    const cases: [unknown, RegExp][] = [
      [{}, /^reason: this field is required/],
      [{ reason: '   ' }, /^reason: may not be blank/],
      [{ reason: 'x'.repeat(501) }, /^reason: must be at most 500 characters/],
      [{ reason: 5 }, /^reason: must be of type string/],
      [{ reason: 'x', amount: '1.001' }, /^amount: /],
      [{ reason: 'x', amount: '0' }, /^amount: must be greater than 0/],
      [{ reason: 'x', amount: '-1.00' }, /^amount: /],
      [{ reason: 'x', amount: 'ten' }, /^amount: /],
      [{ reason: 'x', amount: true }, /^amount: /],
    ];
    for (const [body, pattern] of cases) assert.match(await detail(merchant.key, payment.id, body), pattern);
    const longest = await refund(merchant.key, payment.id, { reason: 'x'.repeat(500), amount: '1.5' });
    assert.equal(longest.status, 200, longest.text);
  });

  test('the payment is found by public or numeric id within the key organization and environment only', async () => {
    const merchant = await shop();
    const other = await shop();
    const sandboxKey = await createTestKey(server, merchant, { environment: 'sandbox' });
    const mine = await createPaidPayment(server.ctx, {
      organizationId: merchant.organizationId,
      gross: 1000n,
    });
    const theirs = await createPaidPayment(server.ctx, {
      organizationId: other.organizationId,
      gross: 1000n,
    });
    const sandbox = await createPaidPayment(server.ctx, {
      organizationId: merchant.organizationId,
      environment: 'sandbox',
      gross: 1000n,
    });
    for (const id of [
      theirs.public_id,
      theirs.id,
      sandbox.public_id,
      sandbox.id,
      'TX0000000000000000',
      'nonsense',
      0,
    ]) {
      const response = await refund(merchant.key, id, { reason: 'x' });
      assert.equal(response.status, 404, `${id}: ${response.text}`);
      assert.equal(typeof response.body.detail, 'string');
    }
    assert.equal((await refund(sandboxKey, mine.id, { reason: 'x' }, '/sandbox/api')).status, 404);
    assert.equal((await refund(sandboxKey, sandbox.public_id, { reason: 'x' }, '/sandbox/api')).status, 200);
    assert.equal((await refund(merchant.key, mine.id, { reason: 'x' })).status, 200);
  });

  test('refund creation needs an API key with refunds:write or payments:write', async () => {
    const merchant = await createTestMerchant(server);
    const payment = await createPaidPayment(server.ctx, {
      organizationId: merchant.organizationId,
      gross: 1000n,
    });
    const body = { reason: 'x', amount: '1.00' };
    assert.equal(
      (await call(server, 'POST', `/api/transactions/${payment.id}/refund/`, { body })).status,
      401,
    );
    const session = await call(server, 'POST', `/api/transactions/${payment.id}/refund/`, {
      body,
      token: merchant.token,
    });
    assert.equal(session.status, 401);
    const readOnly = await createTestKey(server, merchant, {
      scopes: 'refunds:read payments:read checkout:create',
    });
    const forbidden = await refund(readOnly, payment.id, body);
    assert.equal(forbidden.status, 403);
    assert.equal(typeof forbidden.body.detail, 'string');
    const revoke = await call<{ id: number }[]>(server, 'GET', '/api/organization/api-keys/', {
      token: merchant.token,
    });
    for (const { id } of revoke.body) {
      await call(server, 'POST', `/api/organization/api-keys/${id}/revoke/`, { token: merchant.token });
    }
    const writer = await createTestKey(server, merchant, { scopes: 'payments:write' });
    assert.equal((await refund(writer, payment.id, body)).status, 200);
  });
});

describe('a payment whose fee took the whole amount (net 0)', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ worker: false });
  });
  after(() => server.close());

  test('its refund is refused with a sentence, never a 500, and the wallet is untouched', async () => {
    const merchant = await createTestMerchant(server, 'All Fees');
    const apiKey = await createTestKey(server, merchant);
    // Another payment, at the default 2.90 % fee, so the wallet has money a refund could draw on.
    const funded = await createCheckout(server, apiKey);
    assert.equal((await pay(server, funded.token)).body.payment_status, 'paid');
    // As the operator's `kassa org set --fee-percent 100` would: the fee is the whole gross.
    await server.ctx.db
      .updateTable('organizations')
      .set({ fee_bp: 10_000 })
      .where('id', '=', merchant.organizationId)
      .execute();
    const checkout = await createCheckout(server, apiKey);
    const paid = await pay(server, checkout.token);
    assert.equal(paid.body.payment_status, 'paid', paid.text);
    const payment = await call<{ net_amount: string }>(
      server,
      'GET',
      `/api/transactions/${paid.body.transaction_id}/`,
      { apiKey },
    );
    assert.equal(payment.body.net_amount, '0.00');
    const wallet = async () =>
      (await call<Record<string, string>>(server, 'GET', '/api/wallet/', { token: merchant.token })).body;
    const before = await wallet();
    for (const body of [{ reason: 'whole' }, { reason: 'part', amount: '10.00' }]) {
      const refused = await call<{ detail: string }>(
        server,
        'POST',
        `/api/transactions/${paid.body.transaction_id}/refund/`,
        { apiKey, body },
      );
      assert.equal(refused.status, 400, refused.text);
      assert.equal(
        refused.body.detail,
        'Payment is not refundable: its fee took the whole amount, so nothing was settled to the wallet for it.',
      );
    }
    assert.deepEqual(await wallet(), before);
    await assertLedgerBalanced(server.ctx, merchant.organizationId);
  });
});
