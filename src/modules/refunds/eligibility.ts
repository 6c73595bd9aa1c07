// The refund rules, as pure arithmetic over a payment and its wallet: in the interface's order, with
// the exact message prefixes of the decisions. No I/O here, so every rule is unit-tested directly.
import { ValidationError } from '../../http/errors.ts';
import { formatAmount, mulDivFloor, mulDivHalfUp } from '../../lib/money.ts';
import type { PaymentStatus } from '../payments/table.ts';
import { availableOf, type Buckets } from '../wallet/ledger.ts';

export class RefundError extends ValidationError {}

/** The statuses of a payment that was paid, whose refunds a provider conflict puts under review. */
const REFUNDED_FAMILY: readonly PaymentStatus[] = ['paid', 'refund_pending', 'refunded'];

export interface RefundablePayment {
  status: PaymentStatus;
  providerRefundState: string | null;
  currency: string;
  /** Minor units of the charge currency. */
  gross: bigint;
  grossHt: bigint;
  netUsd: bigint;
  refundedAmount: bigint;
  /** Sum of amount_in_cents of this payment's completed refunds: what the provider already refunded. */
  refundedHt: bigint;
}

export interface RefundAmounts {
  /** Charge currency, TTC. */
  amount: bigint;
  /** The wallet hold: amount / gross × net_usd, half-up as a running total over the payment's refunds. */
  amountUsd: bigint;
  /** Sent to the provider, HT basis: amount × gross_ht / gross, half-up. */
  amountInCents: bigint;
}

export const REFUND_IN_PROGRESS = 'A refund is already in progress for this payment.';
/**
 * A refund of the payment whose provider contradicts Kassa (conflict-flag.ts): how much has left at the
 * provider is in doubt, so nothing more is refunded until an operator settles it. Refunding anyway could
 * refund the customer twice (a refund Kassa failed that the provider completed), or beyond what was paid.
 */
export function underReview(refundPublicId: string): string {
  return `A refund of this payment is under review: the provider contradicts what Kassa recorded for ${refundPublicId}, so no new refund can be made until the operator settles it.`;
}
export const ALREADY_REFUNDED = 'Payment has already been refunded.';
/**
 * A payment whose fee took the whole gross settled nothing to the wallet: its refund would hold
 * net_usd × share = 0 and the customer would be paid back from nobody's money. (Possible once an
 * operator sets fee_percent to 100; the CLI refuses that, older rows may still exist.)
 */
export const NOTHING_SETTLED =
  'Payment is not refundable: its fee took the whole amount, so nothing was settled to the wallet for it.';

/** What is left to refund: the gross less completed refunds. */
export function refundableRemainder(payment: RefundablePayment): bigint {
  const remaining = payment.gross - payment.refundedAmount;
  return remaining > 0n ? remaining : 0n;
}

/** The most the wallet can cover, in the charge currency: wallet_available × gross / net_usd, rounded down. */
export function walletLimit(payment: RefundablePayment, wallet: Buckets): bigint {
  const available = availableOf(wallet);
  // Nothing settled means nothing the wallet could give back (and no division by a zero net).
  if (available <= 0n || payment.netUsd <= 0n) return 0n;
  return mulDivFloor(available, payment.gross, payment.netUsd);
}

/**
 * Rule 2, read as meant: the provider's mark blocks refunds made outside Kassa. The provider also
 * marks the payment after Kassa's own refunds (PARTIAL_REFUNDED), which must not block the next
 * partial refund; so a PARTIAL_REFUNDED mark counts only when Kassa has refunded nothing itself.
 */
export function providerMarkBlocks(payment: RefundablePayment, refundInFlight: boolean): boolean {
  if (payment.providerRefundState === 'FULLY_REFUNDED') return true;
  if (!payment.providerRefundState) return false;
  return payment.refundedAmount === 0n && !refundInFlight;
}

/**
 * Rules 1–3: status, no refund under review (its public id in `conflictRefund`), provider marks, nothing
 * in flight, something left; and a net that settled something. Checked before the wallet.
 */
export function assertPaymentRefundable(
  payment: RefundablePayment,
  refundInFlight: boolean,
  conflictRefund: string | null = null,
): void {
  // Before "already refunded": a payment Kassa counts refunded may not be, if its provider failed a refund.
  if (conflictRefund !== null && REFUNDED_FAMILY.includes(payment.status)) {
    throw new RefundError(underReview(conflictRefund));
  }
  if (payment.status === 'refunded') throw new RefundError(ALREADY_REFUNDED);
  if (payment.status !== 'paid' && payment.status !== 'refund_pending') {
    throw new RefundError(`Payment is not refundable in status ${payment.status}.`);
  }
  if (providerMarkBlocks(payment, refundInFlight)) throw new RefundError(ALREADY_REFUNDED);
  if (refundInFlight) throw new RefundError(REFUND_IN_PROGRESS);
  if (refundableRemainder(payment) <= 0n) throw new RefundError(ALREADY_REFUNDED);
  if (payment.netUsd <= 0n) throw new RefundError(NOTHING_SETTLED);
}

/**
 * Rules 3–4 for a requested amount (null = the whole remainder): at most the remainder, and at most
 * what the wallet covers. Returns the amounts to record.
 */
export function refundAmounts(
  payment: RefundablePayment,
  wallet: Buckets,
  requested: bigint | null,
): RefundAmounts {
  const remaining = refundableRemainder(payment);
  const amount = requested ?? remaining;
  if (amount > remaining) {
    throw new RefundError(
      `Refund amount exceeds remaining refundable amount (${formatAmount(remaining)} ${payment.currency} remaining).`,
    );
  }
  const limit = walletLimit(payment, wallet);
  if (limit <= 0n) throw new RefundError('Insufficient wallet balance to refund any amount.');
  if (amount > limit) {
    throw new RefundError(
      `Refund amount exceeds wallet-available limit (at most ${formatAmount(limit)} ${payment.currency} can be refunded now).`,
    );
  }
  const amountInCents = mulDivHalfUp(amount, payment.grossHt, payment.gross);
  // Rounding each partial refund half-up could ask the provider for a cent more HT than is left.
  const htLeft = payment.grossHt - payment.refundedHt;
  // The hold is the refund's share of the net settlement, rounded half-up as a running total: the
  // payment's refunds together hold round(refunded × net_usd / gross), and a whole refund in any number
  // of parts holds net_usd exactly. Rounded part by part, small parts drifted without bound (555
  // refunds of 0.18 on 100.00 at a 2.9 % fee held 94.35 of 97.10; helper-28's review).
  const shareUpTo = (refunded: bigint) => mulDivHalfUp(refunded, payment.netUsd, payment.gross);
  return {
    amount,
    amountUsd: shareUpTo(payment.refundedAmount + amount) - shareUpTo(payment.refundedAmount),
    amountInCents: amountInCents > htLeft && htLeft >= 0n ? htLeft : amountInCents,
  };
}
