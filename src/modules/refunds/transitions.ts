// Recording what the provider says about a refund: pending → processing → completed | failed.
// One function for the creation answer, the sync loop, the reconciler and the provider-webhook path. Each
// transition is a conditional update under the payment's row lock, so it applies once however often it is
// called. A finished refund never moves again: what the provider says against it is flagged instead
// (conflict-flag.ts).
import type { Executor } from '../../db/database.ts';
import { toBigInt } from '../../lib/money.ts';
import type { ProviderRefundState } from '../../provider/types.ts';
import type { PaymentRow } from '../payments/table.ts';
import { debitHold, type HoldSubject, releaseHold } from '../wallet/holds.ts';
import { lockWallet } from '../wallet/ledger.ts';
import { isFinished, recordFinishedAnswer } from './conflict-flag.ts';
import { changePaymentStatus, emitRefundStatusChanged } from './events.ts';
import type { RefundDeps } from './service.ts';
import * as store from './store.ts';
import type { RefundRow } from './table.ts';

function holdOf(refund: RefundRow): HoldSubject {
  return { kind: 'refund', id: refund.id, publicId: refund.public_id, amount: toBigInt(refund.amount_usd) };
}

async function completeRefund(trx: Executor, refund: RefundRow, payment: PaymentRow, now: string) {
  if (!(await store.transitionRefund(trx, refund.id, ['processing'], 'completed', {}, now))) return;
  const wallet = await lockWallet(trx, payment.organization_id, payment.environment, now);
  await debitHold(trx, wallet, holdOf(refund), now);
  await emitRefundStatusChanged(trx, refund.id, payment.public_id, now);
  const refunded = toBigInt(payment.refunded_amount) + toBigInt(refund.amount);
  const status = refunded >= toBigInt(payment.gross) ? 'refunded' : 'paid';
  await changePaymentStatus(trx, payment, status, now, { refunded_amount: Number(refunded) });
}

async function failRefund(
  trx: Executor,
  refund: RefundRow,
  payment: PaymentRow,
  state: ProviderRefundState,
  now: string,
) {
  const changes = {
    error_message: state.errorMessage ?? 'The provider refused the refund.',
    ...(state.providerRefundId ? { provider_refund_id: state.providerRefundId } : {}),
  };
  if (!(await store.transitionRefund(trx, refund.id, ['pending', 'processing'], 'failed', changes, now)))
    return;
  const wallet = await lockWallet(trx, payment.organization_id, payment.environment, now);
  await releaseHold(trx, wallet, holdOf(refund), now);
  await emitRefundStatusChanged(trx, refund.id, payment.public_id, now);
  if (payment.status === 'refund_pending') await changePaymentStatus(trx, payment, 'paid', now);
}

/**
 * Where a state comes from: a read of the provider (sync, webhook, reconciler, operator), the answer to
 * the creation call, or the reconciler's conclusion that the call never reached the provider.
 */
export type AnswerOrigin = 'read' | 'creation' | 'never_made';

/**
 * Applies the provider's state of one refund; returns the refund as it now stands. Only a read can
 * contradict a finished refund: a creation answer is older than whatever finished the refund meanwhile
 * (the provider's webhook, read while the answer was on its way), and "never made" is Kassa's own
 * conclusion, not the provider's word; either leaves a finished refund as it is.
 */
export async function recordProviderAnswer(
  deps: Pick<RefundDeps, 'db' | 'clock'>,
  refundId: number,
  state: ProviderRefundState,
  origin: AnswerOrigin = 'read',
): Promise<RefundRow> {
  const now = deps.clock().toISOString();
  return deps.db.transaction().execute((trx) => recordProviderAnswerIn(trx, refundId, state, origin, now));
}

/** recordProviderAnswer in the caller's transaction (kassa operation resolve records it with its audit). */
export async function recordProviderAnswerIn(
  trx: Executor,
  refundId: number,
  state: ProviderRefundState,
  origin: AnswerOrigin,
  now: string,
): Promise<RefundRow> {
  const before = await store.getRefund(trx, refundId);
  if (!before) throw new Error(`refund ${refundId} does not exist`);
  // Lock order everywhere: payment, then wallet. The refund is re-read under the payment's lock.
  const payment = await store.lockPaymentById(trx, before.payment_id);
  const refund = (await store.getRefund(trx, refundId)) ?? before;
  if (isFinished(refund.status)) {
    if (origin !== 'read') return refund;
    await recordFinishedAnswer(trx, refund, payment, state, now);
  } else if (state.status === 'failed') {
    await failRefund(trx, refund, payment, state, now);
  } else {
    const moved = await store.transitionRefund(
      trx,
      refund.id,
      ['pending'],
      'processing',
      { provider_refund_id: state.providerRefundId },
      now,
    );
    if (moved) await emitRefundStatusChanged(trx, refund.id, payment.public_id, now);
    if (state.status === 'completed') {
      const current = (await store.getRefund(trx, refundId)) ?? refund;
      await completeRefund(trx, current, payment, now);
    }
  }
  return (await store.getRefund(trx, refundId)) ?? refund;
}
