// The end of a checkout: the customer cancels, or anyone holding the token (or the merchant, by
// checkout_id with an API key) asks for its status. Sync-status asks the provider first and applies
// the answer; calling it again changes nothing the provider has not changed.
import type { AppContext } from '../../context.ts';
import { ConflictError, NotFoundError } from '../../http/errors.ts';
import { toBigInt } from '../../lib/money.ts';
import type { Environment } from '../api-keys/table.ts';
import { emitCanceledCheckoutEvent } from '../payments/events.ts';
import * as payments from '../payments/store.ts';
import { stopAtProvider, syncPayment } from '../payments/sync.ts';
import type { PaymentRow } from '../payments/table.ts';
import { movePayment } from '../payments/transitions.ts';
import { syncTrialSignup } from '../subscriptions/signup.ts';
import { findSessionAndPaymentByToken, findSessionByToken } from './hosted.ts';
import { assertStillOpen, attemptInFlight, checkoutState, isExpired, presentSyncStatus } from './status.ts';
import * as store from './store.ts';
import type { CheckoutSessionRow } from './table.ts';

export async function cancelCheckout(ctx: AppContext, token: string) {
  const found = await findSessionByToken(ctx, token);
  const before = await payments.paymentOfCheckout(ctx.db, found.id);
  // With a provider whose form is its own (Stripe), the customer's browser could still confirm the payment
  // there: it is stopped first (a success meanwhile wins, and is the cancel's answer). A pending one (the
  // bank was deciding) may have been declined, unread yet, or read and stopped but not yet failed (sync.ts,
  // stopIfDeclined): it is read as sync-status reads it, so the answer is the outcome. (The simulator's
  // bank pays every pending payment, on the reads its sandbox script counts: a cancel does not read it.)
  // Whether this cancel looked at the provider: only then may a decided payment be its answer (below). With
  // a provider whose card form is Kassa's (the simulator) nothing is read, and a payment decided meanwhile
  // (a pay answered between the read above and the lock) leaves the checkout finished: 410, as the
  // contract says.
  let looked = false;
  if (before && !ctx.providers.named(before.provider).cardForm) {
    if (before.status === 'processing') await stopAtProvider(ctx, before);
    else if (before.status === 'pending') await syncPayment(ctx, before, 'customer');
    looked = before.status === 'processing' || before.status === 'pending';
  }
  const now = ctx.clock();
  const nowIso = now.toISOString();
  const { session, payment } = await ctx.db.transaction().execute(async (trx) => {
    const locked = await store.lockSession(trx, found.id);
    const existing = await payments.paymentOfCheckout(trx, locked.id);
    // The cancel's own look decided the payment (paid meanwhile; declined by the bank): its outcome is the
    // answer, as sync-status's would be, and nothing is canceled.
    if (looked && before && existing && decidedByLook(locked, before, existing, now)) {
      return { session: locked, payment: existing };
    }
    if (!existing || !finishesLostCancel(ctx, locked, existing, now)) assertCancelable(locked, existing, now);
    await store.updateSession(trx, locked.id, { canceled_at: nowIso, updated_at: nowIso });
    const canceled = { ...locked, canceled_at: nowIso, updated_at: nowIso };
    if (!existing) {
      const organization = await store.organizationTerms(trx, locked.organization_id);
      await emitCanceledCheckoutEvent(
        trx,
        {
          organizationId: locked.organization_id,
          environment: locked.environment,
          publicId: locked.public_id,
          gross: toBigInt(locked.gross),
          currency: locked.currency,
          feeBp: toBigInt(organization.fee_bp),
          createdAt: locked.created_at,
          metadata: locked.metadata,
          clientReferenceId: locked.client_reference_id,
          subscriptionPublicId: locked.subscription_public_id,
        },
        nowIso,
      );
      return { session: canceled, payment: undefined };
    }
    // A payment already canceled (a lost cancel finished here) does not move: the read that applied the
    // provider's cancel sent its event.
    const moved = await movePayment(trx, existing.id, 'processing', 'canceled', nowIso);
    return { session: canceled, payment: moved ?? existing };
  });
  return presentSyncStatus(session, payment, now);
}

/** Paid or failed: a payment no cancel can change (a canceled one is finishesLostCancel's). */
const DECIDED: readonly PaymentRow['status'][] = ['paid', 'refund_pending', 'refunded', 'failed'];

/**
 * Whether the payment, still undecided in Kassa's record when the cancel came (processing or pending) on
 * an open checkout, was decided by the cancel's own look at the provider (or a read that finished
 * meanwhile): the browser paid, or the bank declined a pending payment (its stop made, then failed). The
 * customer is shown that outcome (200, SUCCESS or FAILED), not an error: the checkout was open when they
 * asked. A checkout Kassa held finished or expired when the cancel came is a 410, as the contract says.
 */
function decidedByLook(
  session: CheckoutSessionRow,
  before: PaymentRow,
  payment: PaymentRow,
  now: Date,
): boolean {
  return (
    (before.status === 'processing' || before.status === 'pending') &&
    DECIDED.includes(payment.status) &&
    session.canceled_at === null &&
    !isExpired(session, now)
  );
}

/** A cancel needs an open checkout (410 otherwise) whose bank is not deciding and no attempt in flight (409). */
function assertCancelable(session: CheckoutSessionRow, payment: PaymentRow | undefined, now: Date): void {
  const state = checkoutState(session, payment, now, true);
  assertStillOpen(state);
  if (state === 'pending') {
    throw new ConflictError(
      "This checkout's payment is awaiting the bank's decision and cannot be canceled.",
    );
  }
  if (attemptInFlight(session, now)) {
    throw new ConflictError('A payment attempt for this checkout is in progress; try again in a moment.');
  }
}

/**
 * Whether this cancel finishes an earlier one whose cancel at the provider landed but whose answer was lost.
 * That customer was answered 503 ("nothing was changed; try again"), and the next read of the payment (this
 * retry's last look in stopAtProvider, the sync loop, a provider webhook) applied the provider's cancel, so
 * the payment is canceled while the checkout is not. The retry must answer as the first cancel would have
 * (200, CANCELED), not find the checkout gone (410). Only a provider Kassa stops on the customer's cancel
 * (its form is its own) can have such a cancel; a payment the simulator's script canceled stays final, and
 * an expired checkout (a renewal's is closed from the start) is gone, as the contract says.
 */
function finishesLostCancel(
  ctx: AppContext,
  session: CheckoutSessionRow,
  payment: PaymentRow,
  now: Date,
): boolean {
  return (
    payment.status === 'canceled' &&
    session.canceled_at === null &&
    !isExpired(session, now) &&
    !ctx.providers.named(payment.provider).cardForm
  );
}

/**
 * Asks the provider about the checkout's payment, applies the answer and any expiry, and reports.
 * `known`: the payment read with the session (by token), used unless the signup's sync moved the session.
 */
export async function syncCheckout(
  ctx: AppContext,
  found: CheckoutSessionRow,
  known?: { payment: PaymentRow | undefined },
) {
  // A trial signup whose card waited for 3-D Secure: its setup may have finished.
  const session = await syncTrialSignup(ctx, found);
  let payment =
    known && session === found ? known.payment : await payments.paymentOfCheckout(ctx.db, session.id);
  // A payment without a provider id is found by its reference (its first answer may have been lost).
  if (payment && payments.mayStillMove(payment)) {
    await syncPayment(ctx, payment);
    payment = await payments.paymentOfCheckout(ctx.db, session.id);
  }
  const now = ctx.clock();
  if (payment?.status === 'processing' && isExpired(session, now) && !attemptInFlight(session, now)) {
    await stopAtProvider(ctx, payment);
    const paymentId = payment.id;
    await ctx.db.transaction().execute(async (trx) => {
      const locked = await store.lockSession(trx, session.id);
      if (!attemptInFlight(locked, now))
        await movePayment(trx, paymentId, 'processing', 'failed', now.toISOString());
    });
    payment = await payments.paymentOfCheckout(ctx.db, session.id);
  }
  return presentSyncStatus(session, payment, now);
}

export async function syncCheckoutByToken(ctx: AppContext, token: string) {
  const { session, payment } = await findSessionAndPaymentByToken(ctx, token);
  return syncCheckout(ctx, session, { payment });
}

export async function syncCheckoutById(
  ctx: AppContext,
  organizationId: number,
  environment: Environment,
  checkoutId: string,
) {
  const session = await store.findByPublicId(ctx.db, organizationId, environment, checkoutId);
  if (!session) throw new NotFoundError('Checkout not found.');
  return syncCheckout(ctx, session);
}
