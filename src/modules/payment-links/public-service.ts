// The public side of a link, authorised by its UUID alone: the preview the /pay/{id} page shows, and
// the start that turns the snapshot into a hosted checkout session, consuming one use atomically.
import type { AppContext } from '../../context.ts';
import { GoneError, NotFoundError, ValidationError } from '../../http/errors.ts';
import { isUuid } from '../../lib/ids.ts';
import { toBigInt } from '../../lib/money.ts';
import { createCheckoutSession } from '../checkout/service.ts';
import { getOrganization } from '../organizations/service.ts';
import { checkoutRequestFromLink } from './checkout-adapter.ts';
import { assertAvailable, linkLines, linkTotals, presentPreview } from './present.ts';
import type { StartLinkInput } from './schemas.ts';
import * as store from './store.ts';

async function availableLink(ctx: AppContext, token: string) {
  const row = isUuid(token) ? await store.findLinkByUuid(ctx.db, token.toLowerCase()) : undefined;
  if (!row) throw new NotFoundError('Payment link not found.');
  assertAvailable(row, ctx.clock());
  return row;
}

/** What the payment page shows; every successful preview counts as a view. */
export async function previewLink(ctx: AppContext, token: string) {
  const row = await availableLink(ctx, token);
  const organization = await getOrganization(ctx.db, row.organization_id);
  const taxRateBp = toBigInt(organization.tax_rate_bp);
  await store.countView(ctx.db, row.id);
  return presentPreview(
    row,
    { name: organization.name, website: organization.website },
    linkTotals(linkLines(row), row.pricing_mode, taxRateBp),
    taxRateBp,
  );
}

/**
 * Starts a hosted checkout from the link's snapshot. The use is consumed by a conditional UPDATE in the
 * same transaction as the session's creation: under any concurrency max_uses is never exceeded, and a
 * start that fails (a checkout validation error) gives its use back by rolling back.
 */
export async function startLink(ctx: AppContext, token: string, input: StartLinkInput) {
  const link = await availableLink(ctx, token);
  if (input.currency !== undefined && input.currency !== link.currency) {
    throw new ValidationError(
      `currency: this payment link charges in ${link.currency}, not ${input.currency}.`,
    );
  }
  const request = checkoutRequestFromLink(link, input);
  return ctx.db.transaction().execute(async (trx) => {
    const now = ctx.clock();
    if (!(await store.consumeUse(trx, link.id, now.toISOString()))) {
      // Another start took the last use, or the merchant changed the link since it was read: say which.
      const current = await store.findLinkByUuid(trx, link.uuid);
      if (current) assertAvailable(current, now);
      throw new GoneError('This payment link is no longer available.');
    }
    return createCheckoutSession(trx, ctx, request);
  });
}
