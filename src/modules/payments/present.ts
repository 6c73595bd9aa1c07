// How a payment leaves the service: the interface's Payment object, and its DepositAttempt entries.
import { formatAmount, percentNumber, toBigInt } from '../../lib/money.ts';
import type { DepositAttemptRow, PaymentRow } from './table.ts';

export function presentAttempt(row: DepositAttemptRow) {
  return {
    status: row.status,
    paymentId: row.provider_payment_id,
    attemptedAt: row.attempted_at,
    errorMessage: row.error_message,
    paymentMethod: row.payment_method,
  };
}

/** GET /transactions/{id}/: amount is the gross charged, net_amount what the merchant keeps. */
export function presentPayment(payment: PaymentRow, attempts: DepositAttemptRow[]) {
  return {
    id: payment.public_id,
    amount: formatAmount(toBigInt(payment.gross)),
    net_amount: formatAmount(toBigInt(payment.net)),
    status: payment.status,
    currency: payment.currency,
    payer_email: payment.payer_email,
    products: JSON.parse(payment.products) as { id: string; name: string }[],
    depositAttempts: attempts.map(presentAttempt),
    fee_percent: percentNumber(toBigInt(payment.fee_bp)),
    amount_breakdown: {
      gross_ttc: formatAmount(toBigInt(payment.gross)),
      currency: payment.currency,
      net_usd: formatAmount(toBigInt(payment.net_usd)),
    },
    created_at: payment.created_at,
    updated_at: payment.updated_at,
  };
}

/** The dashboard's view: the same object with the checkout it came from and its environment. */
export function presentDashboardPayment(
  payment: PaymentRow,
  attempts: DepositAttemptRow[],
  checkoutId: string,
) {
  return {
    ...presentPayment(payment, attempts),
    checkout_id: checkoutId,
    environment: payment.environment,
    refunded_amount: formatAmount(toBigInt(payment.refunded_amount)),
  };
}
