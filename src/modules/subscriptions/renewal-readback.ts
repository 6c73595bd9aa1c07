// The reconciler's side of a renewal try whose answer was lost (renewalOperationHandlers): the charge is
// read back from the provider, never made again, and its outcome recorded as the try's answer
// (renewal-answers.ts). kassa renewal resolve (resolve.ts) reads a flagged try the same way (outcomeOfTry).
import type { AppContext } from '../../context.ts';
import type { OperationHandler, OperationHandlers } from '../../provider/operations/reconciler.ts';
import { NEVER_MADE } from '../../provider/operations/store.ts';
import type { OperationRow } from '../../provider/operations/table.ts';
import {
  outcomeOfAttempt,
  type ProviderAttempt,
  type ProviderOutcome,
  type ProviderPaymentState,
} from '../../provider/types.ts';
import { finishTry, undecidedAsUnknown } from './renewal-answers.ts';
import { flush, type Outbox, RENEWAL_KIND } from './renewal-cycles.ts';

/** How far behind Kassa's clock a provider's may be, when an attempt is matched to a try by time. */
const CLOCK_SKEW_MS = 60_000;

/**
 * The attempt a renewal try made, at the provider: the one under the try's key, where the provider says
 * which write made each attempt (the simulator). Stripe does not (a charge carries no idempotency key):
 * there, a PaymentIntent that succeeded paid the period, whichever try charged it; otherwise the try's
 * attempt is the newest one made since its row was written (tries are days apart, or five minutes and
 * more when one never reached the provider), else the newest one Kassa has not recorded (a clock Kassa
 * runs ahead of the provider's: a subscription's test clock). A cycle's tries run one after another,
 * off-session, so nobody else makes attempts on its payment. Undefined: the try made none.
 */
async function attemptOfTry(
  ctx: AppContext,
  operation: OperationRow,
  state: ProviderPaymentState,
): Promise<ProviderAttempt | undefined> {
  const keyed = state.attempts.find((known) => known.idempotencyKey === operation.idempotency_key);
  if (keyed || state.attempts.some((known) => known.idempotencyKey != null)) return keyed;
  const newestFirst = [...state.attempts].sort((a, b) => b.attemptedAt.localeCompare(a.attemptedAt));
  if (state.outcome === 'PAYMENT_SUCCESS')
    return newestFirst.find((known) => known.status === 'succeeded') ?? newestFirst[0];
  // Made since the try's row was written (the provider's clock may be a little behind ours): the
  // sync loop or a webhook may have recorded it already (helper-30's review), so it is found by time.
  const since = Date.parse(operation.created_at) - CLOCK_SKEW_MS;
  const made = newestFirst.find((attempt) => Date.parse(attempt.attemptedAt) >= since);
  if (made) return made;
  // The cycle's payment's attempts; one recorded while it was pending (an earlier read) is still this
  // try's to decide.
  const recorded = await ctx.db
    .selectFrom('deposit_attempts')
    .innerJoin('subscription_cycles', 'subscription_cycles.payment_id', 'deposit_attempts.payment_id')
    .select('deposit_attempts.provider_attempt_id')
    .where('subscription_cycles.id', '=', operation.subject_id)
    .where('deposit_attempts.status', 'not in', ['pending', 'processing'])
    .execute();
  const known = new Set(recorded.map((row) => row.provider_attempt_id));
  return newestFirst.find((attempt) => !known.has(attempt.attemptId));
}

/** The try a renewal charge's operation made (its context's `try`). */
export function tryNumberOf(operation: Pick<OperationRow, 'context'>): number {
  return Number((JSON.parse(operation.context) as { try?: number }).try ?? 0);
}

/** What the provider's state of a cycle's payment shows of one try: its attempt's outcome, or unknown. */
export async function outcomeOfTry(
  ctx: AppContext,
  operation: OperationRow,
  state: ProviderPaymentState,
): Promise<ProviderOutcome> {
  const attempt = await attemptOfTry(ctx, operation, state);
  return attempt
    ? outcomeOfAttempt(attempt, state.nextAction ?? null)
    : { status: 'unknown', reason: 'no attempt of this try at the provider' };
}

/**
 * The provider's state of the payment a try charged: read by its provider id once Kassa has recorded it
 * (an earlier try's answer, a webhook, a sync), by the try's reference only while none is known. A read
 * by id is consistent; Stripe's search by reference is not (a minute behind, more during an outage), so it
 * could miss the PaymentIntent a try has just made and have it taken for never made.
 */
async function providerStateOfTry(
  ctx: AppContext,
  operation: OperationRow,
): Promise<ProviderPaymentState | null> {
  const provider = ctx.providers.named(operation.provider);
  const payment =
    operation.organization_id === null
      ? undefined
      : await ctx.db
          .selectFrom('payments')
          .select('provider_payment_id')
          .where('organization_id', '=', operation.organization_id)
          .where('public_id', '=', operation.reference)
          .executeTakeFirst();
  const known = payment?.provider_payment_id ?? null;
  return known === null ? provider.findPayment(operation.reference) : provider.getPayment(known);
}

/**
 * The reconciler's side: a renewal charge whose answer was lost is read back, never made again. Whatever
 * the provider has of the cycle's payment is recorded first (its provider id above all: the next try
 * confirms that payment instead of making another one); a charge the provider has not decided yet is
 * read again on the reconciler's schedule, not taken for one that was never made.
 */
const renewalCharge: OperationHandler = {
  async read(ctx, operation) {
    const state = await providerStateOfTry(ctx, operation);
    const tryNumber = tryNumberOf(operation);
    if (!state) return { outcome: null };
    const outcome = await outcomeOfTry(ctx, operation, state);
    const outbox: Outbox = [];
    // An outcome not known yet (pending, or no attempt) only records the provider's state.
    await finishTry(ctx, operation.subject_id, tryNumber, undecidedAsUnknown(outcome), state, outbox);
    await flush(ctx, outbox);
    if (outcome.status === 'unknown') return { outcome: null };
    if (outcome.status === 'pending') return { outcome: null, pending: true };
    return { outcome, providerObjectId: state.providerPaymentId };
  },
  async neverMade(ctx, operation) {
    // Never reached the provider: nothing was charged; the period is tried again at once (finishTry).
    const tryNumber = tryNumberOf(operation);
    const outbox: Outbox = [];
    await finishTry(
      ctx,
      operation.subject_id,
      tryNumber,
      {
        status: 'failed',
        code: NEVER_MADE,
        message: 'never reached the provider',
        retryable: true,
      },
      null,
      outbox,
    );
    await flush(ctx, outbox);
  },
  // Flagged, it waits for the operator's statement (paid or not charged) and goes on with the dunning.
  resolvedBy: (key) => `kassa renewal resolve ${key} paid|not-charged`,
};

export const renewalOperationHandlers: OperationHandlers = { [RENEWAL_KIND]: renewalCharge };
