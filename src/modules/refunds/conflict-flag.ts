// A provider's word against a refund Kassa already finished (completed or failed) and told the merchant
// about: the status does not move, the disagreement is recorded on the refund for an operator to settle
// (conflict-settle.ts), audited as the system's, and shown on the payment's review. While one is open the
// payment takes no new refund (eligibility.ts), so the provider can never be asked to refund more than was
// paid (docs/wallet-refunds-payouts.md, "When the provider contradicts a finished refund").
import type { Executor } from '../../db/database.ts';
import { formatAmount, toBigInt } from '../../lib/money.ts';
import type { ProviderRefundState } from '../../provider/types.ts';
import { type Actor, recordAudit, SYSTEM } from '../audit/record.ts';
import type { PaymentRow } from '../payments/table.ts';
import type { ProviderRefundStatus, RefundRow, RefundStatus } from './table.ts';

/** Statuses the merchant was told are final. */
export const FINISHED: readonly RefundStatus[] = ['completed', 'failed', 'rejected'];

export function isFinished(status: RefundStatus): boolean {
  return FINISHED.includes(status);
}

/** Whether the provider's status says the customer got (or may still get) the money back. */
function providerRefunds(status: ProviderRefundStatus): boolean {
  return status !== 'failed';
}

/**
 * The provider's status when it contradicts Kassa's finished one, else null. A refund Kassa failed that
 * the provider still processes is one (it may yet refund the customer); a completed one the provider
 * still shows processing is not (it can only confirm it).
 */
export function contradiction(refund: RefundRow, state: ProviderRefundState): ProviderRefundStatus | null {
  const completed = refund.status === 'completed';
  if (completed) return state.status === 'failed' ? 'failed' : null;
  return providerRefunds(state.status) ? state.status : null;
}

function conflictMessage(refund: RefundRow, state: ProviderRefundState, now: string): string {
  const settle = `an operator settles it with "kassa refund resolve ${refund.public_id}"`;
  if (state.status === 'failed') {
    const why = state.errorMessage ? ` (${state.errorMessage.replace(/\.$/, '')})` : '';
    return `The provider reports this refund failed after Kassa recorded it completed (${now})${why}: the customer was not refunded, yet the wallet was debited and the payment counts it as refunded. No new refund of the payment until ${settle}.`;
  }
  const what =
    state.status === 'completed'
      ? 'the customer was refunded, yet the hold was released to the wallet and the payment does not count it'
      : 'it may still refund the customer, while the hold was released to the wallet and the payment does not count it';
  return `The provider reports this refund ${state.status} after Kassa recorded it ${refund.status} (${now}): ${what}. No new refund of the payment until ${settle}.`;
}

/** One audit entry about the refund's conflict, with what the operator needs to find it at the provider. */
function auditConflict(
  trx: Executor,
  refund: RefundRow,
  payment: PaymentRow,
  actor: Actor,
  action: string,
  details: Record<string, unknown>,
  now: string,
) {
  return recordAudit(
    trx,
    refund.organization_id,
    actor,
    {
      action,
      target: { type: 'refund', id: refund.public_id },
      details: {
        payment_id: payment.public_id,
        amount: formatAmount(toBigInt(refund.amount)),
        currency: refund.currency,
        kassa_status: refund.status,
        ...details,
      },
    },
    now,
  );
}

/** Closes the refund's open conflict (the provider came round, or an operator settled it), audited. */
export async function closeConflict(
  trx: Executor,
  refund: RefundRow,
  payment: PaymentRow,
  actor: Actor,
  action: 'refund.provider_conflict_cleared' | 'refund.provider_conflict_resolved',
  details: Record<string, unknown>,
  now: string,
): Promise<void> {
  await trx
    .updateTable('refunds')
    .set({ provider_conflict: null, provider_conflict_status: null, provider_conflict_at: null })
    .where('id', '=', refund.id)
    .execute();
  await auditConflict(
    trx,
    refund,
    payment,
    actor,
    action,
    { conflict: refund.provider_conflict, ...details },
    now,
  );
}

/**
 * The provider's answer about a finished refund, under the payment's lock: a new contradiction (or the
 * provider's status moving within one) is recorded and audited; an answer that agrees with Kassa again
 * clears an open one; an undecided one changes nothing. The refund's status never moves here.
 */
export async function recordFinishedAnswer(
  trx: Executor,
  refund: RefundRow,
  payment: PaymentRow,
  state: ProviderRefundState,
  now: string,
): Promise<void> {
  const against = contradiction(refund, state);
  if (against === null) {
    const agrees = state.status !== 'processing';
    if (agrees && refund.provider_conflict !== null) {
      await closeConflict(
        trx,
        refund,
        payment,
        SYSTEM,
        'refund.provider_conflict_cleared',
        { provider_status: state.status },
        now,
      );
    }
    return;
  }
  if (refund.provider_conflict_status === against) return;
  await trx
    .updateTable('refunds')
    .set({
      provider_conflict: conflictMessage(refund, state, now),
      provider_conflict_status: against,
      provider_conflict_at: refund.provider_conflict_at ?? now,
      // A refund taken for never made has no provider id: with it, the provider's next webhook finds it.
      provider_refund_id: refund.provider_refund_id || state.providerRefundId || null,
    })
    .where('id', '=', refund.id)
    .execute();
  await auditConflict(
    trx,
    refund,
    payment,
    SYSTEM,
    'refund.provider_conflict',
    {
      provider_status: against,
      provider_refund_id: state.providerRefundId || null,
      provider_message: state.errorMessage,
    },
    now,
  );
}
