// How the reconciler reads back a payment's lost provider answers (provider/operations/reconciler.ts):
// payment_attempt (a card attempt Kassa made, kassa-pay-{id}-{n}) and payment_open (the provider payment
// opened for the hosted page, kassa-pay-{id}). The provider payment is found by our reference; what it
// shows is applied through applyProviderState, as any sync would; the attempt is matched by its key. And
// payment_cancel (kassa-cancel-{id}, cancel.ts): the stop at the provider that got no answer (an
// expired checkout's payment, or a pending one the bank declined), which the reconciler makes again on
// its schedule, since a cancel charges nothing.
// A call flagged for review is read once more, and recorded the same way, by kassa operation resolve
// (`resolve`, provider/operations/resolve.ts).
import type { AppContext } from '../../context.ts';
import type { Executor } from '../../db/database.ts';
import type {
  FlaggedReading,
  OperationHandler,
  OperationHandlers,
  OperationRead,
  ResolvedSubject,
} from '../../provider/operations/reconciler.ts';
import type { OperationRow } from '../../provider/operations/table.ts';
import { type KnownOutcome, outcomeOfAttempt, type ProviderPaymentState } from '../../provider/types.ts';
import * as checkouts from '../checkout/store.ts';
import { afterPaymentRead } from '../subscriptions/renew.ts';
import { CANCEL_KIND } from './cancel.ts';
import { expirePayment, readProviderPayment, syncPayment } from './sync.ts';
import { type PaymentStatus, wasPaid } from './table.ts';
import { applyProviderState } from './transitions.ts';

/**
 * Applies the provider payment's state to the operation's payment, in the caller's transaction; returns
 * the payment as applied, and the conflict when the provider charged a payment Kassa gave up (its
 * checkout expired meanwhile): a person decides.
 */
async function applyPaymentState(
  trx: Executor,
  operation: OperationRow,
  state: ProviderPaymentState,
  now: string,
) {
  const applied = await applyProviderState(trx, operation.subject_id, state, now);
  const { payment } = applied;
  const conflict =
    state.outcome === 'PAYMENT_SUCCESS' && !wasPaid(payment.status)
      ? `the provider charged ${payment.public_id}, but it is ${payment.status} in Kassa`
      : null;
  return { ...applied, conflict };
}

/** Applies the provider payment read back to the operation's payment, in its own transaction; the conflict. */
async function applyRead(ctx: AppContext, operation: OperationRow, state: ProviderPaymentState) {
  const applied = await ctx.db
    .transaction()
    .execute((trx) => applyPaymentState(trx, operation, state, ctx.clock().toISOString()));
  await afterApply(ctx, applied);
  return applied.conflict;
}

/**
 * After the commit: a renewal's payment paid by the read has its cycle's next try due now (or, its cycle
 * closed meanwhile, its receipt sent).
 */
async function afterApply(ctx: AppContext, applied: Awaited<ReturnType<typeof applyPaymentState>>) {
  await afterPaymentRead(ctx, applied);
}

/** The provider payment of the operation's payment, by its reference; null when the provider has none. */
function findPayment(ctx: AppContext, operation: OperationRow) {
  return ctx.providers.named(operation.provider).findPayment(operation.reference);
}

/** The hosted checkout's attempt lock waited for this answer: the customer may try again. */
async function releaseAttemptLock(db: Executor, paymentId: number) {
  const payment = await db
    .selectFrom('payments')
    .select('checkout_session_id')
    .where('id', '=', paymentId)
    .executeTakeFirst();
  if (payment) await checkouts.updateSession(db, payment.checkout_session_id, { attempt_locked_until: null });
}

/**
 * The provider payment, and the outcome the attempt this operation made shows there (succeeded, declined,
 * processing, waiting for 3-D Secure; null when it has no such attempt): what the reconciler and kassa
 * operation resolve both read.
 */
async function findAttempt(ctx: AppContext, operation: OperationRow) {
  const state = await findPayment(ctx, operation);
  const attempt = state?.attempts.find((known) => known.idempotencyKey === operation.idempotency_key);
  const outcome = attempt && state ? outcomeOfAttempt(attempt, state.nextAction ?? null) : null;
  return { state, outcome };
}

const paymentAttempt: OperationHandler = {
  async read(ctx, operation): Promise<OperationRead> {
    const { state, outcome } = await findAttempt(ctx, operation);
    if (!state) return { outcome: null };
    const conflict = await applyRead(ctx, operation, state);
    if (!outcome) return { outcome: null, conflict };
    // The attempt has an answer, final or not (processing, waiting for the customer): the payment
    // follows the provider from here (its sync, webhooks), and the checkout's slot is free.
    await releaseAttemptLock(ctx.db, operation.subject_id);
    return { outcome, providerObjectId: state.providerPaymentId, conflict };
  },
  neverMade: (ctx, operation) => releaseAttemptLock(ctx.db, operation.subject_id),
  async resolve(ctx, operation) {
    const { state, outcome } = await findAttempt(ctx, operation);
    // Either way the checkout's slot is freed, as the reconciler frees it: an answer, or never made.
    return paymentReading(ctx, operation, state, outcome, (trx) =>
      releaseAttemptLock(trx, operation.subject_id),
    );
  },
};

const paymentOpen: OperationHandler = {
  async read(ctx, operation): Promise<OperationRead> {
    const state = await findPayment(ctx, operation);
    if (!state) return { outcome: null };
    const conflict = await applyRead(ctx, operation, state);
    return { outcome: { status: 'succeeded' }, providerObjectId: state.providerPaymentId, conflict };
  },
  async resolve(ctx, operation) {
    // Opening charges nothing: the provider payment exists (opened), or the page opens it again.
    const state = await findPayment(ctx, operation);
    return paymentReading(ctx, operation, state, state ? { status: 'succeeded' } : null);
  },
};

/** The provider payment of the operation's payment, read as any sync reads it (readProviderPayment). */
async function currentPayment(ctx: AppContext, operation: OperationRow) {
  const payment = await ctx.db
    .selectFrom('payments')
    .select(['public_id', 'provider', 'provider_payment_id'])
    .where('id', '=', operation.subject_id)
    .executeTakeFirstOrThrow();
  return readProviderPayment(ctx, payment);
}

/** A stop that found the payment charged: it could not be canceled, and the payment is paid. */
const PAID_BEFORE_CANCEL: KnownOutcome = {
  status: 'failed',
  code: 'payment_succeeded',
  message: 'The provider payment was paid before it could be canceled: the payment is paid.',
  retryable: false,
};

/**
 * A stop that found the payment processing at the bank (a bank debit, or a card the bank is still
 * deciding): the provider refuses to cancel it (Stripe: payment_intent_unexpected_state), and it may
 * still be paid, so it is not failed. The payment is `pending`, and the bank's answer, read by the
 * sync loop, decides it. The stop is over; it did not cancel anything.
 */
const PROCESSING_AT_BANK: KnownOutcome = {
  status: 'failed',
  code: 'payment_processing',
  message:
    'The provider payment is processing at the bank and could not be canceled: the payment is pending until the bank decides.',
  retryable: false,
};

/**
 * What the provider payment shows of a stop: canceled (the stop took effect), charged (it came too
 * late), processing at the bank (refused: the bank decides), or neither yet (still open to the
 * customer's browser: not final).
 */
function cancelOutcome(state: ProviderPaymentState): KnownOutcome {
  if (state.outcome === 'CANCELED') return { status: 'succeeded' };
  if (state.outcome === 'PAYMENT_SUCCESS') return PAID_BEFORE_CANCEL;
  if (state.outcome === 'CHECKOUT_PENDING') return PROCESSING_AT_BANK;
  return { status: 'pending' };
}

/**
 * What the stop's move made of the payment, as the stop's outcome: failed (the stop took effect), paid
 * (it came too late), or pending (the provider payment is processing at the bank, which the provider
 * refused to cancel; it is not failed, and its canceled state would be a false record).
 */
function stopOutcome(status: PaymentStatus): KnownOutcome {
  if (wasPaid(status)) return PAID_BEFORE_CANCEL;
  if (status === 'pending') return PROCESSING_AT_BANK;
  return { status: 'succeeded' };
}

const paymentCancel: OperationHandler = {
  async read(ctx, operation): Promise<OperationRead> {
    const payment = () =>
      ctx.db
        .selectFrom('payments')
        .select(['id', 'public_id', 'provider', 'status', 'provider_payment_id'])
        .where('id', '=', operation.subject_id)
        .executeTakeFirstOrThrow();
    // The stop's own move, made again. An expired checkout's payment still processing: the expirer's
    // last look, the cancel, then the payment failed. A pending one: a read, and if the bank declined it,
    // the cancel, then the payment failed (sync.ts, stopIfDeclined). A provider still silent throws (a
    // failed read, flagged after the last). Skipped once something else decided the payment (a webhook,
    // the sync loop, the customer's sync-status): nothing is left to stop.
    const before = await payment();
    if (before.status === 'processing') await expirePayment(ctx, operation.subject_id);
    else if (before.status === 'pending') await syncPayment(ctx, before, 'reconciler');
    const after = await payment();
    // An attempt took the checkout's slot before the expiry's move: its answer decides; read again later.
    if (after.status === 'processing') return { outcome: null, pending: true };
    return { outcome: stopOutcome(after.status), providerObjectId: after.provider_payment_id };
  },
  async resolve(ctx, operation) {
    // One read, no cancel: a PaymentIntent canceled fails the payment through applyProviderState (an
    // expired checkout's payment fails), one charged is paid, one processing at the bank makes the payment
    // pending (the stop refused, the bank's answer the sync loop's); one still open is recorded as not
    // final, and the expirer (a pending payment's: the next read, sync.ts), no longer kept off it, stops
    // it on its next round.
    const state = await currentPayment(ctx, operation);
    return paymentReading(ctx, operation, state, state ? cancelOutcome(state) : null);
  },
};

/**
 * What one more read of a payment's flagged call records: the provider payment's state applied as the
 * reconciler applies it (a charge after Kassa gave the payment up is its provider_conflict; a renewal's
 * payment paid ends its dunning after the commit), then `also`.
 */
function paymentReading(
  ctx: AppContext,
  operation: OperationRow,
  state: ProviderPaymentState | null,
  outcome: KnownOutcome | null,
  also?: (trx: Executor) => Promise<void>,
): FlaggedReading {
  let applied: Awaited<ReturnType<typeof applyPaymentState>> | null = null;
  return {
    shows: describePayment(operation, state, outcome),
    outcome,
    providerObjectId: state?.providerPaymentId ?? null,
    async record(trx, now) {
      if (state) applied = await applyPaymentState(trx, operation, state, now);
      await also?.(trx);
      return presentPayment(trx, operation.subject_id);
    },
    afterCommit: async () => {
      if (applied) await afterApply(ctx, applied);
    },
  };
}

function describePayment(
  operation: OperationRow,
  state: ProviderPaymentState | null,
  outcome: KnownOutcome | null,
): string {
  if (!state) return `no payment for ${operation.reference}`;
  const payment = `${state.providerPaymentId}, ${state.outcome}`;
  if (operation.kind === 'payment_open') return `opened (${payment})`;
  if (operation.kind === CANCEL_KIND) {
    if (state.outcome === 'CANCELED') return `canceled (${payment})`;
    if (state.outcome === 'PAYMENT_SUCCESS') return `charged before the cancel (${payment})`;
    if (state.outcome === 'CHECKOUT_PENDING') return `not canceled, processing at the bank (${payment})`;
    return `not canceled, still open (${payment})`;
  }
  if (outcome === null) return `no attempt of this call (${payment})`;
  if (outcome.status === 'succeeded') return `charged (${payment})`;
  if (outcome.status === 'requires_action') return `waiting for the customer's authentication (${payment})`;
  if (outcome.status === 'pending') return `processing (${payment})`;
  return `declined (${outcome.code}; ${payment})`;
}

async function presentPayment(trx: Executor, paymentId: number): Promise<ResolvedSubject> {
  const payment = await trx
    .selectFrom('payments')
    .select(['organization_id', 'public_id', 'status', 'provider_payment_id', 'provider_conflict'])
    .where('id', '=', paymentId)
    .executeTakeFirstOrThrow();
  return {
    organizationId: payment.organization_id,
    target: { type: 'payment', id: payment.public_id },
    state: {
      transaction_id: payment.public_id,
      payment_status: payment.status,
      provider_payment_id: payment.provider_payment_id,
      provider_conflict: payment.provider_conflict,
    },
  };
}

export const paymentOperationHandlers: OperationHandlers = {
  payment_attempt: paymentAttempt,
  payment_open: paymentOpen,
  [CANCEL_KIND]: paymentCancel,
};
