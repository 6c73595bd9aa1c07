// Every change of a payment goes through one of these functions, inside the caller's transaction:
// the row, its attempts, the settlement and the transaction.status_changed event move together.
// Each one locks the row and re-reads it first, so concurrent callers apply an outcome once.
import type { Executor } from '../../db/database.ts';
import { deferWrite } from '../../db/write-behind.ts';
import { newPublicId } from '../../lib/ids.ts';
import { convert, percentOf, RATE_SCALE, toBigInt } from '../../lib/money.ts';
import type { ProviderPaymentOutcome, ProviderPaymentState } from '../../provider/types.ts';
import { attemptInFlight, isExpired } from '../checkout/status.ts';
import type { CheckoutSessionRow } from '../checkout/table.ts';
import { paidAfterCycleClosed } from '../subscriptions/renewal-cycles.ts';
import { onSignupPaymentPaid } from '../subscriptions/signup.ts';
import { creditSettlement, postSettlement } from '../wallet/settlement.ts';
import { type CardSummary, planAttempts, type RecordedAttempt, writeAttempts } from './attempts.ts';
import { emitPaymentEvent } from './events.ts';
import * as store from './store.ts';
import { PAYMENT_COLUMNS, type PaymentRow, type PaymentStatus } from './table.ts';

/** Statuses of a payment Kassa gave up on: a provider success after them is a conflict, not a move. */
const GIVEN_UP: readonly PaymentStatus[] = ['failed', 'canceled'];

/**
 * The provider charged a payment Kassa had already failed or canceled (its checkout expired while the
 * customer's browser was still confirming): nothing moves back, a person decides (refund or honour it).
 */
async function flagConflict(trx: Executor, payment: PaymentRow, now: string): Promise<string> {
  const conflict = `The provider reports this payment paid after Kassa marked it ${payment.status} (${now}): refund it at the provider or honour the order.`;
  // Called under the row's lock on a row without a conflict: the guard cannot refuse it, and the caller
  // knows the row it makes.
  await trx
    .updateTable('payments')
    .set({ provider_conflict: conflict })
    .where('id', '=', payment.id)
    .where('provider_conflict', 'is', null)
    .execute();
  return conflict;
}

/** Statuses of a payment that was paid: its deposit may still settle. */
const PAID_STATUSES: readonly PaymentStatus[] = ['paid', 'refund_pending', 'refunded'];

export interface NewPaymentTerms {
  feeBp: bigint;
  fxEurUsd: bigint;
  provider: string;
  /** The simulator processes it: no real money moves. */
  simulated: boolean;
  items: { productId: string | null; name: string }[];
}

/**
 * The first card attempt of a checkout creates its payment, processing; fee and FX are fixed here. Or
 * undefined (nothing written) when the checkout already has its payment (one per checkout: a unique
 * column), so that a caller that expects none need not read first to find out.
 */
export async function openPaymentUnlessOpen(
  trx: Executor,
  session: CheckoutSessionRow,
  terms: NewPaymentTerms,
  now: string,
): Promise<PaymentRow | undefined> {
  const gross = toBigInt(session.gross);
  const fee = percentOf(gross, terms.feeBp);
  const net = gross - fee;
  const fxRate = session.currency === 'EUR' ? terms.fxEurUsd : RATE_SCALE;
  const payment = await trx
    .insertInto('payments')
    .values({
      public_id: newPublicId('payment'),
      organization_id: session.organization_id,
      environment: session.environment,
      checkout_session_id: session.id,
      payment_link_id: session.payment_link_id,
      status: 'processing',
      currency: session.currency,
      gross: Number(gross),
      fee: Number(fee),
      net: Number(net),
      gross_ht: Number(session.subtotal_ht),
      fee_bp: Number(terms.feeBp),
      fx_rate: Number(fxRate),
      net_usd: Number(convert(net, fxRate)),
      payer_email: session.billing_email,
      products: JSON.stringify(
        terms.items.map((item, index) => ({ id: item.productId ?? `item_${index + 1}`, name: item.name })),
      ),
      provider: terms.provider,
      simulated: terms.simulated ? 1 : 0,
      provider_payment_id: null,
      provider_refund_state: null,
      deposit_status: null,
      settled_at: null,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) => oc.column('checkout_session_id').doNothing())
    .returning(PAYMENT_COLUMNS)
    .executeTakeFirst();
  if (!payment) return undefined;
  // A payment just opened has no attempt yet, and its checkout is the one in hand.
  await emitPaymentEvent(trx, payment, now, { checkout: session, attempts: [] });
  return payment;
}

/** Where a provider outcome takes a payment, or null when it does not move it. */
export function nextStatus(current: PaymentStatus, outcome: ProviderPaymentOutcome): PaymentStatus | null {
  if (current !== 'processing' && current !== 'pending') return null;
  switch (outcome) {
    case 'PAYMENT_SUCCESS':
      return 'paid';
    case 'PAYMENT_FAILED':
      return 'failed';
    case 'CANCELED':
    case 'CHECKOUT_CANCELED':
      return 'canceled';
    case 'CHECKOUT_PENDING':
      return current === 'processing' ? 'pending' : null;
    case 'PROCESSING':
      return null;
  }
}

export interface AppliedState {
  payment: PaymentRow;
  changed: boolean;
  attempts: RecordedAttempt[];
  /**
   * The subscription whose renewal period this move paid after its cycle was closed (the bank paid a
   * charge that was pending when the subscription was canceled: paidAfterCycleClosed), so its customer is
   * owed the receipt once the transaction has committed; null otherwise.
   */
  closedPeriodPaid: number | null;
}

/**
 * Applies what the provider says about a payment: new or changed attempts, the status move, the deposit,
 * settlement once the payment is paid and its deposit succeeded, and one event if anything visible changed.
 * Idempotent: applying the same (or an older) state again changes nothing. `card`: the brand and last
 * 4 digits of the attempt the caller made; `checkout`: the payment's checkout, when the caller holds it
 * (whether it is a subscription's signup, and its references for the event; null: read what matters).
 */
export async function applyProviderState(
  trx: Executor,
  paymentId: number,
  state: ProviderPaymentState,
  now: string,
  card: CardSummary | null = null,
  checkout: CheckoutSessionRow | null = null,
  /**
   * Lock the payment and read its attempts in one statement, which on PostgreSQL does not wait for a
   * lock another transaction holds but fails (lockPaymentWithAttempts): for a caller that runs its
   * transaction again the plain way when it does (recordAttemptAnswer in checkout/pay.ts).
   */
  lockWithoutWaiting = false,
): Promise<AppliedState> {
  const locked = lockWithoutWaiting
    ? await store.lockPaymentWithAttempts(trx, paymentId)
    : { payment: await store.lockPayment(trx, paymentId), attempts: null };
  let payment = locked?.payment;
  if (!payment) throw new Error(`payment ${paymentId} not found`);
  if (payment.provider_payment_id !== null && payment.provider_payment_id !== state.providerPaymentId) {
    throw new Error(`payment ${payment.public_id}: provider payment id mismatch`);
  }
  if (
    state.outcome === 'PAYMENT_SUCCESS' &&
    GIVEN_UP.includes(payment.status) &&
    payment.provider_conflict === null
  ) {
    payment = { ...payment, provider_conflict: await flagConflict(trx, payment, now) };
  }
  // Everything below is worked out from the row and its attempts as read under this transaction's lock:
  // no other transaction can change them, so the writes need not read anything back (write-behind.ts).
  const plan = planAttempts(
    payment,
    locked?.attempts ?? (await store.attemptsOf(trx, payment.id)),
    state.attempts,
    card,
  );
  let status = nextStatus(payment.status, state.outcome);
  if (status === 'canceled' && state.outcome === 'CANCELED' && (await canceledByKassa(trx, payment, now))) {
    status = 'failed';
  }
  const nowPaid = PAID_STATUSES.includes(status ?? payment.status);
  let deposit = payment.deposit_status;
  if (nowPaid && state.outcome === 'PAYMENT_SUCCESS' && deposit !== 'succeeded') {
    deposit = state.depositStatus ?? 'succeeded';
  }
  const visible = status !== null || plan.changed;
  const nextAction =
    state.nextAction && (status ?? payment.status) === 'processing' ? JSON.stringify(state.nextAction) : null;
  const quiet =
    deposit !== payment.deposit_status ||
    state.refundState !== payment.provider_refund_state ||
    nextAction !== payment.next_action ||
    payment.provider_payment_id === null;
  // Paid with its deposit in, and not settled yet: settled now, its settled_at stamped by the update
  // below and the wallet credited at the end. The settlement's movement is the one write whose answer
  // is needed (its id for the entries, the organization's reserve terms; none if it was posted before),
  // so it goes first: on PostgreSQL every write after it is held back and sent with the commit, in the
  // order below (write-behind.ts).
  const settling = (visible || quiet) && nowPaid && deposit === 'succeeded' && payment.settled_at === null;
  const settlement = settling ? await postSettlement(trx, payment, now) : null;
  await writeAttempts(trx, plan);
  const { attempts } = plan;
  if (!visible && !quiet) return { payment, changed: false, attempts, closedPeriodPaid: null };
  const changes = {
    status: status ?? payment.status,
    deposit_status: deposit,
    provider_payment_id: state.providerPaymentId,
    provider_refund_state: state.refundState,
    next_action: nextAction,
    updated_at: visible ? now : payment.updated_at,
    settled_at: settling ? now : payment.settled_at,
  };
  // Under the lock the row is the one read: the update needs no guard, and the row it makes is known.
  await deferWrite(trx, trx.updateTable('payments').set(changes).where('id', '=', payment.id));
  let updated: PaymentRow = { ...payment, ...changes };
  // A signup's first payment: once it is paid, its subscription exists (with the card it saved). A
  // caller that holds the checkout tells whether it is a signup; otherwise it is looked up.
  const signup = checkout === null ? null : checkout.subscription_plan_id !== null;
  const renewalId = updated.subscription_id;
  let closedPeriodPaid: number | null = null;
  if (status === 'paid' && renewalId === null && signup !== false) {
    if (await onSignupPaymentPaid(trx, updated, state.savedCard ?? null, now))
      updated = (await store.lockPayment(trx, updated.id)) ?? updated;
  } else if (status === 'paid' && renewalId !== null) {
    // A renewal's charge the bank paid after its cycle was closed (the subscription canceled meanwhile):
    // the period is paid after all.
    closedPeriodPaid = await paidAfterCycleClosed(trx, { id: updated.id, subscription_id: renewalId }, now);
  }
  // The attempts as planned under this transaction's lock: the event need not read them.
  if (visible) await emitPaymentEvent(trx, updated, now, checkout === null ? null : { checkout, attempts });
  // Last: the wallet's row is what every payment of the organization waits for (settlement.ts).
  if (settlement !== null) await creditSettlement(trx, updated, settlement, now);
  return { payment: updated, changed: visible, attempts, closedPeriodPaid };
}

/**
 * Whether the provider's cancel of a payment is Kassa's stop before it fails the payment, which any sync
 * that reads the cancel first (another loop, another worker, a webhook, the customer's sync-status) must
 * record as Kassa would: failed, not canceled. Two such stops (sync.ts):
 * - a payment taking card attempts whose checkout the expiry would fail now: expired, not canceled by
 *   the customer, and no attempt in flight (checkout/status.ts, as sync-status's expiry). An expired
 *   checkout's payment fails (decisions.md). An attempt in flight (its own answer being recorded, a
 *   scripted sandbox cancel) keeps the provider's word.
 * - a `pending` payment (its bank was deciding): no provider cancels a payment while its bank decides
 *   (Stripe refuses a processing PaymentIntent; the simulator's bank pays every pending one), so one
 *   canceled was declined by the bank first and then stopped (sync.ts, stopIfDeclined): the bank's
 *   decline is its failure (decisions.md: pending → failed). A renewal's payment too (its cycle closed
 *   while the bank decided, stopped by the same read; or its PaymentIntent canceled by hand at Stripe
 *   after the bank's decline): failed, as the try's decline makes it (renewal-answers.ts).
 * Otherwise a renewal's payment (its checkout closed from the start) keeps the provider's word: the
 * renewal worker decides it.
 */
async function canceledByKassa(trx: Executor, payment: PaymentRow, now: string): Promise<boolean> {
  if (payment.status === 'pending') return true;
  if (payment.subscription_id !== null) return false;
  return payment.status === 'processing' && (await checkoutExpired(trx, payment, now));
}

/** Whether the payment's checkout is one the expiry would fail now (canceledByKassa). */
async function checkoutExpired(trx: Executor, payment: PaymentRow, now: string): Promise<boolean> {
  const session = await trx
    .selectFrom('checkout_sessions')
    .select(['expires_at', 'canceled_at', 'attempt_locked_until'])
    .where('id', '=', payment.checkout_session_id)
    .executeTakeFirst();
  if (session === undefined || session.canceled_at !== null) return false;
  const at = new Date(now);
  return isExpired(session, at) && !attemptInFlight(session, at);
}

/** A simple status move (customer cancel, checkout expiry) from one expected status, with its event. */
export async function movePayment(
  trx: Executor,
  paymentId: number,
  from: PaymentStatus,
  to: PaymentStatus,
  now: string,
): Promise<PaymentRow | null> {
  const payment = await store.lockPayment(trx, paymentId);
  if (!payment || payment.status !== from) return null;
  const updated = await trx
    .updateTable('payments')
    .set({ status: to, next_action: to === 'processing' ? payment.next_action : null, updated_at: now })
    .where('id', '=', payment.id)
    .where('status', '=', from)
    .returningAll()
    .executeTakeFirst();
  if (!updated) return null;
  await emitPaymentEvent(trx, updated, now);
  return updated;
}
