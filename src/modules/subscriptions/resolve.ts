// The operator's way out of a renewal try flagged for review (kassa renewal list / kassa renewal resolve;
// docs/subscriptions.md "Flagged renewal tries"). A try is flagged when the reconciler could not establish
// its outcome by its last read, or when the provider refused it (a refused key, a rate limit) for
// PROVIDER_ERROR_LIMIT_MS: its cycle then waits, with no next try, and nothing charges it again.
//
// The operator, having looked at the provider, states what happened: `paid` or `not_charged`. Kassa reads
// the provider once more, as the reconciler does (the cycle's payment by its reference, or the provider
// payment the operator names, which must be this payment's), and acts only on what that read shows:
// - charged: `paid` records it through the try's own path (recordTry: the payment paid and settled once,
//   the cycle paid, the receipt); `not_charged` is refused.
// - declined: `not_charged` records the decline (the dunning goes on as after any decline); `paid` is refused.
// - no charge of this try: `not_charged` goes on as the reconciler's "never made" does (the period is tried
//   again at once under the next key), or, for a try the provider refused, as a refusal does (the same try
//   under the same key, at once, its refusals counted anew); `paid` is refused.
// - not decided yet, or the provider cannot be read: refused, nothing changes.
// Every later try goes to the same provider payment, which neither provider charges twice (a Stripe
// PaymentIntent that succeeded is found and not confirmed again, or, once Kassa knows its id, Stripe
// refuses the confirm; the simulator's decided payment takes no further attempts), and whose refusal is
// recorded as what that payment shows: paid, not a decline (dunning.ts, answerOfTry). Only a provider
// payment canceled at the provider (final, never charged) is replaced: the next try opens a new renewal
// payment (renew.ts, prepareTry). The operation is
// settled, the cycle moved and the audit entry written in one transaction that takes the subscription's
// lock and settles the operation only if it is still flagged, so a try is resolved once however many
// operators run the command.
import type { AppContext } from '../../context.ts';
import type { Executor } from '../../db/database.ts';
import { ConflictError, DomainError, NotFoundError, ValidationError } from '../../http/errors.ts';
import { describeOperationState } from '../../provider/operations/resolve.ts';
import { NEVER_MADE, operationByKey, settleFlaggedOperation } from '../../provider/operations/store.ts';
import type { OperationRow } from '../../provider/operations/table.ts';
import type { KnownOutcome, ProviderOutcome, ProviderPaymentState } from '../../provider/types.ts';
import { type Actor, OPERATOR, recordAudit } from '../audit/record.ts';
import { putTryBack, recordTry, waitsForTry } from './renewal-answers.ts';
import { CYCLE_SUBJECT, clockOf, flush, lockCycle, type Outbox, RENEWAL_KIND } from './renewal-cycles.ts';
import { outcomeOfTry, tryNumberOf } from './renewal-readback.ts';

export type RenewalResolution = 'paid' | 'not_charged';

interface Reading {
  state: ProviderPaymentState | null;
  outcome: ProviderOutcome;
}

function notFlagged(operation: OperationRow): ConflictError {
  return new ConflictError(
    `${operation.idempotency_key} is not flagged: ${describeOperationState(operation)}. Only a flagged renewal try can be resolved.`,
  );
}

/** The start of a renewal try's key; every other kind of call is kassa operation resolve's. */
const RENEWAL_KEY_PREFIX = 'kassa-renew-';

/** A key that is another kind of call's (kassa-pay-…, kassa-refund-…, kassa-setup-…): where it is resolved. */
function otherKind(key: string, kind: string | null): ValidationError {
  const what = kind === null ? 'not a renewal try' : `a ${kind} operation, not a renewal try`;
  return new ValidationError(
    `${key} is ${what} (kassa-renew-{cycle}-{try}): resolve it with kassa operation resolve ${key}.`,
  );
}

async function flaggedRenewal(ctx: AppContext, key: string): Promise<OperationRow> {
  const operation = await operationByKey(ctx.db, key);
  if (!operation) {
    // Another kind's key (a payment attempt's kassa-pay-…) is pointed to its command, found or not.
    if (key.startsWith('kassa-') && !key.startsWith(RENEWAL_KEY_PREFIX)) throw otherKind(key, null);
    throw new NotFoundError(`No provider operation ${key}.`);
  }
  if (operation.kind !== RENEWAL_KIND || operation.subject_type !== CYCLE_SUBJECT) {
    throw otherKind(key, operation.kind);
  }
  if (operation.state !== 'flagged') throw notFlagged(operation);
  return operation;
}

/** The provider's state of the try, read once more (no change is made by reading). */
async function readTry(
  ctx: AppContext,
  operation: OperationRow,
  providerPaymentId: string | null,
): Promise<Reading> {
  const provider = ctx.providers.named(operation.provider);
  let state: ProviderPaymentState | null;
  try {
    state =
      providerPaymentId === null
        ? await provider.findPayment(operation.reference)
        : await provider.getPayment(providerPaymentId);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new DomainError(
      502,
      `Kassa could not read ${operation.reference} from ${operation.provider} (${reason}). Nothing changed; resolve it once the provider answers.`,
    );
  }
  if (providerPaymentId !== null) {
    if (!state)
      throw new NotFoundError(`${operation.provider} has no payment ${providerPaymentId}. Nothing changed.`);
    if (state.reference !== operation.reference) {
      throw new ConflictError(
        `${providerPaymentId} is not this renewal's payment: ${operation.provider} shows it made for ${state.reference ?? 'no Kassa payment'}, the renewal is ${operation.reference}. Nothing changed.`,
      );
    }
  }
  if (!state)
    return { state, outcome: { status: 'unknown', reason: `no payment for ${operation.reference}` } };
  return { state, outcome: await outcomeOfTry(ctx, operation, state) };
}

/** What to record for the operator's statement, given what the provider shows; refused when they disagree. */
function decide(
  operation: OperationRow,
  resolution: RenewalResolution,
  reading: Reading,
): { outcome: KnownOutcome; refused: boolean; shows: string } {
  const { outcome, state } = reading;
  const provider = operation.provider;
  const unchanged = 'Nothing changed';
  switch (outcome.status) {
    case 'succeeded': {
      const shows = `charged (${state?.providerPaymentId})`;
      if (resolution === 'paid') return { outcome, refused: false, shows };
      throw new ConflictError(
        `${provider} shows this try ${shows}: it was paid. ${unchanged}; resolve it as paid.`,
      );
    }
    case 'pending':
      throw new ConflictError(
        `${provider} has not decided this charge yet (${state?.providerPaymentId} is processing). ${unchanged}; resolve it once it has.`,
      );
    case 'failed':
    case 'requires_action': {
      const code = outcome.status === 'failed' ? outcome.code : 'authentication_required';
      const shows = `declined (${code})`;
      if (resolution === 'not_charged') return { outcome, refused: false, shows };
      throw new ConflictError(
        `${provider} shows this try ${shows}: it was not paid. ${unchanged}; resolve it as not-charged to go on with the dunning.`,
      );
    }
    default: {
      const shows = `no charge of this try (${outcome.reason})`;
      if (resolution === 'paid') {
        throw new ConflictError(
          `${provider} shows ${shows}. ${unchanged}. If its dashboard shows the charge, name it with --provider-payment-id; otherwise resolve it as not-charged.`,
        );
      }
      // Refused for too long (flagRefusedTry recorded the refusal): the same try again, under the same
      // key. Otherwise the try never reached the provider, as the reconciler's "never made" concludes.
      const refused = operation.outcome === 'failed';
      const recorded: KnownOutcome = refused
        ? {
            status: 'failed',
            code: operation.outcome_code ?? 'provider_refused',
            message: operation.outcome_message ?? 'The provider refused the call.',
            retryable: true,
            providerError: true,
          }
        : {
            status: 'failed',
            code: NEVER_MADE,
            message: 'Resolved by the operator: the provider has no charge of this try.',
            retryable: true,
          };
      return { outcome: recorded, refused, shows };
    }
  }
}

async function presentResult(trx: Executor, cycleId: number) {
  const cycle = await trx
    .selectFrom('subscription_cycles')
    .innerJoin('subscriptions', 'subscriptions.id', 'subscription_cycles.subscription_id')
    .leftJoin('payments', 'payments.id', 'subscription_cycles.payment_id')
    .select([
      'subscriptions.public_id as subscription_id',
      'subscriptions.status as subscription_status',
      'subscription_cycles.period_index',
      'subscription_cycles.status',
      'subscription_cycles.attempts',
      'subscription_cycles.next_attempt_at',
      'payments.public_id as transaction_id',
      'payments.status as payment_status',
      'payments.provider_conflict',
    ])
    .where('subscription_cycles.id', '=', cycleId)
    .executeTakeFirstOrThrow();
  return {
    subscription: { id: cycle.subscription_id, status: cycle.subscription_status },
    cycle: {
      period_index: Number(cycle.period_index),
      status: cycle.status,
      attempts: Number(cycle.attempts),
      next_attempt_at: cycle.next_attempt_at,
    },
    transaction_id: cycle.transaction_id,
    payment_status: cycle.payment_status,
    provider_conflict: cycle.provider_conflict,
  };
}

/**
 * Resolves a flagged renewal try (its key, kassa-renew-{cycle}-{try}) as `paid` or `not_charged`, once
 * the provider's state agrees. Throws a DomainError, with nothing changed, when it does not.
 */
export async function resolveFlaggedRenewal(
  ctx: AppContext,
  input: { operation: string; resolution: RenewalResolution; providerPaymentId?: string | null },
  actor: Actor = OPERATOR,
) {
  const operation = await flaggedRenewal(ctx, input.operation);
  const providerPaymentId = input.providerPaymentId ?? null;
  const reading = await readTry(ctx, operation, providerPaymentId);
  const { outcome, refused, shows } = decide(operation, input.resolution, reading);
  const tryNumber = tryNumberOf(operation);
  const outbox: Outbox = [];
  const result = await ctx.db.transaction().execute(async (trx) => {
    const { subscription, cycle } = await lockCycle(trx, operation.subject_id);
    const known = cycle.payment_id === null ? null : await paymentIdOf(trx, cycle.payment_id);
    if (reading.state && known && known !== reading.state.providerPaymentId) {
      throw new ConflictError(
        `${operation.reference} is ${known} at ${operation.provider}, not ${reading.state.providerPaymentId}. Nothing changed.`,
      );
    }
    const realNow = ctx.clock().toISOString();
    const objectId = reading.state?.providerPaymentId ?? null;
    if (!(await settleFlaggedOperation(trx, operation.id, outcome, objectId, realNow))) {
      const now = await operationByKey(trx, operation.idempotency_key);
      throw notFlagged(now ?? operation);
    }
    if (refused) {
      const nowIso = clockOf(ctx, subscription).toISOString();
      if (waitsForTry(cycle, tryNumber)) await putTryBack(trx, cycle, tryNumber, nowIso, null, nowIso);
    } else {
      await recordTry(ctx, trx, cycle.id, tryNumber, outcome, reading.state, outbox);
    }
    const presented = await presentResult(trx, cycle.id);
    await recordAudit(
      trx,
      subscription.organization_id,
      actor,
      {
        action: 'subscription.renewal_resolved',
        target: { type: 'subscription', id: subscription.public_id },
        details: {
          operation: operation.idempotency_key,
          resolution: input.resolution,
          provider_shows: shows,
          provider_payment_id: objectId,
          transaction_id: operation.reference,
          period_index: presented.cycle.period_index,
          cycle_status: presented.cycle.status,
        },
      },
      realNow,
    );
    return presented;
  });
  await flush(ctx, outbox);
  return {
    operation: operation.idempotency_key,
    resolution: input.resolution,
    provider_shows: shows,
    provider_payment_id: reading.state?.providerPaymentId ?? null,
    ...result,
  };
}

async function paymentIdOf(trx: Executor, paymentId: number): Promise<string | null> {
  const row = await trx
    .selectFrom('payments')
    .select('provider_payment_id')
    .where('id', '=', paymentId)
    .executeTakeFirst();
  return row?.provider_payment_id ?? null;
}

/** The flagged renewal tries of every organization (or one), oldest flag first: what waits for the operator. */
export async function listFlaggedRenewals(db: Executor, filter: { org?: string; limit: number }) {
  let query = db
    .selectFrom('provider_operations')
    .innerJoin('subscription_cycles', 'subscription_cycles.id', 'provider_operations.subject_id')
    .innerJoin('subscriptions', 'subscriptions.id', 'subscription_cycles.subscription_id')
    .innerJoin('organizations', 'organizations.id', 'subscriptions.organization_id')
    .select([
      'provider_operations.idempotency_key',
      'provider_operations.provider',
      'provider_operations.reference',
      'provider_operations.outcome',
      'provider_operations.last_read_error',
      'provider_operations.flagged_at',
      'organizations.slug',
      'subscriptions.public_id as subscription_id',
      'subscriptions.environment',
      'subscription_cycles.period_index',
      'subscription_cycles.status as cycle_status',
    ])
    .where('provider_operations.kind', '=', RENEWAL_KIND)
    .where('provider_operations.subject_type', '=', CYCLE_SUBJECT)
    .where('provider_operations.state', '=', 'flagged');
  if (filter.org !== undefined) query = query.where('organizations.slug', '=', filter.org);
  const rows = await query
    .orderBy('provider_operations.flagged_at')
    .orderBy('provider_operations.id')
    .limit(filter.limit)
    .execute();
  return rows.map((row) => ({
    operation: row.idempotency_key,
    organization: row.slug,
    subscription_id: row.subscription_id,
    environment: row.environment,
    transaction_id: row.reference,
    period_index: Number(row.period_index),
    cycle_status: row.cycle_status,
    provider: row.provider,
    // refused: the provider refused every call for the limit; unknown: the outcome could not be read.
    why: row.outcome === 'failed' ? 'refused' : 'unknown',
    reason: row.last_read_error,
    flagged_at: row.flagged_at,
  }));
}
