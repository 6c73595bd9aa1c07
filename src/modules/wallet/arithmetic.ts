// The wallet's arithmetic, pure (no I/O), so every rule is unit-tested and mutation-tested directly:
// what is available, how a debit splits over the buckets, how a settlement splits between reserve and
// balance. The ledger (ledger.ts) posts the movements these amounts make.
import { percentOf, toBigInt } from '../../lib/money.ts';
import type { WalletRow } from './table.ts';

export interface Buckets {
  balance: bigint;
  reserve: bigint;
  held: bigint;
}

export function bucketsOf(row: Pick<WalletRow, 'balance' | 'reserve' | 'held'>): Buckets {
  return { balance: toBigInt(row.balance), reserve: toBigInt(row.reserve), held: toBigInt(row.held) };
}

/** balance + reserve − held: what refunds may still draw on. */
export function availableOf(buckets: Buckets): bigint {
  return buckets.balance + buckets.reserve - buckets.held;
}

/**
 * The held amount is taken from the balance first, then the reserve. `promised` is the part of the
 * balance held for pending payouts (a payout is accepted up to balance − held and is paid from the
 * balance alone): a debit takes the balance beyond it first, so a refund never spends money a payout
 * was promised and the payout never has to be paid out of the reserve.
 */
export function splitDebit(
  wallet: Buckets,
  amount: bigint,
  promised = 0n,
): { balance: bigint; reserve: bigint } {
  const free = wallet.balance - promised;
  const fromBalance = lesserOf(amount, free > 0n ? free : 0n);
  return { balance: fromBalance, reserve: amount - fromBalance };
}

/** The smaller of two amounts (Math.min does not take bigints). */
export function lesserOf(a: bigint, b: bigint): bigint {
  if (a < b) return a;
  return b;
}

/** A settlement of `netUsd`: reserve = net × rolling_reserve_percent/100 (half-up), balance = the rest. */
export function settlementSplit(netUsd: bigint, reserveBp: bigint): { reserve: bigint; balance: bigint } {
  const reserve = percentOf(netUsd, reserveBp);
  return { reserve, balance: netUsd - reserve };
}
