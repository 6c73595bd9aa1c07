// A completed refund row written straight to the database, for tests that read refunds (search,
// exports) and need not run the refund flow itself.
import type { AppContext } from '../../src/context.ts';

export async function insertCompletedRefund(
  ctx: Pick<AppContext, 'db'>,
  refund: { organizationId: number; paymentPublicId: string; publicId: string; reason: string },
): Promise<void> {
  const payment = await ctx.db
    .selectFrom('payments')
    .select(['id', 'environment', 'currency'])
    .where('public_id', '=', refund.paymentPublicId)
    .executeTakeFirstOrThrow();
  const now = new Date().toISOString();
  await ctx.db
    .insertInto('refunds')
    .values({
      public_id: refund.publicId,
      organization_id: refund.organizationId,
      environment: payment.environment,
      payment_id: payment.id,
      amount: 500,
      currency: payment.currency,
      amount_usd: 485,
      amount_in_cents: 500,
      reason: refund.reason,
      status: 'completed',
      source: 'dashboard',
      provider_refund_id: null,
      error_message: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
}
