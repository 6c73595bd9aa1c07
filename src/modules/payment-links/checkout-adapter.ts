// The one place the link module talks to checkout: a link's snapshot and the customer's details become
// the request for checkout's own createCheckoutSession (limits, totals, token, expiry).
import { parseBillingAndUrls, type ReturnUrls } from '../checkout/input.ts';
import type { NewCheckoutSession } from '../checkout/service.ts';
import { assertAllowedRedirect } from '../organizations/redirect-origins.ts';
import { checkoutItems, linkLines, priceModeOf } from './present.ts';
import type { StartLinkInput } from './schemas.ts';
import type { PaymentLinkRow } from './table.ts';

/**
 * The return URLs of a link's checkout: each URL the start sends must be on one of the organization's
 * redirect_origins (the start is anonymous); one it does not send is the link's own, set by the merchant.
 */
function linkReturnUrls(link: PaymentLinkRow, sent: ReturnUrls, origins: readonly string[]): ReturnUrls {
  const pick = (field: string, url: string | null, own: string | null) => {
    if (url === null) return own;
    assertAllowedRedirect(field, url, origins);
    return url;
  };
  return {
    success: pick('successUrl', sent.success, link.success_url),
    failed: pick('failedUrl', sent.failed, link.failed_url),
    cancel: pick('cancelUrl', sent.cancel, link.cancel_url),
  };
}

/** Validates and cleans the customer's fields (a 400 naming the field) before any use is reserved. */
export function checkoutRequestFromLink(
  link: PaymentLinkRow,
  input: StartLinkInput,
  redirectOrigins: readonly string[],
  ttlS: number,
): NewCheckoutSession {
  const { billing, urls } = parseBillingAndUrls(input);
  return {
    organizationId: link.organization_id,
    environment: link.environment,
    currency: link.currency,
    // The snapshot's names and prices, not the catalog's current ones.
    items: checkoutItems(linkLines(link)),
    priceMode: priceModeOf(link.pricing_mode),
    billing,
    urls: linkReturnUrls(link, urls, redirectOrigins),
    simulate: null,
    paymentLinkId: link.uuid,
    ttlS,
  };
}
