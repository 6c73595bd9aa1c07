// Simulated refunds: processing at once, completed after KASSA_SIM_REFUND_DELAY_MS (when read). On the
// sandbox, a reason containing `simulate:refund_declined` fails at once and one containing
// `simulate:refund_failed` fails when read after the delay. Two scripts change a refund a second time, one
// delay after the first, as a processor that contradicts its own answer: `simulate:refund_late_success`
// fails, then completes (if the payment still has that much to refund), and `simulate:refund_reversed`
// completes, then fails (the money comes back, as a Stripe refund that fails after it succeeded).
// Deduplicated on the caller's reference (the refund's public id, one to one with its idempotency key).
// Amounts are on the HT basis (amount_in_cents).
import type { Selectable } from 'kysely';
import { randomBase62 } from '../../lib/ids.ts';
import type { CreateRefundInput, ProviderRefundState } from '../types.ts';
import { lockSimPayment, type SimContext } from './store.ts';
import type { SimRefundsTable } from './table.ts';

type SimRefund = Selectable<SimRefundsTable>;

function refundState(row: SimRefund): ProviderRefundState {
  return {
    providerRefundId: row.provider_refund_id,
    status: row.status,
    errorMessage: row.error_message,
    reference: row.reference,
  };
}

/** The sandbox script a refund's reason names, if any. */
function scriptOf(row: Pick<SimRefund, 'environment' | 'reason'>) {
  if (row.environment !== 'sandbox') return null;
  for (const script of ['refund_failed', 'refund_late_success', 'refund_reversed'] as const) {
    if (row.reason.includes(`simulate:${script}`)) return script;
  }
  return null;
}

/**
 * What a refund becomes at its next change: processing ends completed or failed (a second change follows
 * for the two contradicting scripts); a finished refund changes only by those scripts, once.
 */
function nextChange(
  row: SimRefund,
): { status: 'completed' | 'failed'; again: boolean; error: string | null } | null {
  const script = scriptOf(row);
  if (row.status === 'processing') {
    if (script === 'refund_failed' || script === 'refund_late_success')
      return {
        status: 'failed',
        again: script === 'refund_late_success',
        error: 'The refund failed at the bank.',
      };
    return { status: 'completed', again: script === 'refund_reversed', error: null };
  }
  if (row.status === 'failed' && script === 'refund_late_success')
    return { status: 'completed', again: false, error: null };
  if (row.status === 'completed' && script === 'refund_reversed')
    return {
      status: 'failed',
      again: false,
      error: "The refund was reversed: the customer's bank returned it.",
    };
  return null;
}

export async function createSimRefund(
  ctx: SimContext,
  input: CreateRefundInput,
): Promise<ProviderRefundState> {
  const now = ctx.clock();
  const nowIso = now.toISOString();
  return ctx.db.transaction().execute(async (trx) => {
    const payment = await lockSimPayment(ctx, trx, 'provider_payment_id', input.providerPaymentId);
    const existing = await trx
      .selectFrom('sim_refunds')
      .selectAll()
      .where('reference', '=', input.reference)
      .executeTakeFirst();
    if (existing) return refundState(existing);
    let error: string | null = null;
    if (!payment || payment.outcome !== 'PAYMENT_SUCCESS') error = 'The payment cannot be refunded.';
    else {
      const open = await trx
        .selectFrom('sim_refunds')
        .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('amount'), eb.lit(0)).as('total'))
        .where('provider_payment_id', '=', input.providerPaymentId)
        .where('status', '=', 'processing')
        .executeTakeFirstOrThrow();
      const refundable = Number(payment.refund_basis) - Number(payment.refunded_amount) - Number(open.total);
      if (input.basisAmountMinor <= 0n || Number(input.basisAmountMinor) > refundable) {
        error = 'The refund amount exceeds the refundable amount.';
      } else if (input.environment === 'sandbox' && input.reason.includes('simulate:refund_declined')) {
        error = 'The refund was declined.';
      }
    }
    const row = await trx
      .insertInto('sim_refunds')
      .values({
        provider_refund_id: `simref_${randomBase62(24)}`,
        reference: input.reference,
        provider_payment_id: input.providerPaymentId,
        environment: input.environment,
        amount: Number(input.basisAmountMinor),
        currency: input.currency,
        reason: input.reason,
        status: error === null ? 'processing' : 'failed',
        error_message: error,
        completes_at: error === null ? new Date(now.getTime() + ctx.refundDelayMs).toISOString() : null,
        created_at: nowIso,
        updated_at: nowIso,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return refundState(row);
  });
}

export async function findSimRefund(ctx: SimContext, reference: string): Promise<ProviderRefundState | null> {
  const row = await ctx.db
    .selectFrom('sim_refunds')
    .select('provider_refund_id')
    .where('reference', '=', reference)
    .executeTakeFirst();
  return row ? readSimRefund(ctx, row.provider_refund_id) : null;
}

export async function readSimRefund(
  ctx: SimContext,
  providerRefundId: string,
): Promise<ProviderRefundState | null> {
  const now = ctx.clock();
  return ctx.db.transaction().execute(async (trx) => {
    const query = trx
      .selectFrom('sim_refunds')
      .selectAll()
      .where('provider_refund_id', '=', providerRefundId);
    const row = await (ctx.postgres ? query.forUpdate() : query).executeTakeFirst();
    if (!row) return null;
    if (row.completes_at === null || now.getTime() < Date.parse(row.completes_at)) return refundState(row);
    const change = nextChange(row);
    if (change === null) return refundState(row);
    const payment = await lockSimPayment(ctx, trx, 'provider_payment_id', row.provider_payment_id);
    // A late success completes only what the payment still has to refund, as a processor would.
    const room = payment ? Number(payment.refund_basis) - Number(payment.refunded_amount) : 0;
    const amount = Number(row.amount);
    if (row.status === 'failed' && room < amount) {
      const kept = await trx
        .updateTable('sim_refunds')
        .set({ completes_at: null, updated_at: now.toISOString() })
        .where('id', '=', row.id)
        .returningAll()
        .executeTakeFirstOrThrow();
      return refundState(kept);
    }
    const refunded = change.status === 'completed' ? amount : row.status === 'completed' ? -amount : 0;
    if (refunded !== 0) {
      await trx
        .updateTable('sim_payments')
        .set((eb) => ({
          refunded_amount: eb('refunded_amount', '+', refunded),
          updated_at: now.toISOString(),
        }))
        .where('provider_payment_id', '=', row.provider_payment_id)
        .execute();
    }
    const updated = await trx
      .updateTable('sim_refunds')
      .set({
        status: change.status,
        error_message: change.error,
        completes_at: change.again
          ? new Date(Date.parse(row.completes_at) + ctx.refundDelayMs).toISOString()
          : null,
        updated_at: now.toISOString(),
      })
      .where('id', '=', row.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    return refundState(updated);
  });
}
