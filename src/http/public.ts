// Limits shared by the unauthenticated JSON endpoints (hosted checkout step, payment-link start,
// sync-status by token, the simulator's provider webhook): their largest legitimate body is a few KiB, so
// anything far bigger is refused (413) before it is parsed.
export const PUBLIC_BODY_LIMIT = 64 * 1024;

/**
 * Stripe's webhook (POST /api/provider/webhooks/stripe/) is the one public JSON endpoint whose body Kassa
 * does not write: Stripe sends each event with its whole object embedded, and documents no maximum size.
 * A typical event of the types Kassa subscribes to is a few KiB, but every such object carries metadata
 * of up to 50 keys of 40 characters with values of 500 (anyone with access to the Stripe Dashboard can
 * fill it): 27,000 characters, up to 6 bytes each once escaped in JSON (\u00XX), so up to about 160 KB
 * per metadata set; an event embeds two at most (a PaymentIntent and its last error's payment method; a
 * refund and its previous_attributes). So 64 KiB would refuse real events, and 512 KiB takes two full
 * sets with room for the rest of the object. It is fixed, not KASSA_BODY_LIMIT, so the unauthenticated
 * route stays bounded whatever the service-wide limit. An event over it is a 413: Stripe retries it, and
 * nothing waits for it, since the sync loop re-reads every payment whose state may still move.
 */
export const STRIPE_WEBHOOK_BODY_LIMIT = 512 * 1024;
