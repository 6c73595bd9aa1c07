// Where a checkout stands, derived from its session and payment (never stored twice), and the
// sync-status answer built from it: SUCCESS | FAILED | CANCELED | CHECKOUT_PENDING.
import { GoneError } from '../../http/errors.ts';
import type { PaymentRow } from '../payments/table.ts';
import type { CheckoutSessionRow } from './table.ts';

/** open: the customer can pay (again); pending: the bank is deciding (a payment pending, or an attempt
 * in flight on an expired checkout). The rest are final. */
export type CheckoutState = 'open' | 'pending' | 'paid' | 'failed' | 'canceled' | 'expired';
export type SyncStatus = 'SUCCESS' | 'FAILED' | 'CANCELED' | 'CHECKOUT_PENDING';

type PaymentStatusOnly = Pick<PaymentRow, 'status'> | undefined;

export function isExpired(session: Pick<CheckoutSessionRow, 'expires_at'>, now: Date): boolean {
  return now.getTime() >= Date.parse(session.expires_at);
}

export function attemptInFlight(
  session: Pick<CheckoutSessionRow, 'attempt_locked_until'>,
  now: Date,
): boolean {
  return session.attempt_locked_until !== null && Date.parse(session.attempt_locked_until) > now.getTime();
}

/**
 * `forAction`: for pay and cancel, an expired checkout is expired (410, as the contract says) even while
 * an attempt is in flight; for a status (sync-status, the hosted page) it is pending until that attempt
 * ends.
 */
export function checkoutState(
  session: CheckoutSessionRow,
  payment: PaymentStatusOnly,
  now: Date,
  forAction = false,
): CheckoutState {
  switch (payment?.status) {
    case 'paid':
    case 'refund_pending':
    case 'refunded':
      return 'paid';
    case 'failed':
      return 'failed';
    case 'canceled':
      return 'canceled';
    case 'pending':
      return 'pending';
  }
  // A trial signup saves the card without a payment: its subscription's creation finishes it.
  if (session.completed_at !== null) return 'paid';
  if (session.canceled_at !== null) return 'canceled';
  if (!isExpired(session, now)) return 'open';
  // Expired while a card attempt is in flight (its slot taken before the expiry): the bank is still
  // deciding, and the attempt may yet pay. Answering FAILED now would be a final answer that changes.
  return !forAction && payment?.status === 'processing' && attemptInFlight(session, now)
    ? 'pending'
    : 'expired';
}

export function syncStatusOf(state: CheckoutState): SyncStatus {
  switch (state) {
    case 'paid':
      return 'SUCCESS';
    case 'failed':
    case 'expired':
      return 'FAILED';
    case 'canceled':
      return 'CANCELED';
    default:
      return 'CHECKOUT_PENDING';
  }
}

export function redirectUrl(session: CheckoutSessionRow, status: SyncStatus): string | null {
  if (status === 'SUCCESS') return session.success_url;
  if (status === 'FAILED') return session.failed_url;
  if (status === 'CANCELED') return session.cancel_url;
  return null;
}

/** The sync-status body (also the answer to a cancel). */
export function presentSyncStatus(session: CheckoutSessionRow, payment: PaymentRow | undefined, now: Date) {
  const status = syncStatusOf(checkoutState(session, payment, now));
  return {
    checkout_id: session.public_id,
    order_id: session.public_id,
    status,
    transaction_id: payment?.public_id ?? null,
    payment_status: payment?.status ?? null,
    redirect_url: redirectUrl(session, status),
  };
}

const FINISHED: Partial<Record<CheckoutState, string>> = {
  expired: 'This checkout has expired.',
  paid: 'This checkout has already been paid.',
  failed: 'This checkout has failed; start a new one.',
  canceled: 'This checkout has been canceled.',
};

/** Pay and cancel need a checkout that is still open: an expired or finished one is a 410. */
export function assertStillOpen(state: CheckoutState): void {
  const detail = FINISHED[state];
  if (detail) throw new GoneError(detail);
}
