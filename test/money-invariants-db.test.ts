// The database itself refuses a refund beyond what was paid and a reserve that releases more than it
// held (migration 018): writes that bypass the service (an operator's SQL, a future code path that
// forgets a check) are refused, and nothing of the statement is written. The service's own refunds are
// the rest of the suite (test/refunds*.test.ts), which runs with these in place.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Insertable } from 'kysely';
import type { PaymentRow } from '../src/modules/payments/table.ts';
import type { RefundStatus, RefundsTable } from '../src/modules/refunds/table.ts';
import { createCheckout, pay } from './helpers/checkout.ts';
import {
  createTestKey,
  createTestMerchant,
  DB_KIND,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';

let server: TestServer;
before(async () => {
  server = await startTestServer({ worker: false });
});
after(() => server?.close());

/** A refund row as the service writes one, for `payment`. */
function refundRow(
  payment: Pick<PaymentRow, 'id' | 'organization_id' | 'environment' | 'currency'>,
  amount: number,
  status: RefundStatus,
  publicId: string,
): Insertable<RefundsTable> {
  const now = new Date().toISOString();
  return {
    public_id: publicId,
    organization_id: payment.organization_id,
    environment: payment.environment,
    payment_id: payment.id,
    amount,
    currency: payment.currency,
    amount_usd: amount,
    amount_in_cents: amount,
    reason: 'written by hand',
    status,
    source: 'dashboard' as const,
    provider_refund_id: null,
    error_message: null,
    created_at: now,
    updated_at: now,
  };
}

/** A checkout paid through the API with `key`: its payment row. */
async function paidWith(key: string) {
  const checkout = await createCheckout(server, key);
  const paid = await pay(server, checkout.token);
  assert.equal(paid.status, 200, paid.text);
  const publicId = (paid.body as { transaction_id: string }).transaction_id;
  return server.ctx.db
    .selectFrom('payments')
    .selectAll()
    .where('public_id', '=', publicId)
    .executeTakeFirstOrThrow();
}

const insertRefund = (row: Insertable<RefundsTable>) =>
  server.ctx.db.insertInto('refunds').values(row).execute();

async function refused(write: () => Promise<unknown>, name: string) {
  await assert.rejects(write, (error: Error) => {
    assert.match(error.message, new RegExp(name), error.message);
    return true;
  });
}

describe(`the database refuses refunds beyond what was paid (${DB_KIND})`, () => {
  let key: string;
  before(async () => {
    const merchant = await createTestMerchant(server);
    key = await createTestKey(server, merchant);
  });

  const paidPayment = () => paidWith(key);
  const refundsOf = (paymentId: number) =>
    server.ctx.db
      .selectFrom('refunds')
      .select(['amount', 'status'])
      .where('payment_id', '=', paymentId)
      .execute();

  test('live refunds add up to at most the gross, on insert and on update', async () => {
    const payment = await paidPayment();
    const gross = Number(payment.gross);
    const db = server.ctx.db;
    await insertRefund(refundRow(payment, gross - 1, 'completed', 'RFhandwritten00001'));
    // One cent more than what is left, in flight: refused.
    await refused(
      () => insertRefund(refundRow(payment, 2, 'pending', 'RFhandwritten00002')),
      'refunds_within_payment',
    );
    // A failed refund of any amount is no claim on the payment …
    await insertRefund(refundRow(payment, gross, 'failed', 'RFhandwritten00003'));
    // … until it is made live again.
    await refused(
      () =>
        db
          .updateTable('refunds')
          .set({ status: 'processing' })
          .where('public_id', '=', 'RFhandwritten00003')
          .execute(),
      'refunds_within_payment',
    );
    // Raising a live refund's amount past the gross: refused; up to the gross: taken.
    await refused(
      () =>
        db
          .updateTable('refunds')
          .set({ amount: gross + 1 })
          .where('public_id', '=', 'RFhandwritten00001')
          .execute(),
      'refunds_within_payment',
    );
    await db
      .updateTable('refunds')
      .set({ amount: gross })
      .where('public_id', '=', 'RFhandwritten00001')
      .execute();
    assert.deepEqual(
      (await refundsOf(payment.id)).map((row) => [Number(row.amount), row.status]).sort(),
      [
        [gross, 'completed'],
        [gross, 'failed'],
      ].sort(),
    );
  });

  test('two transactions each adding a refund of more than half the gross: one is refused', async () => {
    const payment = await paidPayment();
    const half = Math.floor(Number(payment.gross) / 2) + 1;
    let firstWrote!: () => void;
    const wrote = new Promise<void>((resolve) => {
      firstWrote = resolve;
    });
    // The first writes its refund and holds its transaction open a while; the second writes its own
    // meanwhile, as a second process would. Both as completed: no in-flight index between them.
    const first = server.ctx.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('refunds')
        .values(refundRow(payment, half, 'completed', 'RFconcurrent000001'))
        .execute();
      firstWrote();
      await new Promise((resolve) => setTimeout(resolve, 300));
    });
    await wrote;
    const second = server.ctx.db.transaction().execute((trx) =>
      trx
        .insertInto('refunds')
        .values(refundRow(payment, half, 'completed', 'RFconcurrent000002'))
        .execute(),
    );
    const results = await Promise.allSettled([first, second]);
    assert.equal(results[0].status, 'fulfilled');
    assert.equal(results[1].status, 'rejected');
    assert.match(String((results[1] as PromiseRejectedResult).reason), /refunds_within_payment/);
    assert.deepEqual(
      (await refundsOf(payment.id)).map((row) => Number(row.amount)),
      [half],
    );
  });

  test('a refund belongs to a payment of its own organization, environment and currency', async () => {
    const payment = await paidPayment();
    const other = await createTestMerchant(server, 'Other');
    await refused(
      () =>
        insertRefund({
          ...refundRow(payment, 100, 'pending', 'RFhandwritten00004'),
          organization_id: other.organizationId,
        }),
      'refunds_payment',
    );
    await refused(
      () =>
        insertRefund({
          ...refundRow(payment, 100, 'pending', 'RFhandwritten00005'),
          environment: 'sandbox' as const,
        }),
      'refunds_payment',
    );
    const otherCurrency = payment.currency === 'USD' ? 'EUR' : 'USD';
    await refused(
      () =>
        insertRefund({
          ...refundRow(payment, 100, 'pending', 'RFhandwritten00006'),
          currency: otherCurrency,
        }),
      'refunds_payment',
    );
    const missing = { ...payment, id: Number(payment.id) + 1_000_000 };
    await refused(
      () => insertRefund(refundRow(missing, 100, 'pending', 'RFhandwritten00007')),
      'refunds_payment|FOREIGN KEY|foreign key',
    );
    assert.deepEqual(await refundsOf(payment.id), []);
  });

  test("a payment's refunded amount stays between 0 and its gross", async () => {
    const payment = await paidPayment();
    const db = server.ctx.db;
    const setRefunded = (amount: number) =>
      db.updateTable('payments').set({ refunded_amount: amount }).where('id', '=', payment.id).execute();
    await refused(() => setRefunded(Number(payment.gross) + 1), 'payments_refunded_amount');
    await refused(() => setRefunded(-1), 'payments_refunded_amount');
    await setRefunded(Number(payment.gross));
    const row = await db
      .selectFrom('payments')
      .select('refunded_amount')
      .where('id', '=', payment.id)
      .executeTakeFirstOrThrow();
    assert.equal(Number(row.refunded_amount), Number(payment.gross));
  });
});

describe(`the database refuses a reserve that releases more than it held (${DB_KIND})`, () => {
  test('amount above 0, released between 0 and the amount, release time and amount together, a real payment', async () => {
    const merchant = await createTestMerchant(server);
    const key = await createTestKey(server, merchant);
    const payment = await paidWith(key);
    const db = server.ctx.db;
    const wallet = await db
      .selectFrom('wallets')
      .select('id')
      .where('organization_id', '=', merchant.organizationId)
      .where('environment', '=', payment.environment)
      .executeTakeFirstOrThrow();
    const now = new Date().toISOString();
    const row = {
      wallet_id: wallet.id,
      payment_id: payment.id,
      amount: 500,
      release_at: now,
      released_at: null as string | null,
      released_amount: null as number | null,
    };
    const name = 'wallet_reserves_amounts|wallet_reserves_payment|FOREIGN KEY|foreign key';
    await refused(
      () =>
        db
          .insertInto('wallet_reserves')
          .values({ ...row, amount: 0 })
          .execute(),
      name,
    );
    await refused(
      () =>
        db
          .insertInto('wallet_reserves')
          .values({ ...row, payment_id: Number(payment.id) + 1_000_000 })
          .execute(),
      name,
    );
    await refused(
      () =>
        db
          .insertInto('wallet_reserves')
          .values({ ...row, released_at: now })
          .execute(),
      'wallet_reserves_amounts',
    );
    // The payment's own reserve (the bench's terms may have made one already): replaced by ours.
    await db.deleteFrom('wallet_reserves').where('payment_id', '=', payment.id).execute();
    await db.insertInto('wallet_reserves').values(row).execute();
    const release = (amount: number) =>
      db
        .updateTable('wallet_reserves')
        .set({ released_at: now, released_amount: amount })
        .where('payment_id', '=', payment.id)
        .execute();
    await refused(() => release(501), 'wallet_reserves_amounts');
    await refused(() => release(-1), 'wallet_reserves_amounts');
    await release(500);
    const stored = await db
      .selectFrom('wallet_reserves')
      .select(['released_amount'])
      .where('payment_id', '=', payment.id)
      .executeTakeFirstOrThrow();
    assert.equal(Number(stored.released_amount), 500);
  });
});
