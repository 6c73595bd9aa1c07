// Refund creation, medusa-style: (1) check and record in one transaction (refund pending, wallet hold,
// payment refund_pending, events); (2) ask the provider outside any transaction; (3) record its answer.
import type { Kysely } from 'kysely';
import type { Clock } from '../../context.ts';
import type { Database, Executor } from '../../db/database.ts';
import { NotFoundError } from '../../http/errors.ts';
import { newPublicId } from '../../lib/ids.ts';
import { formatAmount, toBigInt } from '../../lib/money.ts';
import type { PaymentProvider, ProviderRefundState } from '../../provider/types.ts';
import type { PaymentRow } from '../payments/table.ts';
import { placeHold } from '../wallet/holds.ts';
import { lockWallet } from '../wallet/ledger.ts';
import { assertPaymentRefundable, REFUND_IN_PROGRESS, RefundError, refundAmounts } from './eligibility.ts';
import { changePaymentStatus } from './events.ts';
import * as store from './store.ts';
import type { RefundRow } from './table.ts';
import { recordProviderAnswer } from './transitions.ts';

export interface RefundDeps {
  db: Kysely<Database>;
  clock: Clock;
  provider: PaymentProvider;
}

export interface RefundRequest {
  /** The payment: public TX id or numeric id. */
  transactionId: string;
  /** Already parsed minor units; null refunds the whole remainder. */
  amount: bigint | null;
  reason: string;
  source: 'api' | 'dashboard';
}

/** Work the caller adds to the refund's own transaction. */
export interface RecordHooks {
  /** Once every rule passed, before the refund is written (e.g. consume a verification code). */
  beforeRecord?: (trx: Executor) => Promise<void>;
  /** Once the refund, its hold and the payment's status are written (e.g. the idempotent answer). */
  afterRecord?: (trx: Executor, refund: RefundRow) => Promise<void>;
}

export function paymentFacts(payment: PaymentRow, refundedHt: bigint) {
  return {
    status: payment.status,
    providerRefundState: payment.provider_refund_state,
    currency: payment.currency,
    gross: toBigInt(payment.gross),
    grossHt: toBigInt(payment.gross_ht),
    netUsd: toBigInt(payment.net_usd),
    refundedAmount: toBigInt(payment.refunded_amount),
    refundedHt,
  };
}

/** Step 1: every rule checked and the refund recorded with its hold, atomically. */
async function recordRefundRequest(
  trx: Executor,
  scope: store.Scope,
  request: RefundRequest,
  now: string,
  hooks: RecordHooks,
) {
  const payment = await store.lockPayment(trx, scope, request.transactionId);
  if (!payment) throw new NotFoundError('Payment not found.');
  const facts = paymentFacts(payment, await store.completedRefundHt(trx, payment.id));
  assertPaymentRefundable(facts, await store.hasRefundInFlight(trx, payment.id));
  const wallet = await lockWallet(trx, payment.organization_id, payment.environment, now);
  const amounts = refundAmounts(facts, wallet, request.amount);
  await hooks.beforeRecord?.(trx);
  let refund: RefundRow;
  try {
    refund = await trx
      .insertInto('refunds')
      .values({
        public_id: newPublicId('refund'),
        organization_id: payment.organization_id,
        environment: payment.environment,
        payment_id: payment.id,
        amount: Number(amounts.amount),
        currency: payment.currency,
        amount_usd: Number(amounts.amountUsd),
        amount_in_cents: Number(amounts.amountInCents),
        reason: request.reason,
        status: 'pending',
        source: request.source,
        provider_refund_id: null,
        error_message: null,
        created_at: now,
        updated_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  } catch (error) {
    if (store.isInFlightConflict(error)) throw new RefundError(REFUND_IN_PROGRESS);
    throw error;
  }
  await placeHold(
    trx,
    wallet,
    { kind: 'refund', id: refund.id, publicId: refund.public_id, amount: amounts.amountUsd },
    now,
  );
  const updated = await changePaymentStatus(trx, payment, 'refund_pending', now);
  await hooks.afterRecord?.(trx, refund);
  return { refund, payment: updated };
}

/** The creation response of the interface (integers for ids, public id without RF). */
export function presentCreatedRefund(refund: RefundRow) {
  return {
    status: refund.status,
    refund_id: refund.id,
    refund_public_id: refund.public_id.slice(2),
    transaction_id: refund.payment_id,
    amount: formatAmount(toBigInt(refund.amount)),
    currency: refund.currency,
    amount_usd: formatAmount(toBigInt(refund.amount_usd)),
    amount_in_cents: Number(refund.amount_in_cents),
  };
}

/** Asks the provider for a pending refund. A transport error leaves it pending for the sync loop. */
export async function submitToProvider(
  deps: RefundDeps,
  refund: RefundRow,
  payment: Pick<PaymentRow, 'provider_payment_id'>,
): Promise<ProviderRefundState | null> {
  if (!payment.provider_payment_id) {
    return { providerRefundId: '', status: 'failed', errorMessage: 'The payment has no provider reference.' };
  }
  try {
    return await deps.provider.createRefund({
      reference: refund.public_id,
      environment: refund.environment,
      providerPaymentId: payment.provider_payment_id,
      amountMinor: toBigInt(refund.amount_in_cents),
      currency: refund.currency,
      reason: refund.reason,
    });
  } catch {
    return null;
  }
}

export async function createRefund(
  deps: RefundDeps,
  scope: store.Scope,
  request: RefundRequest,
  hooks: RecordHooks = {},
) {
  const now = deps.clock().toISOString();
  const recorded = await deps.db
    .transaction()
    .execute((trx) => recordRefundRequest(trx, scope, request, now, hooks));
  const answer = await submitToProvider(deps, recorded.refund, recorded.payment);
  if (answer === null) return presentCreatedRefund(recorded.refund);
  const refund = await recordProviderAnswer(deps, recorded.refund.id, answer);
  return presentCreatedRefund(refund);
}
