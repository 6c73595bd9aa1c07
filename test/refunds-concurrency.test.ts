// Refunds under concurrency: parallel requests (on PostgreSQL from two server instances on one
// database), and concurrent syncs of the same outcome. Afterwards the invariants must hold: at most
// one refund in flight per payment, a wallet never negative, a ledger that balances.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { PaymentRow } from '../src/modules/payments/table.ts';
import { syncRefunds } from '../src/modules/refunds/sync.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  DB_KIND,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import { assertLedgerBalanced, createPaidPayment, eventsOf } from './helpers/wallet-fixtures.ts';

describe(`concurrent refunds (${DB_KIND})`, () => {
  let servers: TestServer[];
  before(async () => {
    const first = await startTestServer({
      env: { KASSA_SIM_REFUND_DELAY_MS: '600000', KASSA_DB_POOL_SIZE: '20' },
    });
    servers = [first];
    // SQLite is one process by design; PostgreSQL is tested the way it is deployed, several processes.
    if (DB_KIND === 'postgres') servers.push(await startTestServer({ shareWith: first }));
  });
  after(async () => {
    for (const server of servers.slice(1)) await server.close();
    await servers[0].close();
  });

  const ctx = () => servers[0].ctx;
  const post = (index: number, apiKey: string, id: string, body: unknown) =>
    call<{ detail?: string; status?: string }>(
      servers[index % servers.length],
      'POST',
      `/api/transactions/${id}/refund/`,
      {
        apiKey,
        body,
      },
    );

  test('50 parallel refund requests on one payment: one is accepted, the others are in progress', async () => {
    const merchant = await createTestMerchant(servers[0]);
    const key = await createTestKey(servers[0], merchant);
    const payment = await createPaidPayment(ctx(), {
      organizationId: merchant.organizationId,
      gross: 10_000n,
    });
    const responses = await Promise.all(
      Array.from({ length: 50 }, (_, index) =>
        post(index, key, payment.public_id, { reason: `try ${index}`, amount: `${(index % 5) + 1}.00` }),
      ),
    );
    const accepted = responses.filter((response) => response.status === 200);
    assert.equal(accepted.length, 1, JSON.stringify(responses.map((response) => response.body)));
    for (const response of responses.filter((response) => response.status !== 200)) {
      assert.equal(response.status, 400);
      assert.equal(response.body.detail, 'A refund is already in progress for this payment.');
    }
    const inFlight = await ctx()
      .db.selectFrom('refunds')
      .select('amount_usd')
      .where('payment_id', '=', payment.id)
      .where('status', 'in', ['pending', 'processing'])
      .execute();
    assert.equal(inFlight.length, 1);
    const buckets = await assertLedgerBalanced(ctx(), merchant.organizationId);
    assert.equal(buckets.held, BigInt(inFlight[0].amount_usd));
  });

  test('parallel refunds across many payments never hold more than the wallet has', async () => {
    const merchant = await createTestMerchant(servers[0]);
    const key = await createTestKey(servers[0], merchant);
    const { organizationId } = merchant;
    for (let i = 0; i < 3; i += 1) await createPaidPayment(ctx(), { organizationId, gross: 10_000n });
    const unsettled: PaymentRow[] = [];
    for (let i = 0; i < 20; i += 1) {
      unsettled.push(await createPaidPayment(ctx(), { organizationId, gross: 10_000n, settle: false }));
    }
    const responses = await Promise.all(
      unsettled.map((payment, index) => post(index, key, payment.public_id, { reason: 'parallel' })),
    );
    const accepted = responses.filter((response) => response.status === 200);
    assert.equal(accepted.length, 3, JSON.stringify(responses.map((response) => response.body)));
    for (const response of responses.filter((response) => response.status !== 200)) {
      assert.equal(response.status, 400);
      assert.match(
        String(response.body.detail),
        /^(Insufficient wallet balance to refund any amount|Refund amount exceeds wallet-available limit)/,
      );
    }
    const buckets = await assertLedgerBalanced(ctx(), organizationId);
    assert.deepEqual(buckets, { balance: 26_217n, reserve: 2_913n, held: 29_130n });
  });

  test('a completion synced concurrently by every worker and by hand is applied once', async () => {
    const merchant = await createTestMerchant(servers[0]);
    const key = await createTestKey(servers[0], merchant);
    const { organizationId } = merchant;
    const payments: PaymentRow[] = [];
    for (let i = 0; i < 5; i += 1)
      payments.push(await createPaidPayment(ctx(), { organizationId, gross: 10_000n }));
    const refundIds: string[] = [];
    for (const [index, payment] of payments.entries()) {
      const response = await call<{ refund_public_id: string }>(
        servers[0],
        'POST',
        `/api/transactions/${payment.id}/refund/`,
        {
          apiKey: key,
          body: { reason: 'sync race', ...(index % 2 ? { amount: '40.00' } : {}) },
        },
      );
      assert.equal(response.status, 200, response.text);
      refundIds.push(`RF${response.body.refund_public_id}`);
    }
    // Every refund is due at the provider from now on: move every instance's clock (and so the simulator's).
    const later = () => new Date(Date.now() + 3_600_000);
    for (const server of servers) server.ctx.clock = later;
    await Promise.all(servers.flatMap((server) => Array.from({ length: 5 }, () => syncRefunds(server.ctx))));
    const refunds = await ctx()
      .db.selectFrom('refunds')
      .selectAll()
      .where('organization_id', '=', organizationId)
      .execute();
    assert.deepEqual(
      refunds.map((refund) => refund.status),
      Array(5).fill('completed'),
    );
    for (const [index, publicId] of refundIds.entries()) {
      const statuses = (await eventsOf(ctx(), publicId)).map((event) => event.payload.status);
      assert.deepEqual(statuses, ['processing', 'completed']);
      const paymentStatuses = (await eventsOf(ctx(), payments[index].public_id)).map(
        (event) => event.payload.status,
      );
      assert.deepEqual(paymentStatuses.slice(-2), ['refund_pending', index % 2 ? 'paid' : 'refunded']);
    }
    const debits = await ctx()
      .db.selectFrom('wallet_movements')
      .select('reference_id')
      .where('kind', '=', 'refund_debit')
      .where(
        'reference_id',
        'in',
        refunds.map((refund) => refund.id),
      )
      .execute();
    assert.equal(debits.length, 5);
    const buckets = await assertLedgerBalanced(ctx(), organizationId);
    // 5 × 97.10 settled; refunded 3 × 97.10 + 2 × 38.84.
    assert.equal(buckets.balance + buckets.reserve, 5n * 9710n - 3n * 9710n - 2n * 3884n);
    assert.equal(buckets.held, 0n);
  });
});
