// Holds on the wallet for refunds and payouts: placed when the request is accepted, then either
// debited (balance first, then reserve; the balance pending payouts were promised last) or released. Each step is a ledger movement posted once.
import type { Executor } from '../../db/database.ts';
import { toBigInt } from '../../lib/money.ts';
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

/** What the wallet's pending payouts hold (USD minor units). Read under the wallet's lock: payouts are
 * created, completed and rejected under it, so the sum cannot change before the caller commits. */
export async function payoutHolds(trx: Executor, wallet: LockedWallet): Promise<bigint> {
  const row = await trx
    .selectFrom('payouts')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number | string>('amount'), eb.val(0)).as('held'))
    .where('organization_id', '=', wallet.organizationId)
    .where('environment', '=', wallet.environment)
    .where('status', '=', 'pending')
    .executeTakeFirstOrThrow();
  return toBigInt(row.held);
}

/**
 * The held money leaves the wallet: held −= amount, and balance (then reserve) −= amount. The balance
 * the other pending payouts were accepted against is taken last (splitDebit): a completed payout is no
 * longer pending when it is debited, so it is paid from the balance it was promised.
 */
export async function debitHold(trx: Executor, wallet: LockedWallet, subject: HoldSubject, now: string) {
  const split = splitDebit(wallet, subject.amount, await payoutHolds(trx, wallet));
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
