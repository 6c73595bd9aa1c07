// Reading payments: by API key (scoped to the key's organization and environment) and by the dashboard
// (its organization, both environments). Changes happen only in transitions.ts.
import type { AppContext } from '../../context.ts';
import type { Executor } from '../../db/database.ts';
import { NotFoundError } from '../../http/errors.ts';
import { formatAmount, toBigInt } from '../../lib/money.ts';
import { type ApiKeyPrincipal, assertKeyStillActive } from '../api-keys/service.ts';
import { keyStatus } from '../api-keys/store.ts';
import type { Environment } from '../api-keys/table.ts';
import { presentDashboardPayment, presentPayment } from './present.ts';
import { reviewsOf } from './review.ts';
import * as store from './store.ts';

/**
 * GET /transactions/{id}/ in one statement, which also reads the key's status: a key served from the
 * process's cache is refused there if it is no longer active (api-keys/cache.ts).
 */
export async function getPaymentForKey(
  ctx: AppContext,
  key: ApiKeyPrincipal,
  environment: Environment,
  reference: string,
) {
  const found = await store.findPresentedPayment(
    ctx.db,
    key.keyId,
    key.organizationId,
    environment,
    reference,
  );
  if (!found) {
    // Nothing to show, so no status was read: a cached key is looked up before the 404.
    if (key.unverified !== null) assertKeyStillActive(ctx, key, await keyStatus(ctx.db, key.keyId));
    throw new NotFoundError('Payment not found.');
  }
  assertKeyStillActive(ctx, key, found.keyStatus);
  return presentPayment(found.payment, found.attempts, found.checkout);
}

export async function getPaymentForDashboard(ctx: AppContext, organizationId: number, reference: string) {
  const payment = await store.findPayment(ctx.db, organizationId, reference);
  if (!payment) throw new NotFoundError('Payment not found.');
  const [attempts, reviews] = await Promise.all([
    store.attemptsOf(ctx.db, payment.id),
    reviewsOf(ctx.db, [payment]),
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
