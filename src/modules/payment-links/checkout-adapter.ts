// The one place the link module talks to checkout: a link's snapshot and the customer's details become
// the request for checkout's own createCheckoutSession (limits, totals, token, expiry).
import { parseBillingAndUrls } from '../checkout/input.ts';
import type { NewCheckoutSession } from '../checkout/service.ts';
import { checkoutItems, linkLines, priceModeOf } from './present.ts';
import type { StartLinkInput } from './schemas.ts';
import type { PaymentLinkRow } from './table.ts';

/** Validates and cleans the customer's fields (a 400 naming the field) before any use is consumed. */
export function checkoutRequestFromLink(link: PaymentLinkRow, input: StartLinkInput): NewCheckoutSession {
  const { billing, urls } = parseBillingAndUrls(input);
  return {
    organizationId: link.organization_id,
    environment: link.environment,
    currency: link.currency,
    // The snapshot's names and prices, not the catalog's current ones.
    items: checkoutItems(linkLines(link)),
    priceMode: priceModeOf(link.pricing_mode),
    billing,
    urls,
    simulate: null,
    paymentLinkId: link.uuid,
  };
}
