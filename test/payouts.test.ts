import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { formatAmount, parseAmount } from '../src/lib/money.ts';
import { settlePayout } from '../src/modules/payouts/service.ts';
import { createRefund } from '../src/modules/refunds/service.ts';
import { recordProviderAnswer } from '../src/modules/refunds/transitions.ts';
import {
  call,
  createTestMerchant,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import { assertLedgerBalanced, createPaidPayment, eventsOf } from './helpers/wallet-fixtures.ts';

interface Payout {
  id: string;
  amount: string;
  currency: string;
  status: string;
  environment: string;
  created_at: string;
  updated_at: string;
  detail?: string;
}

describe('payouts', () => {
  let server: TestServer;
  let merchant: Merchant;
  before(async () => {
    server = await startTestServer({ env: { KASSA_SIM_REFUND_DELAY_MS: '600000' } });
    merchant = await createTestMerchant(server);
    // balance 87.39, reserve 9.71
    await createPaidPayment(server.ctx, { organizationId: merchant.organizationId, gross: 10_000n });
  });
  after(() => server.close());

  const request = (body: unknown, query = '') =>
    call<Payout>(server, 'POST', `/api/payouts/${query}`, { token: merchant.token, body });
  const wallet = async (environment = 'production') =>
    (await call(server, 'GET', `/api/wallet/?environment=${environment}`, { token: merchant.token })).body;

  test('a payout of at most balance − held is created pending and held; more is refused', async () => {
    const refused = await request({ amount: '87.40' });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.detail, 'amount: exceeds the balance available for payout (87.39 USD).');
    const created = await request({ amount: '50.00' });
    assert.equal(created.status, 201, created.text);
    assert.match(created.body.id, /^PO[0-9A-Za-z]{16}$/);
    assert.deepEqual(created.body, {
      id: created.body.id,
      amount: '50.00',
      currency: 'USD',
      status: 'pending',
      environment: 'production',
      destination: null,
      created_at: created.body.created_at,
      updated_at: created.body.created_at,
    });
    assert.equal((await wallet()).held, '50.00');
    assert.equal((await request({ amount: '37.40' })).status, 400);
    const list = await call<{ count: number; results: Payout[] }>(server, 'GET', '/api/payouts/', {
      token: merchant.token,
    });
    assert.equal(list.body.count, 1);
    assert.equal(list.body.results[0].id, created.body.id);
    await assertLedgerBalanced(server.ctx, merchant.organizationId);
  });

  test('completing debits the wallet, rejecting releases the hold; each emits payout.status_changed once', async () => {
    const toComplete = await request({ amount: '20.00' });
    const toReject = await request({ amount: '10.00' });
    const before = await wallet();
    const completed = await settlePayout(server.ctx, toComplete.body.id, 'completed');
    assert.equal(completed.status, 'completed');
    const rejected = await settlePayout(server.ctx, String(await numericId(toReject.body.id)), 'rejected');
    assert.equal(rejected.status, 'rejected');
    await assert.rejects(settlePayout(server.ctx, toComplete.body.id, 'rejected'), /already completed/);
    await assert.rejects(settlePayout(server.ctx, 'PO0000000000000000', 'completed'), /not found/);
    const afterwards = await wallet();
    assert.equal(afterwards.balance, formatDiff(before.balance, '20.00'));
    assert.equal(afterwards.held, formatDiff(before.held, '30.00'));
    const events = await eventsOf(server.ctx, toComplete.body.id);
    assert.deepEqual(events, [
      {
        type: 'payout.status_changed',
        payload: {
          event: 'payout.status_changed',
          payout_id: toComplete.body.id,
          amount: '20.00',
          status: 'completed',
          currency: 'USD',
          created_at: toComplete.body.created_at,
          updated_at: completed.updated_at,
          livemode: true,
        },
      },
    ]);
    assert.equal((await eventsOf(server.ctx, toReject.body.id))[0].payload.status, 'rejected');
    await assertLedgerBalanced(server.ctx, merchant.organizationId);
  });

  test('a refund completed while a payout is pending leaves the payout the balance it was accepted against', async () => {
    const owner = await createTestMerchant(server, 'Reserve Shop');
    const scope = { organizationId: owner.organizationId, environment: 'production' as const };
    // balance 87.39, reserve 9.71
    const payment = await createPaidPayment(server.ctx, {
      organizationId: owner.organizationId,
      gross: 10_000n,
    });
    const payout = await call<Payout>(server, 'POST', '/api/payouts/', {
      token: owner.token,
      body: { amount: '87.39' },
    });
    assert.equal(payout.status, 201, payout.text);
    // 10.00 of the payment: its share of the net, 9.71, is held; the reserve covers it.
    const refund = await createRefund(server.ctx, scope, {
      transactionId: payment.public_id,
      amount: 1_000n,
      reason: 'Customer returned it',
      source: 'api',
    });
    assert.equal(refund.amount_usd, '9.71');
    await recordProviderAnswer(server.ctx, refund.refund_id, {
      providerRefundId: `re_${refund.refund_public_id}`,
      status: 'completed',
      errorMessage: null,
    });
    const afterRefund = (await call(server, 'GET', '/api/wallet/', { token: owner.token })).body;
    // The refund came out of the reserve: the balance is still what the payout was promised.
    assert.deepEqual(
      [afterRefund.balance, afterRefund.reserve, afterRefund.held],
      ['87.39', '0.00', '87.39'],
    );
    await settlePayout(server.ctx, payout.body.id, 'completed');
    const entries = await server.ctx.db
      .selectFrom('wallet_entries')
      .innerJoin('wallet_movements', 'wallet_movements.id', 'wallet_entries.movement_id')
      .select(['wallet_entries.account', 'wallet_entries.amount'])
      .where('wallet_movements.kind', '=', 'payout_debit')
      .where('wallet_movements.reference_public_id', '=', payout.body.id)
      .where('wallet_entries.account', 'in', ['balance', 'reserve'])
      .orderBy('wallet_entries.account')
      .execute();
    assert.deepEqual(
      entries.map((entry) => [entry.account, Number(entry.amount)]),
      [['balance', -8_739]],
    );
    const final = (await call(server, 'GET', '/api/wallet/', { token: owner.token })).body;
    assert.deepEqual([final.balance, final.reserve, final.held], ['0.00', '0.00', '0.00']);
    await assertLedgerBalanced(server.ctx, owner.organizationId);
  });

  test('the sandbox has its own payouts; amounts and environments are validated', async () => {
    assert.equal((await request({ amount: '1.00' }, '?environment=sandbox')).status, 400);
    await createPaidPayment(server.ctx, {
      organizationId: merchant.organizationId,
      gross: 1000n,
      environment: 'sandbox',
    });
    const sandbox = await request({ amount: '1.00', environment: 'sandbox' });
    assert.equal(sandbox.status, 201, sandbox.text);
    assert.equal(sandbox.body.environment, 'sandbox');
    const list = await call<{ count: number }>(server, 'GET', '/api/payouts/?environment=sandbox', {
      token: merchant.token,
    });
    assert.equal(list.body.count, 1);
    for (const amount of ['0', '-1', '1.234', 'abc', null]) {
      const response = await request({ amount });
      assert.equal(response.status, 400, String(amount));
      assert.match(String(response.body.detail), /^amount: /);
    }
    assert.match(String((await request({})).body.detail), /^amount: this field is required/);
    assert.equal((await call(server, 'GET', '/api/payouts/')).status, 401);
    await assertLedgerBalanced(server.ctx, merchant.organizationId, 'sandbox');
  });

  test('kassa payout complete and reject work from the command line', async () => {
    const first = await request({ amount: '1.00' });
    const second = await request({ amount: '2.00' });
    const kassa = (...args: string[]) =>
      spawnSync(process.execPath, ['--disable-warning=ExperimentalWarning', 'src/cli/main.ts', ...args], {
        env: { ...process.env, ...server.env },
        encoding: 'utf8',
      });
    const completed = kassa('payout', 'complete', first.body.id);
    assert.equal(completed.status, 0, completed.stderr);
    assert.equal(JSON.parse(completed.stdout).status, 'completed');
    const rejected = kassa('payout', 'reject', second.body.id);
    assert.equal(rejected.status, 0, rejected.stderr);
    assert.equal(JSON.parse(rejected.stdout).status, 'rejected');
    const again = kassa('payout', 'reject', second.body.id);
    assert.equal(again.status, 1);
    assert.match(again.stderr, /already rejected/);
    assert.equal(kassa('payout', 'complete').status, 1);
    await assertLedgerBalanced(server.ctx, merchant.organizationId);
  });

  const numericId = async (publicId: string) =>
    (
      await server.ctx.db
        .selectFrom('payouts')
        .select('id')
        .where('public_id', '=', publicId)
        .executeTakeFirstOrThrow()
    ).id;
});

function formatDiff(value: unknown, minus: string): string {
  return formatAmount(parseAmount(value) - parseAmount(minus));
}
