// Step 3 of a renewal try (renew.ts): its answer recorded, once, in a transaction that holds the
// subscription's lock, whoever brings it (the try itself, the reconciler's read back: renewal-readback.ts,
// or kassa renewal resolve: resolve.ts). A decided try moves the cycle and the subscription as dunning.ts
// says; a try the provider refused (no card was tried) is given back and made again under the same key,
// until the refusals have lasted PROVIDER_ERROR_LIMIT_MS: then it is flagged for the operator.
import type { AppContext } from '../../context.ts';
import type { Executor } from '../../db/database.ts';
import { NEVER_MADE } from '../../provider/operations/store.ts';
import type { ProviderOutcome, ProviderPaymentState } from '../../provider/types.ts';
import { applyProviderState, movePayment } from '../payments/transitions.ts';
import { afterTry, MAX_TRIES, type TryResult } from './dunning.ts';
import {
  applyStep,
  cancelAtPeriodEnd,
  clockOf,
  closeCycle,
  lockCycle,
  type Outbox,
  periodEndCancelDue,
  renewalInFlight,
  renewalKey,
  type SubscriptionWithPlan,
} from './renewal-cycles.ts';
import type { SubscriptionCycleRow, SubscriptionRow } from './table.ts';

/** How long a try the provider refused (not a decline) waits before it is made again. */
const PROVIDER_ERROR_PAUSE_MS = 3_600_000;
/**
 * How long the provider may refuse one try (a refused key, a rate limit), counted on the subscription's
 * clock from the first refusal, before the try is flagged for the operator instead of made again.
 */
export const PROVIDER_ERROR_LIMIT_MS = 72 * 3_600_000;

/** A charge the provider has not decided (pending) is recorded, and read back, as an unknown one is. */
export function undecidedAsUnknown(outcome: ProviderOutcome): ProviderOutcome {
  return outcome.status === 'pending' ? { status: 'unknown', reason: 'pending' } : outcome;
}

/** What a try's answer means for dunning; null while the charge's outcome is not known. */
function tryResultOf(outcome: ProviderOutcome): TryResult | null {
  switch (outcome.status) {
    case 'succeeded':
      return { succeeded: true };
    case 'failed':
      return { succeeded: false, declineCode: outcome.code };
    case 'requires_action':
      // Off-session, nobody can authenticate: the customer must give the card again (update-card page).
      return { succeeded: false, declineCode: 'authentication_required' };
    default:
      return null;
  }
}

/**
 * Step 3 (also the reconciler's, with the outcome it read): records a try's answer once. A try already
 * finished, or a cycle no longer waiting for this try, is left alone. Returns whether the try's
 * operation was flagged for the operator (the provider refused it for PROVIDER_ERROR_LIMIT_MS).
 */
export async function finishTry(
  ctx: AppContext,
  cycleId: number,
  tryNumber: number,
  outcome: ProviderOutcome,
  state: ProviderPaymentState | null,
  outbox: Outbox,
): Promise<boolean> {
  return ctx.db
    .transaction()
    .execute((trx) => recordTry(ctx, trx, cycleId, tryNumber, outcome, state, outbox));
}

/** Whether the cycle is waiting for the answer to try `tryNumber` (made, not recorded, nothing next). */
export function waitsForTry(cycle: SubscriptionCycleRow, tryNumber: number): boolean {
  return (
    Number(cycle.attempts) === tryNumber &&
    cycle.next_attempt_at === null &&
    ['processing', 'retrying'].includes(cycle.status)
  );
}

/**
 * A try the provider refused (no card was tried) is not a try: its number is given back, so the same
 * try, under the same key, is made at `nextAttemptAt`. The cycle's first try time is kept only if an
 * earlier try was made (the retry schedule runs from the first real try). `since`: when the refusals
 * began (null: a new count).
 */
export async function putTryBack(
  trx: Executor,
  cycle: SubscriptionCycleRow,
  tryNumber: number,
  nextAttemptAt: string,
  since: string | null,
  nowIso: string,
) {
  await trx
    .updateTable('subscription_cycles')
    .set({
      attempts: tryNumber - 1,
      first_attempt_at: tryNumber === 1 ? null : cycle.first_attempt_at,
      next_attempt_at: nextAttemptAt,
      provider_errors_since: since,
      leased_by: null,
      lease_until: null,
      updated_at: nowIso,
    })
    .where('id', '=', cycle.id)
    .execute();
}

/**
 * The provider has refused the try for PROVIDER_ERROR_LIMIT_MS: it is not made again by itself. The cycle
 * waits (no next try, as for an answer never read) and the try's operation is flagged, with what the
 * provider said, for the operator: on the renewal payment's review, `kassa renewal list`, `kassa doctor`
 * and /metrics; `kassa renewal resolve` takes it from there.
 */
async function flagRefusedTry(
  ctx: AppContext,
  trx: Executor,
  subscription: SubscriptionRow,
  cycle: SubscriptionCycleRow,
  tryNumber: number,
  refusal: Extract<ProviderOutcome, { status: 'failed' }>,
  since: string,
  nowIso: string,
) {
  const realNowIso = ctx.clock().toISOString();
  await trx
    .updateTable('subscription_cycles')
    .set({
      provider_errors_since: since,
      next_attempt_at: null,
      leased_by: null,
      lease_until: null,
      updated_at: nowIso,
    })
    .where('id', '=', cycle.id)
    .execute();
  const reason = `${subscription.provider} refused every call of this try since ${since} (${refusal.code}: ${refusal.message})`;
  await trx
    .updateTable('provider_operations')
    .set({
      state: 'flagged',
      outcome: 'failed',
      outcome_code: refusal.code,
      outcome_message: refusal.message.slice(0, 500),
      flagged_at: realNowIso,
      next_read_at: null,
      last_read_error: reason.slice(0, 500),
      updated_at: realNowIso,
    })
    .where('idempotency_key', '=', renewalKey(cycle.id, tryNumber))
    .execute();
  if (ctx.config.logLevel !== 'silent')
    console.error(
      `kassa: renewal of cycle ${cycle.id}: ${reason}; flagged for the operator (kassa renewal list)`,
    );
}

/** finishTry in the caller's transaction (kassa renewal resolve records its try in its own). */
export async function recordTry(
  ctx: AppContext,
  trx: Executor,
  cycleId: number,
  tryNumber: number,
  outcome: ProviderOutcome,
  state: ProviderPaymentState | null,
  outbox: Outbox,
): Promise<boolean> {
  const { subscription, cycle } = await lockCycle(trx, cycleId);
  const nowIso = clockOf(ctx, subscription).toISOString();
  const realNowIso = ctx.clock().toISOString();
  if (state && cycle.payment_id !== null) {
    const applied = await applyProviderState(trx, cycle.payment_id, state, realNowIso);
    // The bank paid a charge whose cycle was closed meanwhile (void, uncollectible): paid after all.
    if (applied.closedPeriodPaid !== null)
      outbox.push({ subscriptionId: applied.closedPeriodPaid, mail: 'receipt' });
  }
  const result = tryResultOf(outcome);
  if (result === null || !waitsForTry(cycle, tryNumber)) return false;
  if (outcome.status === 'failed' && outcome.providerError === true) {
    // The provider refused the call itself (a refused key, a rate limit): no card was tried, so this is
    // not a try. No dunning step and no mail; the same try (same number, same key) is made again after
    // a pause, the fifth as well, until the refusals have lasted PROVIDER_ERROR_LIMIT_MS: then the try
    // is flagged for the operator instead (an hourly retry for ever hid a revoked key).
    const since = cycle.provider_errors_since ?? nowIso;
    if (Date.parse(nowIso) - Date.parse(since) >= PROVIDER_ERROR_LIMIT_MS) {
      await flagRefusedTry(ctx, trx, subscription, cycle, tryNumber, outcome, since, nowIso);
      return true;
    }
    const next = new Date(Date.parse(nowIso) + PROVIDER_ERROR_PAUSE_MS).toISOString();
    await putTryBack(trx, cycle, tryNumber, next, since, nowIso);
    if (ctx.config.logLevel !== 'silent')
      console.error(
        `kassa: renewal of cycle ${cycle.id} refused by ${subscription.provider} (${outcome.code}: ${outcome.message}); the same try again in an hour`,
      );
    return false;
  }
  if (outcome.status === 'failed' && outcome.code === NEVER_MADE && tryNumber < MAX_TRIES) {
    // The try never reached the provider (a crash before the call): nothing was charged and nobody
    // declined, so the period is tried again at once, under the next key. A fifth try has no next
    // one (the cycle's CHECK allows five), so it counts as that try's decline: known, left as is. The
    // provider answered: its refusals are over.
    await trx
      .updateTable('subscription_cycles')
      .set({
        next_attempt_at: nowIso,
        provider_errors_since: null,
        leased_by: null,
        lease_until: null,
        updated_at: nowIso,
      })
      .where('id', '=', cycle.id)
      .execute();
    return false;
  }
  if (!result.succeeded && cycle.payment_id !== null) {
    // A charge that was processing at the bank (the payment `pending`), then declined: the payment is
    // `failed` (pending → failed, one event), as a checkout's is. It takes no more tries: the next one
    // charges a new renewal payment (prepareTry), and its declined PaymentIntent is never confirmed again.
    await movePayment(trx, cycle.payment_id, 'pending', 'failed', realNowIso);
  }
  return recordDecided(ctx, trx, subscription, cycle, tryNumber, result, outbox);
}

/**
 * A try decided (its answer, or its payment found paid already: prepareTry), in the caller's
 * transaction that holds the subscription's lock: the dunning step, its mail, and a cancel at the
 * period's end that was waiting for it. The payment is not moved here (the try's provider state was
 * applied before, and settled the payment once if it became paid).
 */
export async function recordDecided(
  ctx: AppContext,
  trx: Executor,
  subscription: SubscriptionWithPlan,
  cycle: SubscriptionCycleRow,
  tryNumber: number,
  result: TryResult,
  outbox: Outbox,
): Promise<false> {
  const nowIso = clockOf(ctx, subscription).toISOString();
  const realNowIso = ctx.clock().toISOString();
  if (cycle.provider_errors_since !== null) {
    // The provider answered, or the payment is paid: its refusals are over.
    await trx
      .updateTable('subscription_cycles')
      .set({ provider_errors_since: null })
      .where('id', '=', cycle.id)
      .execute();
  }
  const step = afterTry(new Date(cycle.first_attempt_at ?? nowIso), tryNumber, result);
  if (periodEndCancelDue(subscription, nowIso)) {
    // A try made before the period's end, at which the merchant canceled, answered after it (the
    // cancel waited for it). A success paid the period it was made for, which ended at canceled_at:
    // it is kept (receipt). A decline is not dunned: the cycle is void, its payment canceled. Either
    // way the subscription ends at the period's end, reason merchant, and nothing is tried again.
    if (result.succeeded) {
      await applyStep(trx, subscription, cycle, step, nowIso, realNowIso, outbox);
      outbox.push({ subscriptionId: subscription.id, mail: 'receipt' });
    } else await closeCycle(trx, cycle, 'void', nowIso, realNowIso, outbox);
    if (!(await renewalInFlight(trx, subscription.id, realNowIso))) {
      await cancelAtPeriodEnd(trx, subscription, nowIso, realNowIso, outbox);
      outbox.push({ subscriptionId: subscription.id, mail: 'canceled' });
    }
    return false;
  }
  await applyStep(trx, subscription, cycle, step, nowIso, realNowIso, outbox);
  if (step.mail) outbox.push({ subscriptionId: subscription.id, mail: step.mail });
  return false;
}
