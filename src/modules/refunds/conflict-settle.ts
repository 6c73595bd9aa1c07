// The operator's side of a refund the provider contradicts (conflict-flag.ts): the open conflicts, and
// settling one (`kassa refund conflicts`, `kassa refund resolve`). Settling books one outcome and closes
// the conflict, audited with the operator as actor:
// - "provider": the money moved as the provider says, read again now. A refund Kassa failed that the
//   provider completed becomes completed (the wallet is debited what its hold was, the payment counts it);
//   a completed refund the provider failed becomes failed (the wallet gets it back, the payment no longer
//   counts it). Each emits refund.status_changed, and transaction.status_changed if the payment moves:
//   the one case where a finished refund's status changes, by a person's decision.
// - "kassa": Kassa's books stand (the operator put things right at the provider, or outside it).
import type { Kysely } from 'kysely';
import type { Clock } from '../../context.ts';
import type { Database, Executor } from '../../db/database.ts';
import { ConflictError, NotFoundError } from '../../http/errors.ts';
import { isPublicId, parseNumericId } from '../../lib/ids.ts';
import { formatAmount, toBigInt } from '../../lib/money.ts';
import type { Providers } from '../../provider/index.ts';
import type { ProviderRefundState } from '../../provider/types.ts';
import { type Actor, OPERATOR } from '../audit/record.ts';
import type { PaymentRow } from '../payments/table.ts';
import { availableOf, lockWallet } from '../wallet/ledger.ts';
import { postLateRefundDebit, postRefundReversal } from '../wallet/refund-corrections.ts';
import { closeConflict } from './conflict-flag.ts';
import { changePaymentStatus, emitRefundStatusChanged } from './events.ts';
import * as store from './store.ts';
import type { RefundRow } from './table.ts';
import { recordProviderAnswer } from './transitions.ts';

export type ConflictOutcome = 'provider' | 'kassa';

export interface SettleDeps {
  db: Kysely<Database>;
  clock: Clock;
  providers: Providers;
}

/** A refund of any organization (the operator's view), by its public id (RF…) or numeric id. */
function findAnyRefund(db: Executor, reference: string) {
  const numeric = parseNumericId(reference);
  if (numeric === null && !isPublicId('refund', reference)) return Promise.resolve(undefined);
  const query = db.selectFrom('refunds').selectAll();
  return (
    numeric === null ? query.where('public_id', '=', reference) : query.where('id', '=', numeric)
  ).executeTakeFirst();
}

/** The open conflicts, oldest first, of every organization or one (by slug). */
export async function listRefundConflicts(db: Executor, organizationSlug?: string) {
  let query = db
    .selectFrom('refunds')
    .innerJoin('payments', 'payments.id', 'refunds.payment_id')
    .innerJoin('organizations', 'organizations.id', 'refunds.organization_id')
    .selectAll('refunds')
    .select(['payments.public_id as payment_public_id', 'organizations.slug'])
    .where('refunds.provider_conflict', 'is not', null);
  if (organizationSlug !== undefined) query = query.where('organizations.slug', '=', organizationSlug);
  const rows = await query.orderBy('refunds.provider_conflict_at').orderBy('refunds.id').execute();
  return rows.map((row) => ({
    id: row.public_id,
    transaction: row.payment_public_id,
    organization: row.slug,
    environment: row.environment,
    amount: formatAmount(toBigInt(row.amount)),
    currency: row.currency,
    amount_usd: formatAmount(toBigInt(row.amount_usd)),
    status: row.status,
    provider_status: row.provider_conflict_status,
    provider_refund_id: row.provider_refund_id,
    conflict: row.provider_conflict,
    since: row.provider_conflict_at,
  }));
}

/** The provider's state of the refund now; a refusal when it cannot be read or has no record of it. */
async function readProvider(deps: SettleDeps, refund: RefundRow): Promise<ProviderRefundState> {
  const payment = await deps.db
    .selectFrom('payments')
    .select(['provider', 'provider_payment_id'])
    .where('id', '=', refund.payment_id)
    .executeTakeFirstOrThrow();
  const provider = deps.providers.named(payment.provider);
  let state: ProviderRefundState | null;
  try {
    state = refund.provider_refund_id
      ? await provider.getRefund(refund.provider_refund_id)
      : payment.provider_payment_id
        ? await provider.findRefund(refund.public_id, payment.provider_payment_id)
        : null;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ConflictError(
      `Could not read refund ${refund.public_id} from the provider (${reason}): try again.`,
    );
  }
  if (state === null) {
    throw new ConflictError(
      `The provider has no record of refund ${refund.public_id} now: nothing to book from it (keep Kassa's outcome with --outcome kassa if that is right).`,
    );
  }
  return state;
}

function unfinished(refund: RefundRow): ConflictError {
  return new ConflictError(
    `The provider has not finished refund ${refund.public_id} yet (processing): settle it once it has, or keep Kassa's outcome.`,
  );
}

/** The ledger corrects a refund once each way; a provider that changes its word again is a person's to settle. */
function correctedBefore(refund: RefundRow, outcome: 'completed' | 'failed'): ConflictError {
  return new ConflictError(
    `Refund ${refund.public_id} was already booked ${outcome} once by an operator, and the ledger corrects a refund once each way: keep Kassa's outcome (--outcome kassa) and put the difference right by hand.`,
  );
}

/** The provider completed a refund Kassa failed: the refund completes, its hold's worth leaves the wallet. */
async function bookLateCompletion(trx: Executor, refund: RefundRow, payment: PaymentRow, now: string) {
  const gross = toBigInt(payment.gross);
  const refunded = toBigInt(payment.refunded_amount) + toBigInt(refund.amount);
  if ((await store.refundBlockers(trx, payment.id)).inFlight) {
    throw new ConflictError(
      `Payment ${payment.public_id} has a refund in flight: settle ${refund.public_id} once it has finished.`,
    );
  }
  if (refunded > gross) {
    throw new ConflictError(
      `Booking ${refund.public_id} completed would count ${formatAmount(refunded)} of a ${formatAmount(gross)} ${payment.currency} payment refunded: compare the payment's refunds with the provider's first.`,
    );
  }
  const wallet = await lockWallet(trx, payment.organization_id, payment.environment, now);
  const amountUsd = toBigInt(refund.amount_usd);
  const corrected = { id: refund.id, publicId: refund.public_id, amount: amountUsd };
  const posted = await postLateRefundDebit(trx, wallet, corrected, now);
  if (posted === 'uncovered') {
    throw new ConflictError(
      `The wallet cannot cover ${refund.public_id}: ${formatAmount(availableOf(wallet))} USD available of the ${formatAmount(amountUsd)} USD it takes. Settle it once the wallet has the money (or keep Kassa's outcome).`,
    );
  }
  if (posted === 'posted_before') throw correctedBefore(refund, 'completed');
  await store.transitionRefund(trx, refund.id, [refund.status], 'completed', { error_message: null }, now);
  await emitRefundStatusChanged(trx, refund.id, payment.public_id, now);
  const status = refunded >= gross ? 'refunded' : payment.status;
  await changePaymentStatus(trx, payment, status, now, { refunded_amount: Number(refunded) });
}

/** The provider failed a refund Kassa completed: the refund fails, what its debit took comes back. */
async function bookReversal(trx: Executor, refund: RefundRow, payment: PaymentRow, now: string) {
  const refunded = toBigInt(payment.refunded_amount) - toBigInt(refund.amount);
  const wallet = await lockWallet(trx, payment.organization_id, payment.environment, now);
  const corrected = { id: refund.id, publicId: refund.public_id, amount: toBigInt(refund.amount_usd) };
  if ((await postRefundReversal(trx, wallet, corrected, now)) === 'posted_before') {
    throw correctedBefore(refund, 'failed');
  }
  const message = `The provider failed the refund after it completed; booked by the operator (${now}).`;
  await store.transitionRefund(trx, refund.id, ['completed'], 'failed', { error_message: message }, now);
  await emitRefundStatusChanged(trx, refund.id, payment.public_id, now);
  const status = payment.status === 'refunded' ? 'paid' : payment.status;
  await changePaymentStatus(trx, payment, status, now, {
    refunded_amount: Number(refunded > 0n ? refunded : 0n),
  });
}

/**
 * Settles a refund's open conflict with the outcome the operator chose; returns the refund as it now
 * stands. With "provider", the provider is read first: if it now agrees with Kassa the conflict closes
 * with nothing booked; if it has not finished the refund, nothing can be booked yet.
 */
export async function settleRefundConflict(
  deps: SettleDeps,
  reference: string,
  outcome: ConflictOutcome,
  actor: Actor = OPERATOR,
  note: string | null = null,
): Promise<RefundRow> {
  const found = await findAnyRefund(deps.db, reference);
  if (!found) throw new NotFoundError(`Refund ${reference} not found.`);
  if (found.provider_conflict === null) {
    throw new ConflictError(`Refund ${found.public_id} has no provider conflict to settle.`);
  }
  if (outcome === 'provider') {
    const after = await recordProviderAnswer(deps, found.id, await readProvider(deps, found));
    if (after.provider_conflict === null) return after;
    if (after.provider_conflict_status === 'processing') throw unfinished(after);
  }
  const now = deps.clock().toISOString();
  return deps.db.transaction().execute(async (trx) => {
    const payment = await store.lockPaymentById(trx, found.payment_id);
    const refund = await store.getRefund(trx, found.id);
    if (!refund || refund.provider_conflict === null) {
      throw new ConflictError(`Refund ${found.public_id} has no provider conflict to settle.`);
    }
    if (outcome === 'provider') {
      if (refund.provider_conflict_status === 'failed') await bookReversal(trx, refund, payment, now);
      else if (refund.provider_conflict_status === 'completed')
        await bookLateCompletion(trx, refund, payment, now);
      else throw unfinished(refund);
    }
    await closeConflict(
      trx,
      refund,
      payment,
      actor,
      'refund.provider_conflict_resolved',
      { outcome, provider_status: refund.provider_conflict_status, note },
      now,
    );
    return (await store.getRefund(trx, refund.id)) ?? refund;
  });
}
