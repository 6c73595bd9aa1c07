// Provider calls of a payment (its card attempts, its provider payment, its refunds, and for a renewal
// payment the tries of its subscription cycle) whose outcome Kassa
// does not know: still being read back by the reconciler ("confirming"), or still unknown after its last
// read, or contradicting Kassa, or (a renewal try) refused by the provider for 72 hours ("flagged": a
// person must look at the provider's dashboard, then resolves it with kassa operation resolve, a renewal
// try with kassa renewal resolve). A payment the provider charged after Kassa gave it up, or a refund the
// provider contradicts after Kassa finished it, is flagged before any of them.
import type { Executor } from '../../db/database.ts';
import { unresolvedOperationsOf } from '../../provider/operations/store.ts';
import type { OperationRow } from '../../provider/operations/table.ts';
import type { PaymentRow } from './table.ts';

export interface ProviderReview {
  state: 'confirming' | 'flagged';
  /**
   * The call, by its idempotency key (kassa-pay-TX…-1, kassa-refund-RF…, kassa-renew-{cycle}-{try}), or
   * "payment" for the payment's conflict; a refund's conflict is named by the refund's key.
   */
  operation: string;
  reason: string | null;
  since: string;
}

function review(operation: OperationRow): ProviderReview {
  return {
    state: operation.state === 'flagged' ? 'flagged' : 'confirming',
    operation: operation.idempotency_key,
    reason: operation.last_read_error,
    since: operation.flagged_at ?? operation.created_at,
  };
}

/** The one call per payment most in need of a look (a flagged one before one still confirming). */
export async function reviewsOf(
  db: Executor,
  payments: readonly Pick<PaymentRow, 'id' | 'subscription_id'>[],
): Promise<Map<number, ProviderReview>> {
  const reviews = new Map<number, ProviderReview>();
  if (payments.length === 0) return reviews;
  const paymentIds = payments.map((payment) => payment.id);
  const subscriptionIds = [
    ...new Set(
      payments.flatMap((payment) => (payment.subscription_id === null ? [] : [payment.subscription_id])),
    ),
  ];
  // A payment the provider charged after Kassa gave it up comes first: money was taken.
  const conflicts = await db
    .selectFrom('payments')
    .select(['id', 'provider_conflict', 'updated_at'])
    .where('id', 'in', paymentIds)
    .where('provider_conflict', 'is not', null)
    .execute();
  for (const conflict of conflicts) {
    reviews.set(conflict.id, {
      state: 'flagged',
      operation: 'payment',
      reason: conflict.provider_conflict,
      since: conflict.updated_at,
    });
  }
  const refunds = await db
    .selectFrom('refunds')
    .select(['id', 'payment_id', 'public_id', 'provider_conflict', 'provider_conflict_at'])
    .where('payment_id', 'in', paymentIds)
    .orderBy('id')
    .execute();
  const paymentOfRefund = new Map(refunds.map((refund) => [refund.id, refund.payment_id]));
  // Then a refund the provider contradicts (refunds/conflict-flag.ts): money may have moved either way.
  for (const refund of refunds) {
    if (refund.provider_conflict === null || reviews.has(refund.payment_id)) continue;
    reviews.set(refund.payment_id, {
      state: 'flagged',
      operation: `kassa-refund-${refund.public_id}`,
      reason: refund.provider_conflict,
      since: refund.provider_conflict_at ?? '',
    });
  }
  // A renewal's tries are operations on its subscription cycle, whose payment is the renewal payment.
  // Found through the payments' subscriptions (indexed), not by payment_id (which is not); no statement
  // when no payment here is a renewal (the common page).
  const cycles =
    subscriptionIds.length === 0
      ? []
      : await db
          .selectFrom('subscription_cycles')
          .select(['id', 'payment_id'])
          .where('subscription_id', 'in', subscriptionIds)
          .where('payment_id', 'in', paymentIds)
          .execute();
  const paymentOfCycle = new Map(cycles.map((cycle) => [cycle.id, cycle.payment_id]));
  const [ofPayments, ofRefunds, ofCycles] = await Promise.all([
    unresolvedOperationsOf(db, 'payment', paymentIds),
    unresolvedOperationsOf(db, 'refund', [...paymentOfRefund.keys()]),
    unresolvedOperationsOf(db, 'subscription_cycle', [...paymentOfCycle.keys()]),
  ]);
  const conflicted = new Set(reviews.keys());
  const paymentOf = (operation: OperationRow) => {
    if (operation.subject_type === 'payment') return operation.subject_id;
    if (operation.subject_type === 'refund') return paymentOfRefund.get(operation.subject_id);
    return paymentOfCycle.get(operation.subject_id) ?? undefined;
  };
  for (const operation of [...ofPayments, ...ofRefunds, ...ofCycles]) {
    const paymentId = paymentOf(operation);
    // A conflict (the payment's or a refund's) is never displaced by a call still in doubt.
    if (paymentId === undefined || conflicted.has(paymentId)) continue;
    const known = reviews.get(paymentId);
    if (!known || (known.state === 'confirming' && operation.state === 'flagged')) {
      reviews.set(paymentId, review(operation));
    }
  }
  return reviews;
}
