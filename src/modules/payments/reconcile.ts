// How the reconciler reads back a payment's lost provider answers (provider/operations/reconciler.ts):
// payment_attempt (a card attempt Kassa made, kassa-pay-{id}-{n}) and payment_open (the provider payment
// opened for the hosted page, kassa-pay-{id}). The provider payment is found by our reference; what it
// shows is applied through applyProviderState, as any sync would; the attempt is matched by its key.
// A call flagged for review is read once more, and recorded the same way, by kassa operation resolve
// (`resolve`, provider/operations/resolve.ts).
import type { AppContext } from '../../context.ts';
import type { Executor } from '../../db/database.ts';
import { ConflictError } from '../../http/errors.ts';
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
import { renewalPaidElsewhere } from '../subscriptions/renew.ts';
import { wasPaid } from './table.ts';
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

/** Reads the provider payment of the operation's payment and applies it; null when the provider has none. */
async function readPayment(
  ctx: AppContext,
  operation: OperationRow,
): Promise<{ state: ProviderPaymentState; conflict: string | null } | null> {
  const provider = ctx.providers.named(operation.provider);
  const state = await provider.findPayment(operation.reference);
  if (!state) return null;
  const applied = await ctx.db
    .transaction()
    .execute((trx) => applyPaymentState(trx, operation, state, ctx.clock().toISOString()));
  // A renewal's payment paid by this read: its cycle's next try is due now (after the commit).
  if (applied.changed) await renewalPaidElsewhere(ctx, applied.payment);
  const { conflict } = applied;
  return { state, conflict };
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

/** The attempt this operation made, as the provider payment shows it; undefined when it has none. */
function attemptOf(operation: OperationRow, state: ProviderPaymentState | null) {
  return state?.attempts.find((known) => known.idempotencyKey === operation.idempotency_key);
}

const paymentAttempt: OperationHandler = {
  async read(ctx, operation): Promise<OperationRead> {
    const found = await readPayment(ctx, operation);
    if (!found) return { outcome: null };
    const attempt = attemptOf(operation, found.state);
    if (!attempt) return { outcome: null, conflict: found.conflict };
    await releaseAttemptLock(ctx.db, operation.subject_id);
    return {
      outcome: outcomeOfAttempt(attempt, found.state.nextAction ?? null),
      providerObjectId: found.state.providerPaymentId,
      conflict: found.conflict,
    };
  },
  neverMade: (ctx, operation) => releaseAttemptLock(ctx.db, operation.subject_id),
  async resolve(ctx, operation) {
    const state = await ctx.providers.named(operation.provider).findPayment(operation.reference);
    const attempt = attemptOf(operation, state);
    const outcome = attempt && state ? outcomeOfAttempt(attempt, state.nextAction ?? null) : null;
    if (outcome?.status === 'pending' || outcome?.status === 'requires_action') {
      const waits =
        outcome.status === 'pending' ? 'is processing' : "waits for the customer's authentication";
      throw new ConflictError(
        `${operation.provider} has not decided this attempt yet (${state?.providerPaymentId} ${waits}). Nothing changed; resolve it once it has (or cancel the payment at the provider).`,
      );
    }
    // Either way the checkout's slot is freed, as the reconciler frees it: decided, or never made.
    return paymentReading(operation, state, outcome, (trx) => releaseAttemptLock(trx, operation.subject_id));
  },
};

const paymentOpen: OperationHandler = {
  async read(ctx, operation): Promise<OperationRead> {
    const found = await readPayment(ctx, operation);
    if (!found) return { outcome: null };
    return {
      outcome: { status: 'succeeded' },
      providerObjectId: found.state.providerPaymentId,
      conflict: found.conflict,
    };
  },
  async resolve(ctx, operation) {
    // Opening charges nothing: the provider payment exists (opened), or the page opens it again.
    const state = await ctx.providers.named(operation.provider).findPayment(operation.reference);
    return paymentReading(operation, state, state ? { status: 'succeeded' } : null);
  },
};

/**
 * What one more read of a payment's flagged call records: the provider payment's state applied as the
 * reconciler applies it (a charge after Kassa gave the payment up is its provider_conflict), then `also`.
 */
function paymentReading(
  operation: OperationRow,
  state: ProviderPaymentState | null,
  outcome: KnownOutcome | null,
  also?: (trx: Executor) => Promise<void>,
): FlaggedReading {
  return {
    shows: describePayment(operation, state, outcome),
    outcome,
    providerObjectId: state?.providerPaymentId ?? null,
    async record(trx, now) {
      if (state) await applyPaymentState(trx, operation, state, now);
      await also?.(trx);
      return presentPayment(trx, operation.subject_id);
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
  if (outcome === null) return `no attempt of this call (${payment})`;
  if (outcome.status === 'succeeded') return `charged (${payment})`;
  return `declined (${outcome.status === 'failed' ? outcome.code : outcome.status}; ${payment})`;
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
};
