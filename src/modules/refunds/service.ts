// Refund creation, medusa-style: (1) check and record in one transaction (refund pending, wallet hold,
// payment refund_pending, events, and the write-ahead operation row kassa-refund-{id}); (2) ask the
// provider outside any transaction; (3) record its answer. A lost answer is the reconciler's to find.

import type { Kysely } from 'kysely';
import type { Config } from '../../config.ts';
import type { Clock } from '../../context.ts';
import type { Database, Executor } from '../../db/database.ts';
import { NotFoundError } from '../../http/errors.ts';
import { newPublicId } from '../../lib/ids.ts';
import { formatAmount, toBigInt } from '../../lib/money.ts';
import type { Providers } from '../../provider/index.ts';
import { callProvider } from '../../provider/operations/perform.ts';
import { recordOperation, settleOperation } from '../../provider/operations/store.ts';
import type { OperationRow } from '../../provider/operations/table.ts';
import type { KnownOutcome, ProviderRefundState } from '../../provider/types.ts';
import { type Actor, OPERATOR, recordAudit } from '../audit/record.ts';
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
  providers: Providers;
  config: Pick<Config, 'providerTimeoutMs' | 'testCrashAt' | 'reconcileScheduleMs'>;
}

export interface RefundRequest {
  /** The payment: public TX id or numeric id. */
  transactionId: string;
  /** Already parsed minor units; null refunds the whole remainder. */
  amount: bigint | null;
  reason: string;
  source: 'api' | 'dashboard';
  /** Who asked (audited with the refund); the operator when absent (tools and tests). */
  actor?: Actor;
}

/** Work the caller adds to the refund's own transaction. */
export interface RecordHooks {
  /** Once every rule passed, before the refund is written (e.g. consume a verification code). */
  beforeRecord?: (trx: Executor) => Promise<void>;
  /** Once the refund, its hold and the payment's status are written (e.g. the idempotent answer). */
  afterRecord?: (trx: Executor, refund: RefundRow, payment: PaymentRow) => Promise<void>;
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
  deps: RefundDeps,
  trx: Executor,
  scope: store.Scope,
  request: RefundRequest,
  now: string,
  hooks: RecordHooks,
) {
  const payment = await store.lockPayment(trx, scope, request.transactionId);
  if (!payment) throw new NotFoundError('Payment not found.');
  const facts = paymentFacts(payment, await store.completedRefundHt(trx, payment.id));
  const blockers = await store.refundBlockers(trx, payment.id);
  assertPaymentRefundable(facts, blockers.inFlight, blockers.conflict);
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
  await recordAudit(
    trx,
    payment.organization_id,
    request.actor ?? OPERATOR,
    {
      action: 'refund.created',
      target: { type: 'refund', id: refund.public_id },
      details: {
        payment_id: payment.public_id,
        amount: formatAmount(toBigInt(refund.amount)),
        currency: refund.currency,
        source: request.source,
      },
    },
    now,
  );
  const operation = await recordRefundOperation(deps, trx, refund, payment, now);
  await hooks.afterRecord?.(trx, refund, updated);
  return { refund, payment: updated, operation };
}

/** The refund's write-ahead row: committed before the provider hears of the refund. */
export function recordRefundOperation(
  deps: Pick<RefundDeps, 'config'>,
  trx: Executor,
  refund: RefundRow,
  payment: Pick<PaymentRow, 'provider' | 'provider_payment_id'>,
  now: string,
): Promise<OperationRow> {
  return recordOperation(
    trx,
    {
      kind: 'refund',
      idempotencyKey: `kassa-refund-${refund.public_id}`,
      provider: payment.provider,
      environment: refund.environment,
      organizationId: refund.organization_id,
      subjectType: 'refund',
      subjectId: refund.id,
      reference: refund.public_id,
      context: { provider_payment_id: payment.provider_payment_id },
    },
    now,
    deps.config.reconcileScheduleMs,
  );
}

/** The contract outcome a refund state stands for. */
export function refundOutcome(state: ProviderRefundState): KnownOutcome {
  if (state.status === 'completed') return { status: 'succeeded' };
  if (state.status === 'processing') return { status: 'pending' };
  return {
    status: 'failed',
    code: 'refund_failed',
    message: state.errorMessage ?? 'The provider refused the refund.',
    retryable: false,
  };
}

/**
 * The creation response of the interface (integers for ids, public id without RF), plus the public
 * ids `id` (RF…) and `transaction` (TX…) that GET /refunds/ and the webhooks use.
 */
export function presentCreatedRefund(refund: RefundRow, paymentPublicId: string) {
  return {
    id: refund.public_id,
    transaction: paymentPublicId,
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

/**
 * Asks the provider for a pending refund under its operation row; null when no answer came back (the
 * reconciler reads it later, never sending it again).
 */
export async function submitToProvider(
  deps: RefundDeps,
  refund: RefundRow,
  payment: Pick<PaymentRow, 'provider' | 'provider_payment_id'>,
  operation: OperationRow,
): Promise<ProviderRefundState | null> {
  if (!payment.provider_payment_id) {
    return { providerRefundId: '', status: 'failed', errorMessage: 'The payment has no provider reference.' };
  }
  const providerPaymentId = payment.provider_payment_id;
  const provider = deps.providers.named(payment.provider);
  const call = await callProvider(deps.config, operation, () =>
    provider.createRefund({
      idempotencyKey: operation.idempotency_key,
      reference: refund.public_id,
      environment: refund.environment,
      providerPaymentId,
      amountMinor: toBigInt(refund.amount),
      basisAmountMinor: toBigInt(refund.amount_in_cents),
      currency: refund.currency,
      reason: refund.reason,
      metadata: { kassa_refund_id: refund.public_id, kassa_reason: refund.reason.slice(0, 500) },
    }),
  );
  if (!call.answered) {
    await settleOperation(
      deps.db,
      operation.id,
      { status: 'unknown', reason: call.reason },
      null,
      deps.clock().toISOString(),
    );
    return null;
  }
  return call.value;
}

/** Records the provider's answer to the refund and settles its operation row. */
export async function recordSubmitted(
  deps: RefundDeps,
  refundId: number,
  operation: OperationRow,
  answer: ProviderRefundState,
): Promise<RefundRow> {
  const refund = await recordProviderAnswer(deps, refundId, answer, 'creation');
  await settleOperation(
    deps.db,
    operation.id,
    refundOutcome(answer),
    answer.providerRefundId || null,
    deps.clock().toISOString(),
  );
  return refund;
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
    .execute((trx) => recordRefundRequest(deps, trx, scope, request, now, hooks));
  const answer = await submitToProvider(deps, recorded.refund, recorded.payment, recorded.operation);
  if (answer === null) return presentCreatedRefund(recorded.refund, recorded.payment.public_id);
  const refund = await recordSubmitted(deps, recorded.refund.id, recorded.operation, answer);
  return presentCreatedRefund(refund, recorded.payment.public_id);
}
