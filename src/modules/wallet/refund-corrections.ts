// The two movements an operator's settlement of a refund's provider conflict posts
// (refunds/conflict-settle.ts): money that left at the provider after Kassa had released the refund's hold
// (a late debit, with no hold left to take it from), and money the provider gave back after Kassa had
// debited the refund (a reversal). Each is posted at most once per refund, like every movement: a refund
// can be corrected once each way (a reversed refund the provider then completed again, say), not more.
import type { Executor } from '../../db/database.ts';
import { payoutHolds } from './holds.ts';
import { availableOf, type LockedWallet, postMovement, splitDebit } from './ledger.ts';

export interface CorrectedRefund {
  id: number;
  publicId: string;
  /** The refund's hold, USD minor units. */
  amount: bigint;
}

/** What a correction did: posted, or nothing because the wallet cannot cover it or it was posted before. */
export type Correction = 'posted' | 'uncovered' | 'posted_before';

/**
 * balance (then reserve) −= amount, refunds += amount. Posts nothing when the wallet's available money
 * does not cover it (the CHECK constraints would refuse a bucket below zero).
 */
export async function postLateRefundDebit(
  trx: Executor,
  wallet: LockedWallet,
  refund: CorrectedRefund,
  now: string,
): Promise<Correction> {
  if (availableOf(wallet) < refund.amount) return 'uncovered';
  // As a hold's debit: the free balance first, then the reserve, then the balance pending payouts were
  // promised; the reserve only as far as it goes (no hold was placed for this money).
  const split = splitDebit(wallet, refund.amount, await payoutHolds(trx, wallet));
  const reserve = split.reserve > wallet.reserve ? wallet.reserve : split.reserve;
  const balance = refund.amount - reserve;
  const posted = await postMovement(trx, wallet, {
    kind: 'refund_late_debit',
    referenceId: refund.id,
    referencePublicId: refund.publicId,
    amount: refund.amount,
    entries: { balance: -balance, reserve: -reserve, refunds: refund.amount },
    now,
  });
  return posted === null ? 'posted_before' : 'posted';
}

/** balance += amount, refunds −= amount: what the refund's debit took comes back, as balance. */
export async function postRefundReversal(
  trx: Executor,
  wallet: LockedWallet,
  refund: CorrectedRefund,
  now: string,
): Promise<Correction> {
  const posted = await postMovement(trx, wallet, {
    kind: 'refund_reversal',
    referenceId: refund.id,
    referencePublicId: refund.publicId,
    amount: refund.amount,
    entries: { balance: refund.amount, refunds: -refund.amount },
    now,
  });
  return posted === null ? 'posted_before' : 'posted';
}
