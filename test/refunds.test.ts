import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  call,
  createTestKey,
  createTestMerchant,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import {
  assertLedgerBalanced,
  createPaidPayment,
  eventsOf,
  eventually,
  payThroughCheckout,
} from './helpers/wallet-fixtures.ts';

interface Created {
  status: string;
  refund_id: number;
  refund_public_id: string;
  transaction_id: number;
  amount: string;
  currency: string;
  amount_usd: string;
  amount_in_cents: number;
}

describe('refund lifecycle', () => {
  let server: TestServer;
  let merchant: Merchant;
  let key: string;
  let sandboxKey: string;
  before(async () => {
    server = await startTestServer({ env: { KASSA_SIM_REFUND_DELAY_MS: '300' } });
    merchant = await createTestMerchant(server);
    key = await createTestKey(server, merchant);
    sandboxKey = await createTestKey(server, merchant, { environment: 'sandbox' });
  });
  after(() => server.close());

  const refund = (id: string | number, body: unknown, apiKey = key, base = '/api') =>
    call<Created>(server, 'POST', `${base}/transactions/${id}/refund/`, { apiKey, body });
  const refundRow = (id: number) =>
    server.ctx.db.selectFrom('refunds').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const paymentRow = (id: number) =>
    server.ctx.db.selectFrom('payments').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const settled = (id: number, status: string) =>
    eventually(async () => ((await refundRow(id)).status === status ? true : undefined));
  const wallet = async (environment = 'production') => {
    const { entries: _entries, ...buckets } = (
      await call(server, 'GET', `/api/wallet/?environment=${environment}`, { token: merchant.token })
    ).body;
    return buckets;
  };

  test('a full refund holds the net, then completes: wallet debited, payment refunded, events sent', async () => {
    const payment = await payThroughCheckout(server, key, { unitPrice: 100 });
    const response = await refund(payment.public_id, { reason: 'Customer changed their mind' });
    assert.equal(response.status, 200, response.text);
    assert.deepEqual(response.body, {
      id: `RF${response.body.refund_public_id}`,
      transaction: payment.public_id,
      status: 'processing',
      refund_id: response.body.refund_id,
      refund_public_id: response.body.refund_public_id,
      transaction_id: payment.id,
      amount: '100.00',
      currency: 'USD',
      amount_usd: '97.10',
      amount_in_cents: 10000,
    });
    assert.equal(typeof response.body.refund_id, 'number');
    assert.match(response.body.refund_public_id, /^[0-9A-Za-z]{16}$/);
    assert.equal((await paymentRow(payment.id)).status, 'refund_pending');
    assert.deepEqual(await wallet(), {
      balance: '87.39',
      reserve: '9.71',
      held: '97.10',
      available: '0.00',
      currency: 'USD',
      environment: 'production',
    });
    await settled(response.body.refund_id, 'completed');
    const after = await paymentRow(payment.id);
    assert.equal(after.status, 'refunded');
    assert.equal(Number(after.refunded_amount), 10000);
    const buckets = await assertLedgerBalanced(server.ctx, merchant.organizationId);
    assert.deepEqual(buckets, { balance: 0n, reserve: 0n, held: 0n });
    const refundEvents = await eventsOf(server.ctx, `RF${response.body.refund_public_id}`);
    assert.deepEqual(
      refundEvents.map((event) => [event.type, event.payload.status]),
      [
        ['refund.status_changed', 'processing'],
        ['refund.status_changed', 'completed'],
      ],
    );
    assert.deepEqual(Object.keys(refundEvents[1].payload).sort(), [
      'amount',
      'amount_in_cents',
      'amount_usd',
      'created_at',
      'currency',
      'event',
      'livemode',
      'reason',
      'refund_id',
      'status',
      'transaction_id',
      'updated_at',
    ]);
    assert.equal(refundEvents[1].payload.transaction_id, payment.public_id);
    const paymentEvents = (await eventsOf(server.ctx, payment.public_id)).map(
      (event) => event.payload.status,
    );
    assert.deepEqual(paymentEvents.slice(-2), ['refund_pending', 'refunded']);
  });

  test('partial refunds, then the remainder, take the payment and the wallet down to zero', async () => {
    const payment = await payThroughCheckout(server, key, { unitPrice: 100 });
    const steps: [string | undefined, string, string, string][] = [
      ['30.00', '29.13', 'paid', '67.97'],
      ['50.00', '48.55', 'paid', '19.42'],
      [undefined, '19.42', 'refunded', '0.00'],
    ];
    for (const [amount, amountUsd, paymentStatus, available] of steps) {
      const response = await refund(payment.id, { reason: 'Partial', ...(amount ? { amount } : {}) });
      assert.equal(response.status, 200, response.text);
      assert.equal(response.body.amount_usd, amountUsd);
      await settled(response.body.refund_id, 'completed');
      assert.equal((await paymentRow(payment.id)).status, paymentStatus);
      assert.equal((await wallet()).available, available);
      await assertLedgerBalanced(server.ctx, merchant.organizationId);
    }
    assert.equal(Number((await paymentRow(payment.id)).refunded_amount), 10000);
    const again = await refund(payment.id, { reason: 'Once more' });
    assert.equal(again.status, 400);
    assert.match(
      String((again.body as unknown as { detail: string }).detail),
      /^Payment has already been refunded/,
    );
  });

  test('a refund that fails at the provider later releases the hold and the payment is paid again', async () => {
    const payment = await payThroughCheckout(server, sandboxKey, { unitPrice: 40, sandbox: true });
    const before = await wallet('sandbox');
    const response = await refund(
      payment.public_id,
      { reason: 'simulate:refund_failed' },
      sandboxKey,
      '/sandbox/api',
    );
    assert.equal(response.status, 200, response.text);
    assert.equal(response.body.status, 'processing');
    assert.equal((await wallet('sandbox')).held, response.body.amount_usd);
    await settled(response.body.refund_id, 'failed');
    assert.equal((await paymentRow(payment.id)).status, 'paid');
    assert.deepEqual(await wallet('sandbox'), before);
    await assertLedgerBalanced(server.ctx, merchant.organizationId, 'sandbox');
    const statuses = (await eventsOf(server.ctx, payment.public_id)).map((event) => event.payload.status);
    assert.deepEqual(statuses.slice(-2), ['refund_pending', 'paid']);
    const refundStatuses = (await eventsOf(server.ctx, `RF${response.body.refund_public_id}`)).map(
      (event) => event.payload.status,
    );
    assert.deepEqual(refundStatuses, ['processing', 'failed']);
  });

  test('a refund the provider declines at once answers failed, with nothing held', async () => {
    const payment = await payThroughCheckout(server, sandboxKey, { unitPrice: 25, sandbox: true });
    const before = await wallet('sandbox');
    const response = await refund(
      payment.id,
      { reason: 'simulate:refund_declined' },
      sandboxKey,
      '/sandbox/api',
    );
    assert.equal(response.status, 200, response.text);
    assert.equal(response.body.status, 'failed');
    assert.equal((await paymentRow(payment.id)).status, 'paid');
    assert.deepEqual(await wallet('sandbox'), before);
    const refundStatuses = (await eventsOf(server.ctx, `RF${response.body.refund_public_id}`)).map(
      (event) => event.payload.status,
    );
    assert.deepEqual(refundStatuses, ['failed']);
    const retry = await refund(payment.id, { reason: 'Second try' }, sandboxKey, '/sandbox/api');
    assert.equal(retry.status, 200, retry.text);
    await settled(retry.body.refund_id, 'completed');
    await assertLedgerBalanced(server.ctx, merchant.organizationId, 'sandbox');
  });

  test('an EUR refund holds its proportional share of the net in USD, and sends the HT amount', async () => {
    const payment = await payThroughCheckout(server, key, { unitPrice: 100, currency: 'EUR' });
    assert.equal(Number(payment.net_usd), 10487);
    const response = await refund(payment.public_id, { reason: 'Damaged', amount: '50.00' });
    assert.equal(response.status, 200, response.text);
    assert.equal(response.body.currency, 'EUR');
    // 50 / 100 × 104.87 = 52.435 → 52.44
    assert.equal(response.body.amount_usd, '52.44');
    assert.equal(response.body.amount_in_cents, 5000);
    await settled(response.body.refund_id, 'completed');
    await assertLedgerBalanced(server.ctx, merchant.organizationId);
    const taxed = await createPaidPayment(server.ctx, {
      organizationId: merchant.organizationId,
      currency: 'EUR',
      gross: 10_000n,
      taxBp: 2000n,
    });
    assert.equal(Number(taxed.gross_ht), 8333);
    const first = await refund(taxed.id, { reason: 'Tax', amount: '50.00' });
    assert.equal(first.body.amount_in_cents, 4167);
    await settled(first.body.refund_id, 'completed');
    // Half-up on each part would ask 4167 again, a cent more HT than the provider has left.
    const rest = await refund(taxed.id, { reason: 'Tax' });
    assert.equal(rest.status, 200, rest.text);
    assert.equal(rest.body.amount_in_cents, 4166);
    await settled(rest.body.refund_id, 'completed');
    assert.equal((await paymentRow(taxed.id)).status, 'refunded');
    await assertLedgerBalanced(server.ctx, merchant.organizationId);
  });
});
