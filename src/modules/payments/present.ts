// How a payment leaves the service: the interface's Payment object, and its DepositAttempt entries.
import { formatAmount, percentNumber, toBigInt } from '../../lib/money.ts';
import type { ProviderReview } from './review.ts';
import type { CheckoutReference, PresentedAttempt, PresentedPayment } from './store.ts';
import type { DepositAttemptRow, PaymentRow } from './table.ts';

/**
 * The merchant's metadata ({} when none) and client_reference_id of the payment's checkout, and the
 * subscription it charges for (null for every other payment).
 */
export function presentReferences(
  checkout: Pick<CheckoutReference, 'metadata' | 'client_reference_id' | 'subscription_public_id'> | null,
) {
  return {
    metadata: checkout?.metadata ? (JSON.parse(checkout.metadata) as Record<string, string>) : {},
    client_reference_id: checkout?.client_reference_id ?? null,
    subscription_id: checkout?.subscription_public_id ?? null,
  };
}

export function presentAttempt(row: PresentedAttempt) {
  return {
    status: row.status,
    paymentId: row.provider_payment_id,
    attemptedAt: row.attempted_at,
    errorMessage: row.error_message,
    paymentMethod: row.payment_method,
  };
}

/** GET /transactions/{id}/: amount is the gross charged, net_amount what the merchant keeps. */
export function presentPayment(
  payment: PresentedPayment,
  attempts: PresentedAttempt[],
  checkout: CheckoutReference | null = null,
) {
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
    simulated: payment.simulated === 1,
    created_at: payment.created_at,
    updated_at: payment.updated_at,
    ...presentReferences(checkout),
  };
}

/**
 * The dashboard's view: the same object with the card of each attempt (brand and last 4, as the hosted
 * page shows them), the checkout and payment link it came from, and its environment.
 */
export function presentDashboardPayment(
  payment: PaymentRow,
  attempts: DepositAttemptRow[],
  checkout: CheckoutReference | undefined,
  review: ProviderReview | null = null,
) {
  return {
    ...presentPayment(payment, attempts, checkout ?? null),
    depositAttempts: attempts.map((row) => ({
      ...presentAttempt(row),
      cardBrand: row.card_brand,
      cardLast4: row.card_last4,
    })),
    checkout_id: checkout?.public_id ?? '',
    environment: payment.environment,
    refunded_amount: formatAmount(toBigInt(payment.refunded_amount)),
    payment_link_id: payment.payment_link_id,
    provider_review: review,
  };
}
