// POST /api/provider/webhooks/stripe/: Stripe's events. The Stripe-Signature is verified over the raw
// body (a bad or stale one is a 400 that changes nothing); each event is handled once, by its id (a
// duplicate is acknowledged and skipped); what it names is re-fetched from Stripe and applied at once,
// so an event arriving late or out of order can only confirm what Kassa already holds.
import type { AppContext } from '../../context.ts';
import { NotFoundError, ValidationError } from '../../http/errors.ts';
import { type ProviderNotice, WebhookRejectedError } from '../../provider/types.ts';
import { syncNotice } from './sync.ts';

export interface StripeWebhookResult {
  received: true;
  duplicate: boolean;
  payments: number;
  refunds: number;
}

export async function handleStripeWebhook(
  ctx: AppContext,
  rawBody: string | undefined,
  headers: Record<string, string | string[] | undefined>,
): Promise<StripeWebhookResult> {
  if (!ctx.providers.has('stripe')) throw new NotFoundError('Unknown provider.');
  let notice: ProviderNotice;
  try {
    notice = await ctx.providers.named('stripe').parseWebhook(rawBody ?? '', headers);
  } catch (error) {
    throw new ValidationError(
      error instanceof WebhookRejectedError ? error.message : 'body: not a Stripe event.',
    );
  }
  const eventId = notice.eventId ?? '';
  const now = ctx.clock().toISOString();
  await ctx.db
    .insertInto('provider_events')
    .values({
      provider: 'stripe',
      event_id: eventId,
      type: notice.eventType ?? '',
      received_at: now,
      processed_at: null,
    })
    .onConflict((conflict) => conflict.columns(['provider', 'event_id']).doNothing())
    .execute();
  const seen = await ctx.db
    .selectFrom('provider_events')
    .select('processed_at')
    .where('provider', '=', 'stripe')
    .where('event_id', '=', eventId)
    .executeTakeFirstOrThrow();
  if (seen.processed_at !== null) return { received: true, duplicate: true, payments: 0, refunds: 0 };
  // Processed at least once: a delivery that failed half-way (or a concurrent one) re-fetches again, harmlessly.
  const result = await syncNotice(ctx, 'stripe', notice);
  await ctx.db
    .updateTable('provider_events')
    .set({ processed_at: ctx.clock().toISOString() })
    .where('provider', '=', 'stripe')
    .where('event_id', '=', eventId)
    .execute();
  return { received: true, duplicate: false, ...result };
}
