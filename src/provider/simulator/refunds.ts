// Simulated refunds: processing at once, completed after KASSA_SIM_REFUND_DELAY_MS (when read). On the
// sandbox, a reason containing `simulate:refund_declined` fails at once and one containing
// `simulate:refund_failed` fails when read after the delay. Deduplicated on the caller's reference (the
// refund's public id, one to one with its idempotency key). Amounts are on the HT basis (amount_in_cents).
import type { Selectable } from 'kysely';
import { randomBase62 } from '../../lib/ids.ts';
import type { CreateRefundInput, ProviderRefundState } from '../types.ts';
import { lockSimPayment, type SimContext } from './store.ts';
import type { SimRefundsTable } from './table.ts';

function refundState(row: Selectable<SimRefundsTable>): ProviderRefundState {
  return { providerRefundId: row.provider_refund_id, status: row.status, errorMessage: row.error_message };
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
    if (row.status !== 'processing' || row.completes_at === null) return refundState(row);
    if (now.getTime() < Date.parse(row.completes_at)) return refundState(row);
    const fails = row.environment === 'sandbox' && row.reason.includes('simulate:refund_failed');
    if (!fails) {
      await lockSimPayment(ctx, trx, 'provider_payment_id', row.provider_payment_id);
      await trx
        .updateTable('sim_payments')
        .set((eb) => ({
          refunded_amount: eb('refunded_amount', '+', row.amount),
          updated_at: now.toISOString(),
        }))
        .where('provider_payment_id', '=', row.provider_payment_id)
        .execute();
    }
    const updated = await trx
      .updateTable('sim_refunds')
      .set({
        status: fails ? 'failed' : 'completed',
        error_message: fails ? 'The refund failed at the bank.' : null,
        updated_at: now.toISOString(),
      })
      .where('id', '=', row.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    return refundState(updated);
  });
}
