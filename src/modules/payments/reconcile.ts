// How the reconciler reads back a payment's lost provider answers (provider/operations/reconciler.ts):
// payment_attempt (a card attempt Kassa made, kassa-pay-{id}-{n}) and payment_open (the provider payment
// opened for the hosted page, kassa-pay-{id}). The provider payment is found by our reference; what it
// shows is applied through applyProviderState, as any sync would; the attempt is matched by its key.
import type { AppContext } from '../../context.ts';
import type {
  OperationHandler,
  OperationHandlers,
  OperationRead,
} from '../../provider/operations/reconciler.ts';
import type { OperationRow } from '../../provider/operations/table.ts';
import { outcomeOfAttempt, type ProviderPaymentState } from '../../provider/types.ts';
import * as checkouts from '../checkout/store.ts';
import { renewalPaidElsewhere } from '../subscriptions/renew.ts';
import { wasPaid } from './table.ts';
import { applyProviderState } from './transitions.ts';

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
    .execute((trx) => applyProviderState(trx, operation.subject_id, state, ctx.clock().toISOString()));
  // A renewal's payment paid by this read: its cycle's next try is due now (after the commit).
  if (applied.changed) await renewalPaidElsewhere(ctx, applied.payment);
  const { payment } = applied;
  // Charged at the provider while Kassa gave the payment up (its checkout expired meanwhile): a person decides.
  const conflict =
    state.outcome === 'PAYMENT_SUCCESS' && !wasPaid(payment.status)
      ? `the provider charged ${payment.public_id}, but it is ${payment.status} in Kassa`
      : null;
  return { state, conflict };
}

/** The hosted checkout's attempt lock waited for this answer: the customer may try again. */
async function releaseAttemptLock(ctx: AppContext, paymentId: number) {
  const payment = await ctx.db
    .selectFrom('payments')
    .select('checkout_session_id')
    .where('id', '=', paymentId)
    .executeTakeFirst();
  if (payment)
    await checkouts.updateSession(ctx.db, payment.checkout_session_id, { attempt_locked_until: null });
}

const paymentAttempt: OperationHandler = {
  async read(ctx, operation): Promise<OperationRead> {
    const found = await readPayment(ctx, operation);
    if (!found) return { outcome: null };
    const attempt = found.state.attempts.find((known) => known.idempotencyKey === operation.idempotency_key);
    if (!attempt) return { outcome: null, conflict: found.conflict };
    await releaseAttemptLock(ctx, operation.subject_id);
    return {
      outcome: outcomeOfAttempt(attempt, found.state.nextAction ?? null),
      providerObjectId: found.state.providerPaymentId,
      conflict: found.conflict,
    };
  },
  neverMade: (ctx, operation) => releaseAttemptLock(ctx, operation.subject_id),
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
};

export const paymentOperationHandlers: OperationHandlers = {
  payment_attempt: paymentAttempt,
  payment_open: paymentOpen,
};
