// The events refunds cause: refund.status_changed, and transaction.status_changed when the parent
// payment's status moves. Always called inside the transaction of the change.
import type { Executor } from '../../db/database.ts';
import { formatAmount, toBigInt } from '../../lib/money.ts';
import { emitEvent } from '../events/emit.ts';
import { emitPaymentEvent } from '../payments/events.ts';
import type { PaymentRow } from '../payments/table.ts';
import type { RefundRow } from './table.ts';

export function refundEventPayload(refund: RefundRow, paymentPublicId: string) {
  return {
    refund_id: refund.public_id,
    transaction_id: paymentPublicId,
    amount: formatAmount(toBigInt(refund.amount)),
    currency: refund.currency,
    amount_usd: formatAmount(toBigInt(refund.amount_usd)),
    amount_in_cents: Number(refund.amount_in_cents),
    status: refund.status,
    reason: refund.reason,
    created_at: refund.created_at,
    updated_at: refund.updated_at,
  };
}

export async function emitRefundStatusChanged(
  trx: Executor,
  refundId: number,
  paymentPublicId: string,
  now: string,
): Promise<void> {
  const refund = await trx
    .selectFrom('refunds')
    .selectAll()
    .where('id', '=', refundId)
    .executeTakeFirstOrThrow();
  await emitEvent(trx, {
    organizationId: refund.organization_id,
    environment: refund.environment,
    type: 'refund.status_changed',
    subject: refund.public_id,
    payload: refundEventPayload(refund, paymentPublicId),
    now,
  });
}

/** Sets the payment's status and emits transaction.status_changed, if the status actually changes. */
export async function changePaymentStatus(
  trx: Executor,
  payment: PaymentRow,
  status: PaymentRow['status'],
  now: string,
  extra: { refunded_amount?: number } = {},
): Promise<PaymentRow> {
  if (payment.status === status && extra.refunded_amount === undefined) return payment;
  const updated = await trx
    .updateTable('payments')
    .set({ status, ...extra, updated_at: now })
    .where('id', '=', payment.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  if (payment.status !== status) {
    await emitPaymentEvent(trx, updated, now);
  }
  return updated;
}
