import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { OPERATOR } from '../src/modules/audit/record.ts';
import { createPayout, settlePayout } from '../src/modules/payouts/service.ts';
import { createRefund } from '../src/modules/refunds/service.ts';
import { recordProviderAnswer } from '../src/modules/refunds/transitions.ts';
import { releaseDueReserves } from '../src/modules/wallet/reserve.ts';
import { settlePayment } from '../src/modules/wallet/settlement.ts';
import {
  call,
  createTestMerchant,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import { assertLedgerBalanced, createPaidPayment } from './helpers/wallet-fixtures.ts';

describe('the wallet ledger', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ worker: false });
  });
  after(() => server.close());

  test('settlement credits reserve (10 %, half-up) and balance with the rest, as balanced entries', async () => {
    const merchant = await createTestMerchant(server);
    // 100.00 gross, 2.90 % fee → net 97.10; reserve 9.71, balance 87.39.
    await createPaidPayment(server.ctx, { organizationId: merchant.organizationId, gross: 10_000n });
    const buckets = await assertLedgerBalanced(server.ctx, merchant.organizationId);
    assert.deepEqual(buckets, { balance: 8739n, reserve: 971n, held: 0n });
  });

  test('a payment settles exactly once, even when settled again or concurrently', async () => {
    const merchant = await createTestMerchant(server);
    const payment = await createPaidPayment(server.ctx, {
      organizationId: merchant.organizationId,
      gross: 1_000n,
    });
    assert.ok(payment.settled_at);
    const now = new Date().toISOString();
    const again = await Promise.all(
      Array.from({ length: 10 }, () =>
        server.ctx.db.transaction().execute((trx) => settlePayment(trx, payment, now)),
      ),
    );
    assert.deepEqual(again, Array(10).fill(false));
    const buckets = await assertLedgerBalanced(server.ctx, merchant.organizationId);
    // 10.00 → fee 0.29 → net 9.71; reserve 0.97 (0.971 half-up), balance 8.74.
    assert.deepEqual(buckets, { balance: 874n, reserve: 97n, held: 0n });
  });

  test("an organization's first settlements, concurrent, make one wallet and credit each payment once", async () => {
    // A settlement credits without locking the wallet first; the first ones of an organization find no
    // wallet and make it (one of them; the others wait for its row and use it).
    const merchant = await createTestMerchant(server);
    const payments = await Promise.all(
      Array.from({ length: 8 }, () =>
        createPaidPayment(server.ctx, {
          organizationId: merchant.organizationId,
          gross: 1_000n,
          settle: false,
        }),
      ),
    );
    const now = new Date().toISOString();
    const settled = await Promise.all(
      payments.map((payment) =>
        server.ctx.db.transaction().execute((trx) => settlePayment(trx, payment, now)),
      ),
    );
    assert.deepEqual(settled, Array(8).fill(true));
    const wallets = await server.ctx.db
      .selectFrom('wallets')
      .select('id')
      .where('organization_id', '=', merchant.organizationId)
      .execute();
    assert.equal(wallets.length, 1);
    const reserves = await server.ctx.db
      .selectFrom('wallet_reserves')
      .select(['amount', 'wallet_id'])
      .where('wallet_id', '=', wallets[0].id)
      .execute();
    assert.deepEqual(
      reserves.map((row) => Number(row.amount)),
      Array(8).fill(97),
    );
    // 8 × (net 9.71: reserve 0.97, balance 8.74).
    const buckets = await assertLedgerBalanced(server.ctx, merchant.organizationId);
    assert.deepEqual(buckets, { balance: 8n * 874n, reserve: 8n * 97n, held: 0n });
    const again = await Promise.all(
      payments.map((payment) =>
        server.ctx.db.transaction().execute((trx) => settlePayment(trx, payment, now)),
      ),
    );
    assert.deepEqual(again, Array(8).fill(false));
    assert.deepEqual(await assertLedgerBalanced(server.ctx, merchant.organizationId), buckets);
  });

  test("an EUR payment credits its net converted at the payment's rate", async () => {
    const merchant = await createTestMerchant(server);
    const payment = await createPaidPayment(server.ctx, {
      organizationId: merchant.organizationId,
      currency: 'EUR',
      gross: 10_000n,
    });
    // net 97.10 EUR × 1.08 = 104.868 → 104.87 USD; reserve 10.49, balance 94.38.
    assert.equal(Number(payment.net_usd), 10_487);
    assert.deepEqual(await assertLedgerBalanced(server.ctx, merchant.organizationId), {
      balance: 9438n,
      reserve: 1049n,
      held: 0n,
    });
  });

  test('the sandbox has a wallet of its own', async () => {
    const merchant = await createTestMerchant(server);
    await createPaidPayment(server.ctx, {
      organizationId: merchant.organizationId,
      environment: 'sandbox',
      gross: 5_000n,
    });
    const production = await call(server, 'GET', '/api/wallet/', { token: merchant.token });
    const sandbox = await call(server, 'GET', '/api/wallet/?environment=sandbox', { token: merchant.token });
    assert.equal(production.status, 200);
    assert.equal(production.body.balance, '0.00');
    assert.equal(sandbox.body.balance, '43.69');
    assert.equal(sandbox.body.reserve, '4.86');
    assert.equal(sandbox.body.available, '48.55');
    await assertLedgerBalanced(server.ctx, merchant.organizationId, 'sandbox');
  });

  test('the database refuses a negative bucket or a hold the wallet cannot cover', async () => {
    const merchant = await createTestMerchant(server);
    await createPaidPayment(server.ctx, { organizationId: merchant.organizationId, gross: 1_000n });
    const wallet = () =>
      server.ctx.db.updateTable('wallets').where('organization_id', '=', merchant.organizationId);
    await assert.rejects(wallet().set({ balance: -1 }).execute());
    await assert.rejects(wallet().set({ reserve: -1 }).execute());
    await assert.rejects(wallet().set({ held: -1 }).execute());
    await assert.rejects(wallet().set({ held: 972 }).execute());
    await wallet().set({ held: 971 }).execute();
    await wallet().set({ held: 0 }).execute();
    await assertLedgerBalanced(server.ctx, merchant.organizationId);
  });

  test('GET /api/wallet/ shows the buckets, what is available and the recent entries', async () => {
    const merchant = await createTestMerchant(server);
    const payment = await createPaidPayment(server.ctx, {
      organizationId: merchant.organizationId,
      gross: 2_000n,
    });
    const response = await call(server, 'GET', '/api/wallet/', { token: merchant.token });
    assert.equal(response.status, 200);
    assert.deepEqual(response.body, {
      balance: '17.48',
      reserve: '1.94',
      held: '0.00',
      available: '19.42',
      currency: 'USD',
      environment: 'production',
      entries: [
        {
          id: (response.body.entries as { id: number }[])[0].id,
          type: 'settlement',
          reference: payment.public_id,
          amount: '19.42',
          balance_change: '17.48',
          reserve_change: '1.94',
          held_change: '0.00',
          created_at: (response.body.entries as { created_at: string }[])[0].created_at,
        },
      ],
    });
    const dashboard = await call(server, 'GET', '/api/organization/dashboard/', { token: merchant.token });
    assert.deepEqual(dashboard.body.wallet, {
      balance: '17.48',
      reserve: '1.94',
      held: '0.00',
      available: '19.42',
      currency: 'USD',
    });
    const bad = await call(server, 'GET', '/api/wallet/?environment=staging', { token: merchant.token });
    assert.equal(bad.status, 400);
    assert.match(String(bad.body.detail), /^environment/);
    assert.equal((await call(server, 'GET', '/api/wallet/')).status, 401);
  });
});

describe('rolling reserve release', () => {
  let server: TestServer;
  let merchant: Merchant;
  before(async () => {
    server = await startTestServer({ worker: false });
    merchant = await createTestMerchant(server);
  });
  after(() => server.close());

  test("each settlement's reserve moves to the balance once, after rolling_reserve_days", async () => {
    const { organizationId } = merchant;
    await createPaidPayment(server.ctx, { organizationId, gross: 10_000n });
    await server.ctx.db
      .updateTable('organizations')
      .set({ rolling_reserve_days: 30 })
      .where('id', '=', organizationId)
      .execute();
    await createPaidPayment(server.ctx, { organizationId, gross: 20_000n });
    const at = (days: number) => () => new Date(Date.now() + days * 86_400_000 + 60_000);
    // Nothing is due yet.
    assert.equal(await releaseDueReserves({ db: server.ctx.db, clock: at(0) }), 0);
    // After 30 days the second payment's reserve (19.42) is due; after 90 the first's (9.71).
    assert.equal(await releaseDueReserves({ db: server.ctx.db, clock: at(30) }), 1);
    let buckets = await assertLedgerBalanced(server.ctx, organizationId);
    assert.deepEqual(buckets, { balance: 8739n + 19420n - 1942n + 1942n, reserve: 971n, held: 0n });
    const twice = await Promise.all([
      releaseDueReserves({ db: server.ctx.db, clock: at(91) }),
      releaseDueReserves({ db: server.ctx.db, clock: at(91) }),
    ]);
    assert.equal(twice[0] + twice[1], 1);
    buckets = await assertLedgerBalanced(server.ctx, organizationId);
    assert.deepEqual(buckets, { balance: 9710n + 19420n, reserve: 0n, held: 0n });
    const count = await sql<{
      n: number;
    }>`select count(*) as n from wallet_movements where kind = 'reserve_release'`.execute(server.ctx.db);
    assert.equal(Number(count.rows[0].n), 2);
  });

  test("a reserve a refund took is not refilled from a later payment's reserve before that one is due", async () => {
    const owner = await createTestMerchant(server, 'Early Release');
    const { organizationId } = owner;
    const scope = { organizationId, environment: 'production' as const };
    // A: reserve 9.71, due in 90 days. Its balance paid out, then a 10.00 refund of A comes out of the
    // reserve (hold 9.71): the reserve is empty.
    const first = await createPaidPayment(server.ctx, { organizationId, gross: 10_000n });
    const payout = await createPayout(server.ctx, organizationId, 'production', 8_739n, OPERATOR);
    await settlePayout(server.ctx, payout.id, 'completed');
    const refund = await createRefund(server.ctx, scope, {
      transactionId: first.public_id,
      amount: 1_000n,
      reason: 'Returned',
      source: 'api',
    });
    await recordProviderAnswer(server.ctx, refund.refund_id, {
      providerRefundId: `re_${refund.refund_public_id}`,
      status: 'completed',
      errorMessage: null,
    });
    assert.deepEqual(await assertLedgerBalanced(server.ctx, organizationId), {
      balance: 0n,
      reserve: 0n,
      held: 0n,
    });
    // B, 10 days later in effect: reserve 9.71, due in 120 days.
    await server.ctx.db
      .updateTable('organizations')
      .set({ rolling_reserve_days: 120 })
      .where('id', '=', organizationId)
      .execute();
    await createPaidPayment(server.ctx, { organizationId, gross: 10_000n });
    const at = (days: number) => () => new Date(Date.now() + days * 86_400_000 + 60_000);
    // A's row is due: it releases nothing (what it held went to the refund), and B's 9.71 stays.
    await releaseDueReserves({ db: server.ctx.db, clock: at(91) });
    assert.deepEqual(await assertLedgerBalanced(server.ctx, organizationId), {
      balance: 8739n,
      reserve: 971n,
      held: 0n,
    });
    // B's row, when due, releases its own.
    await releaseDueReserves({ db: server.ctx.db, clock: at(121) });
    assert.deepEqual(await assertLedgerBalanced(server.ctx, organizationId), {
      balance: 9710n,
      reserve: 0n,
      held: 0n,
    });
  });
});
