import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createCheckout, pay, paymentRow } from './helpers/checkout.ts';
import { createTestKey, createTestMerchant, startTestServer, type TestServer } from './helpers/server.ts';

const REFUND_DELAY_MS = 3_000;

describe('the simulator as a refund provider', () => {
  let server: TestServer;
  let sandboxKey: string;
  let liveKey: string;
  let offsetMs = 0;
  let reference = 0;
  before(async () => {
    server = await startTestServer({
      worker: false,
      clock: () => new Date(Date.now() + offsetMs),
      env: { KASSA_SIM_REFUND_DELAY_MS: String(REFUND_DELAY_MS) },
    });
    const merchant = await createTestMerchant(server, 'Refund Sim');
    sandboxKey = await createTestKey(server, merchant, { environment: 'sandbox' });
    liveKey = await createTestKey(server, merchant);
  });
  after(() => server.close());

  async function paidPayment(environment: 'production' | 'sandbox' = 'sandbox') {
    const checkout =
      environment === 'sandbox'
        ? await createCheckout(server, sandboxKey, {}, '/sandbox/api')
        : await createCheckout(server, liveKey);
    const paid = await pay(server, checkout.token);
    return paymentRow(server, paid.body.transaction_id as string);
  }

  function refund(
    providerPaymentId: string,
    amount: bigint,
    reason = 'customer asked',
    environment = 'sandbox',
  ) {
    reference += 1;
    return server.ctx.providers.simulator.createRefund({
      idempotencyKey: `kassa-refund-RFtest${reference}`,
      reference: `RFtest${reference}`,
      environment: environment as 'sandbox' | 'production',
      providerPaymentId,
      amountMinor: amount,
      basisAmountMinor: amount,
      currency: 'USD',
      reason,
      metadata: {},
    });
  }

  test('a refund is processing at once and completed after the delay; the payment shows partial then full', async () => {
    const payment = await paidPayment();
    const id = payment.provider_payment_id as string;
    const first = await refund(id, 2000n);
    assert.equal(first.status, 'processing');
    assert.equal(
      (await server.ctx.providers.simulator.getRefund(first.providerRefundId))?.status,
      'processing',
    );
    offsetMs += REFUND_DELAY_MS;
    assert.equal(
      (await server.ctx.providers.simulator.getRefund(first.providerRefundId))?.status,
      'completed',
    );
    assert.equal((await server.ctx.providers.simulator.getPayment(id))?.refundState, 'PARTIAL_REFUNDED');
    const rest = await refund(id, 3000n);
    offsetMs += REFUND_DELAY_MS;
    assert.equal(
      (await server.ctx.providers.simulator.getRefund(rest.providerRefundId))?.status,
      'completed',
    );
    assert.equal((await server.ctx.providers.simulator.getPayment(id))?.refundState, 'FULLY_REFUNDED');
    const tooMuch = await refund(id, 1n);
    assert.deepEqual(
      [tooMuch.status, tooMuch.errorMessage],
      ['failed', 'The refund amount exceeds the refundable amount.'],
    );
  });

  test('the same reference returns the same refund', async () => {
    const payment = await paidPayment();
    const input = {
      idempotencyKey: 'kassa-refund-RFsame',
      reference: 'RFsame',
      environment: 'sandbox' as const,
      providerPaymentId: payment.provider_payment_id as string,
      amountMinor: 100n,
      basisAmountMinor: 100n,
      currency: 'USD',
      reason: 'dup',
      metadata: {},
    };
    const [a, b] = await Promise.all([
      server.ctx.providers.simulator.createRefund(input),
      server.ctx.providers.simulator.createRefund(input),
    ]);
    assert.equal(a.providerRefundId, b.providerRefundId);
  });

  test('sandbox scripts: simulate:refund_declined fails at once, simulate:refund_failed fails at sync', async () => {
    const payment = await paidPayment();
    const id = payment.provider_payment_id as string;
    const declined = await refund(id, 100n, 'please simulate:refund_declined');
    assert.deepEqual([declined.status, declined.errorMessage], ['failed', 'The refund was declined.']);
    const failing = await refund(id, 100n, 'simulate:refund_failed');
    assert.equal(failing.status, 'processing');
    offsetMs += REFUND_DELAY_MS;
    const read = await server.ctx.providers.simulator.getRefund(failing.providerRefundId);
    assert.equal(read?.status, 'failed');
    assert.equal((await server.ctx.providers.simulator.getPayment(id))?.refundState, null);
  });

  test('in production the scripts are ordinary reasons', async () => {
    const payment = await paidPayment('production');
    const result = await refund(
      payment.provider_payment_id as string,
      100n,
      'simulate:refund_declined',
      'production',
    );
    assert.equal(result.status, 'processing');
  });

  test('an unknown provider payment or refund', async () => {
    assert.equal(await server.ctx.providers.simulator.getPayment('simpay_nothing'), null);
    assert.equal(await server.ctx.providers.simulator.getRefund('simref_nothing'), null);
    const result = await refund('simpay_nothing', 100n);
    assert.deepEqual([result.status, result.errorMessage], ['failed', 'The payment cannot be refunded.']);
  });
});
