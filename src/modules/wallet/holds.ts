// Holds on the wallet for refunds and payouts: placed when the request is accepted, then either
// debited (balance first, then reserve) or released. Each step is a ledger movement posted once.
import type { Executor } from '../../db/database.ts';
import { type LockedWallet, postMovement, splitDebit } from './ledger.ts';

export interface HoldSubject {
  /** refund | payout */
  kind: 'refund' | 'payout';
  id: number;
  publicId: string;
  /** USD minor units. */
  amount: bigint;
}

/** held += amount. The caller has checked the wallet can cover it; the CHECK constraint insists. */
export function placeHold(trx: Executor, wallet: LockedWallet, subject: HoldSubject, now: string) {
  return postMovement(trx, wallet, {
    kind: `${subject.kind}_hold`,
    referenceId: subject.id,
    referencePublicId: subject.publicId,
    amount: subject.amount,
    entries: { held: subject.amount, hold_offset: -subject.amount },
    now,
  });
}

/** held −= amount: the refund failed or the payout was rejected. */
export function releaseHold(trx: Executor, wallet: LockedWallet, subject: HoldSubject, now: string) {
  return postMovement(trx, wallet, {
    kind: `${subject.kind}_release`,
    referenceId: subject.id,
    referencePublicId: subject.publicId,
    amount: subject.amount,
    entries: { held: -subject.amount, hold_offset: subject.amount },
    now,
  });
}

/** The held money leaves the wallet: held −= amount, and balance (then reserve) −= amount. */
export function debitHold(trx: Executor, wallet: LockedWallet, subject: HoldSubject, now: string) {
  const split = splitDebit(wallet, subject.amount);
  return postMovement(trx, wallet, {
    kind: `${subject.kind}_debit`,
    referenceId: subject.id,
    referencePublicId: subject.publicId,
    amount: subject.amount,
    entries: {
      held: -subject.amount,
      hold_offset: subject.amount,
      balance: -split.balance,
      reserve: -split.reserve,
      [subject.kind === 'refund' ? 'refunds' : 'payouts']: subject.amount,
    },
    now,
  });
}
