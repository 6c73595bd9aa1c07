// Hosted checkout sessions: validating what a merchant asks to charge and recording the session.
// `createCheckoutSession` is the one way to create a session (the API here, payment links elsewhere).
import type { AppContext } from '../../context.ts';
import type { Executor } from '../../db/database.ts';
import { ForbiddenError, ValidationError } from '../../http/errors.ts';
import { newPublicId, newToken, sha256Hex } from '../../lib/ids.ts';
import { formatAmount, toBigInt } from '../../lib/money.ts';
import type { SimulateValue } from '../../provider/simulator/script.ts';
import { type ApiKeyPrincipal, CachedKeyNotConfirmed } from '../api-keys/service.ts';
import type { Environment } from '../api-keys/table.ts';
import {
  type BillingDetails,
  parseBillingAndUrls,
  parseItems,
  parseSimulate,
  type ReturnUrls,
} from './input.ts';
import { type CheckoutItem, checkoutTotals, type PriceMode } from './pricing.ts';
import type { CheckoutCreatedBody, CreateCheckoutInput } from './schemas.ts';
import type { OrganizationTerms } from './store.ts';
import * as store from './store.ts';

export interface NewCheckoutSession {
  organizationId: number;
  environment: Environment;
  currency: 'USD' | 'EUR';
  /** Unit prices in minor units, in `priceMode`'s basis. */
  items: CheckoutItem[];
  /** null: the organization's price_mode. */
  priceMode: PriceMode | null;
  billing: BillingDetails;
  urls: ReturnUrls;
  simulate: SimulateValue | null;
  paymentLinkId: string | null;
  /** How long the checkout stays open; default KASSA_CHECKOUT_TTL_S (link checkouts: KASSA_LINK_CHECKOUT_TTL_S). */
  ttlS?: number;
  /** The merchant's metadata and reference (API creation only). */
  metadata?: Record<string, string> | null;
  clientReferenceId?: string | null;
  /** The subscription its payment is for (a signup or a renewal). */
  subscriptionPublicId?: string | null;
  /** A signup checkout's plan (subscription_plans.id). */
  subscriptionPlanId?: number | null;
  /** card_update: a subscription's update-card page. */
  purpose?: 'card_update' | null;
  /** The provider customer a signup or card update saves the card on, when already known. */
  providerCustomerId?: string | null;
  /** The organization's terms when already read (with the API key); else read here. */
  terms?: OrganizationTerms | null;
  /**
   * The API key's id when it and `terms` came from this process's cache: the insert then writes the row
   * only if they still hold, and throws CachedKeyNotConfirmed when they do not (nothing is written).
   */
  cachedKeyId?: number | null;
}

/** The session's `items` column: what was sold, at what unit price, in its own JSON. */
export function storedItems(items: CheckoutItem[]): string {
  return JSON.stringify(
    items.map((item) => ({
      product_id: item.productId,
      name: item.name,
      unit_price: Number(item.unitPrice),
      quantity: item.quantity,
    })),
  );
}

/** Records a session and returns the interface's creation response. Validates the total's limits. */
export async function createCheckoutSession(
  trx: Executor,
  ctx: AppContext,
  input: NewCheckoutSession,
): Promise<CheckoutCreatedBody> {
  const organization = input.terms ?? (await store.organizationTerms(trx, input.organizationId));
  if (organization.status !== 'active') throw new ForbiddenError('This organization is not active.');
  const priceMode = input.priceMode ?? organization.price_mode;
  const taxRateBp = toBigInt(organization.tax_rate_bp);
  const totals = checkoutTotals(input.items, priceMode, taxRateBp);
  const min = toBigInt(organization.min_payment);
  const max = toBigInt(organization.max_payment);
  const total = `${formatAmount(totals.gross)} ${input.currency}`;
  if (totals.gross < min) {
    throw new ValidationError(
      `products: the total ${total} is below the minimum payment of ${formatAmount(min)}.`,
    );
  }
  if (totals.gross > max) {
    throw new ValidationError(
      `products: the total ${total} is above the maximum payment of ${formatAmount(max)}.`,
    );
  }
  const token = newToken();
  const now = ctx.clock();
  const expiresAt = new Date(now.getTime() + (input.ttlS ?? ctx.config.checkoutTtlS) * 1000);
  const publicId = newPublicId('checkout');
  const row = {
    public_id: publicId,
    token_hash: sha256Hex(token),
    organization_id: input.organizationId,
    environment: input.environment,
    payment_link_id: input.paymentLinkId,
    currency: input.currency,
    price_mode: priceMode,
    tax_rate_bp: Number(taxRateBp),
    items: storedItems(input.items),
    subtotal_ht: Number(totals.subtotalHt),
    tax_amount: Number(totals.tax),
    gross: Number(totals.gross),
    billing_country: input.billing.country,
    billing_postal_code: input.billing.postalCode,
    billing_first_name: input.billing.firstName,
    billing_last_name: input.billing.lastName,
    billing_email: input.billing.email,
    billing_phone: input.billing.phone,
    success_url: input.urls.success,
    failed_url: input.urls.failed,
    cancel_url: input.urls.cancel,
    simulate: input.environment === 'sandbox' ? input.simulate : null,
    canceled_at: null,
    attempt_locked_until: null,
    expires_at: expiresAt.toISOString(),
    created_at: now.toISOString(),
    updated_at: now.toISOString(),
    metadata: input.metadata && Object.keys(input.metadata).length ? JSON.stringify(input.metadata) : null,
    client_reference_id: input.clientReferenceId ?? null,
    subscription_public_id: input.subscriptionPublicId ?? null,
    subscription_plan_id: input.subscriptionPlanId ?? null,
    provider_customer_id: input.providerCustomerId ?? null,
    signup_setup_id: null,
    completed_at: null,
    purpose: input.purpose ?? null,
  };
  if (input.cachedKeyId != null && input.terms) {
    const id = await store.insertSessionIfKeyHolds(trx, row, input.cachedKeyId, input.terms);
    if (id === null) throw new CachedKeyNotConfirmed();
  } else await store.insertSession(trx, row);
  return {
    checkout_id: publicId,
    order_id: publicId,
    checkout_url: `${ctx.config.publicUrl}/checkout/${token}`,
    token,
    expires_at: Math.floor(expiresAt.getTime() / 1000),
  };
}

/**
 * POST /checkout/create/ with an API key of `environment` (its principal carries the organization's
 * terms). `afterCreate` runs in the session's own transaction (the route records the Idempotency-Key's
 * answer there); without it the session's insert is the one write, and it commits on its own.
 */
export async function createCheckout(
  ctx: AppContext,
  key: Pick<ApiKeyPrincipal, 'keyId' | 'organizationId' | 'terms' | 'unverified'>,
  environment: Environment,
  body: CreateCheckoutInput,
  afterCreate: ((trx: Executor, created: CheckoutCreatedBody) => Promise<void>) | null = null,
): Promise<CheckoutCreatedBody> {
  const simulate = parseSimulate(environment, body.sandbox_simulate);
  const { billing, urls } = parseBillingAndUrls(body);
  const currency = body.currency === 'EUR' ? 'EUR' : 'USD';
  const create = async (db: Executor) => {
    const items = await parseItems(db, key.organizationId, currency, body.products);
    const created = await createCheckoutSession(db, ctx, {
      organizationId: key.organizationId,
      environment,
      currency,
      items,
      priceMode: null,
      billing,
      urls,
      simulate,
      paymentLinkId: null,
      metadata: body.metadata,
      clientReferenceId: body.client_reference_id?.trim() || null,
      terms: key.terms,
      cachedKeyId: key.unverified === null ? null : key.keyId,
    });
    await afterCreate?.(db, created);
    return created;
  };
  return afterCreate === null ? create(ctx.db) : ctx.db.transaction().execute(create);
}
