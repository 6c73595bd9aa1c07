// The public side of a link, authorised by its UUID alone: the preview the /pay/{id} page shows, and
// the start that turns the snapshot into a hosted checkout session, reserving one use atomically.
import type { AppContext } from '../../context.ts';
import type { Executor } from '../../db/database.ts';
import { NotFoundError, ValidationError } from '../../http/errors.ts';
import { isUuid } from '../../lib/ids.ts';
import { toBigInt } from '../../lib/money.ts';
import { createCheckoutSession } from '../checkout/service.ts';
import { redirectOriginsOf } from '../organizations/redirect-origins.ts';
import { getOrganization } from '../organizations/service.ts';
import { checkoutRequestFromLink } from './checkout-adapter.ts';
import { assertAvailable, linkLines, linkTotals, presentPreview } from './present.ts';
import type { StartLinkInput } from './schemas.ts';
import * as store from './store.ts';
import type { PaymentLinkRow } from './table.ts';

/** The uses a link holds now (paid payments and open reservations). */
async function usesOf(db: Executor, row: PaymentLinkRow, now: Date): Promise<number> {
  const uses = await store.usesByLink(db, row.organization_id, [row.uuid], now.toISOString());
  return uses.get(row.uuid)?.uses ?? 0;
}

async function availableLink(ctx: AppContext, token: string) {
  const row = isUuid(token) ? await store.findLinkByUuid(ctx.db, token.toLowerCase()) : undefined;
  if (!row) throw new NotFoundError('Payment link not found.');
  const now = ctx.clock();
  assertAvailable(row, await usesOf(ctx.db, row, now), now);
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
 * Starts a hosted checkout from the link's snapshot. The link row is locked, its uses counted and the
 * session created in one transaction: under any concurrency max_uses is never exceeded, and a start that
 * fails (a checkout validation error) reserves nothing. The reservation ends by itself when the checkout
 * is canceled, expires (KASSA_LINK_CHECKOUT_TTL_S) or fails without a payment (store.usesByLink).
 */
export async function startLink(ctx: AppContext, token: string, input: StartLinkInput) {
  const link = await availableLink(ctx, token);
  if (input.currency !== undefined && input.currency !== link.currency) {
    throw new ValidationError(
      `currency: this payment link charges in ${link.currency}, not ${input.currency}.`,
    );
  }
  const organization = await getOrganization(ctx.db, link.organization_id);
  const request = checkoutRequestFromLink(
    link,
    input,
    redirectOriginsOf(organization),
    ctx.config.linkCheckoutTtlS,
  );
  return ctx.db.transaction().execute(async (trx) => {
    const now = ctx.clock();
    // The merchant may have changed the link, or another start taken the last use, since it was read.
    const current = await store.lockLink(trx, link.id);
    assertAvailable(current, await usesOf(trx, current, now), now);
    return createCheckoutSession(trx, ctx, request);
  });
}
