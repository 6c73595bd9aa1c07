// What the customer of a subscription receives (decisions.md "Subscriptions"): a receipt for each paid
// renewal, a notice of a failed one, and word of the cancellation. Sent after the transaction that
// decided them has committed, best effort: a mail that fails is logged, and changes nothing.
import type { AppContext } from '../../context.ts';
import { formatAmount, toBigInt } from '../../lib/money.ts';
import type { CustomerMail } from './dunning.ts';
import { createUpdateCardLink } from './signup.ts';

function intervalText(interval: string, count: number): string {
  return count === 1 ? interval : `${count} ${interval}s`;
}

export async function sendCustomerMail(ctx: AppContext, subscriptionId: number, mail: CustomerMail) {
  try {
    const row = await ctx.db
      .selectFrom('subscriptions')
      .innerJoin('subscription_plans', 'subscription_plans.id', 'subscriptions.plan_id')
      .innerJoin('organizations', 'organizations.id', 'subscriptions.organization_id')
      .select([
        'subscriptions.public_id',
        'subscriptions.customer_email',
        'subscriptions.customer_name',
        'subscriptions.card_brand',
        'subscriptions.card_last4',
        'subscriptions.cancel_reason',
        'subscription_plans.name as plan_name',
        'subscription_plans.amount',
        'subscription_plans.currency',
        'subscription_plans.interval',
        'subscription_plans.interval_count',
        'organizations.name as merchant',
      ])
      .where('subscriptions.id', '=', subscriptionId)
      .executeTakeFirst();
    if (!row) return;
    const price = `${formatAmount(toBigInt(row.amount))} ${row.currency} every ${intervalText(row.interval, Number(row.interval_count))}`;
    const card = `${row.card_brand} ending in ${row.card_last4}`;
    // A failed payment carries the customer's update-card page.
    const link = mail === 'payment_failed' ? await createUpdateCardLink(ctx, subscriptionId) : null;
    const hello = `Hello${row.customer_name ? ` ${row.customer_name}` : ''},\n\n`;
    const footer = `\nSubscription ${row.public_id} with ${row.merchant}.\n`;
    const messages: Record<CustomerMail, { subject: string; text: string }> = {
      receipt: {
        subject: `Receipt: your ${row.plan_name} subscription with ${row.merchant} was renewed`,
        text: `${hello}your ${row.plan_name} subscription (${price}) was renewed and your ${card} was charged.\n${footer}`,
      },
      payment_failed: {
        subject: `Your payment to ${row.merchant} failed`,
        text:
          `${hello}we could not charge your ${card} for your ${row.plan_name} subscription (${price}).\n\n` +
          `To keep your subscription, give a new card here (the link works once, for 7 days):\n${link?.url ?? ''}\n\n` +
          `Otherwise we will try your card again over the next two weeks.\n${footer}`,
      },
      canceled: {
        subject: `Your ${row.plan_name} subscription with ${row.merchant} has ended`,
        text:
          row.cancel_reason === 'payment_failed'
            ? `${hello}your ${row.plan_name} subscription has been canceled because its payment could not be collected.\n${footer}`
            : `${hello}your ${row.plan_name} subscription has been canceled; you will not be charged again.\n${footer}`,
      },
    };
    await ctx.mailer.send({ to: row.customer_email, ...messages[mail] });
  } catch (error) {
    if (ctx.config.logLevel !== 'silent') console.error(`kassa: subscription mail "${mail}" failed:`, error);
  }
}
