// Reading payments: by API key (scoped to the key's organization and environment) and by the dashboard
// (its organization, both environments). Changes happen only in transitions.ts.
import type { AppContext } from '../../context.ts';
import type { Executor } from '../../db/database.ts';
import { NotFoundError } from '../../http/errors.ts';
import { formatAmount, toBigInt } from '../../lib/money.ts';
import type { Environment } from '../api-keys/table.ts';
import { presentDashboardPayment, presentPayment } from './present.ts';
import { reviewsOf } from './review.ts';
import * as store from './store.ts';

export async function getPaymentForKey(
  ctx: AppContext,
  organizationId: number,
  environment: Environment,
  reference: string,
) {
  const found = await store.findPresentedPayment(ctx.db, organizationId, environment, reference);
  if (!found) throw new NotFoundError('Payment not found.');
  return presentPayment(found.payment, found.attempts, found.checkout);
}

export async function getPaymentForDashboard(ctx: AppContext, organizationId: number, reference: string) {
  const payment = await store.findPayment(ctx.db, { organizationId, environment: null }, reference);
  if (!payment) throw new NotFoundError('Payment not found.');
  const [attempts, reviews] = await Promise.all([
    store.attemptsOf(ctx.db, payment.id),
    reviewsOf(ctx.db, [payment.id]),
  ]);
  return presentDashboardPayment(
    payment,
    attempts,
    store.referenceOf(payment),
    reviews.get(payment.id) ?? null,
  );
}

/** The dashboard snapshot's payment figures for one environment. */
export async function paymentStats(db: Executor, organizationId: number, environment: Environment) {
  const rows = await db
    .selectFrom('payments')
    .select(['status', 'currency'])
    .select((eb) => [eb.fn.countAll<number>().as('count'), eb.fn.sum<number>('gross').as('gross')])
    .where('organization_id', '=', organizationId)
    .where('environment', '=', environment)
    .groupBy(['status', 'currency'])
    .execute();
  let transactionCount = 0;
  let paidCount = 0;
  const volume = { USD: 0n, EUR: 0n };
  for (const row of rows) {
    transactionCount += Number(row.count);
    if (row.status === 'paid' || row.status === 'refund_pending' || row.status === 'refunded') {
      paidCount += Number(row.count);
      volume[row.currency] += toBigInt(row.gross);
    }
  }
  return {
    transaction_count: transactionCount,
    paid_transaction_count: paidCount,
    paid_volume: { USD: formatAmount(volume.USD), EUR: formatAmount(volume.EUR) },
  };
}
