// Request and response schemas of the payment-link endpoints: validation, types and the OpenAPI document
// from one source.
import { type Static, Type } from 'typebox';
import { Money, Nullable, Shape, Timestamp } from '../../http/schemas.ts';
import { BillingFields } from '../checkout/schemas.ts';

// No length limit on ids: anything that is not a link's UUID is a 404, not a 400.
export const LinkIdParam = Type.Object({ id: Type.String() });
export const LinkTokenParam = Type.Object({ token: Type.String() });

const LinkCurrency = Type.Enum(['USD', 'EUR']);
const PricingMode = Type.Enum(['TAX_EXCLUSIVE', 'TAX_INCLUSIVE']);
const LinkEnvironment = Type.Enum(['production', 'sandbox'], {
  description: 'production (default), or sandbox: a test-mode link whose checkouts are sandbox payments.',
});
const Name = Type.String({ minLength: 1, maxLength: 200 });
const ExpiresAt = Type.Union([Type.String({ format: 'date-time', maxLength: 64 }), Type.Null()]);
const MaxUses = Type.Union([Type.Integer({ minimum: 1, maximum: 1_000_000_000 }), Type.Null()]);
const Metadata = Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]);
/** A return URL the merchant sets on the link (any http(s) URL), used when a start sends none. */
const ReturnUrl = Type.Union([Type.String({ maxLength: 2048 }), Type.Null()]);
const LinkReturnUrls = {
  success_url: Type.Optional(ReturnUrl),
  cancel_url: Type.Optional(ReturnUrl),
  failed_url: Type.Optional(ReturnUrl),
};

const LinkProductInput = Type.Object(
  {
    product_id: Type.String({ minLength: 1, maxLength: 64 }),
    quantity: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000 })),
  },
  { additionalProperties: false },
);

export const CreateLinkBody = Type.Object(
  {
    name: Name,
    products: Type.Array(LinkProductInput, { minItems: 1, maxItems: 100 }),
    currency: Type.Optional(LinkCurrency),
    pricing_mode: Type.Optional(PricingMode),
    expires_at: Type.Optional(ExpiresAt),
    max_uses: Type.Optional(MaxUses),
    is_active: Type.Optional(Type.Boolean()),
    metadata: Type.Optional(Metadata),
    environment: Type.Optional(LinkEnvironment),
    ...LinkReturnUrls,
  },
  { additionalProperties: false },
);
export type CreateLinkInput = Static<typeof CreateLinkBody>;

/** Other fields are accepted by the schema so the service can name them in its 400. */
export const UpdateLinkBody = Type.Object({
  name: Type.Optional(Name),
  is_active: Type.Optional(Type.Boolean()),
  expires_at: Type.Optional(ExpiresAt),
  max_uses: Type.Optional(MaxUses),
  metadata: Type.Optional(Metadata),
  ...LinkReturnUrls,
});
export type UpdateLinkInput = Static<typeof UpdateLinkBody> & Record<string, unknown>;

/** The same customer fields as POST /checkout/create/; the products come from the link. */
export const StartLinkBody = Type.Object(
  { ...BillingFields, currency: Type.Optional(LinkCurrency) },
  { additionalProperties: false },
);
export type StartLinkInput = Static<typeof StartLinkBody>;

const LinkLineOut = {
  product_id: Type.String(),
  name: Type.String(),
  unit_price: Money,
  quantity: Type.Integer({ minimum: 1 }),
};

/** The dashboard record of a link. */
export const PaymentLink = Shape(
  {
    id: Type.String({ format: 'uuid', description: 'Also the token of the public paths.' }),
    name: Type.String(),
    url: Type.String({ format: 'uri', description: 'The payment page: {KASSA_PUBLIC_URL}/pay/{id}.' }),
    products: Type.Array(Shape(LinkLineOut), { description: 'Snapshot taken at creation.' }),
    currency: LinkCurrency,
    pricing_mode: PricingMode,
    expires_at: Nullable(Timestamp),
    max_uses: Nullable(Type.Integer({ minimum: 1 })),
    uses_count: Type.Integer({
      minimum: 0,
      description:
        'Paid payments plus open checkouts of the link (what max_uses limits); a checkout canceled, expired or failed without a payment gives its use back.',
    }),
    is_active: Type.Boolean(),
    metadata: Metadata,
    success_url: Nullable(Type.String()),
    cancel_url: Nullable(Type.String()),
    failed_url: Nullable(Type.String()),
    status: Type.Enum(['active', 'inactive', 'expired', 'exhausted', 'deleted']),
    environment: LinkEnvironment,
    stats: Shape({
      views: Type.Integer({ minimum: 0 }),
      checkouts_started: Type.Integer({ minimum: 0 }),
      payments_paid: Type.Integer({ minimum: 0 }),
      revenue: Money,
    }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  'A payment link with its dashboard stats.',
);

export const PaymentLinkList = Type.Array(PaymentLink, { description: 'Every link, newest first.' });

/** GET /payment-links/public/{token}/: what the payment page shows. */
export const LinkPreview = Shape(
  {
    id: Type.String({ format: 'uuid' }),
    merchant: Shape({ name: Type.String(), website: Nullable(Type.String()) }),
    products: Type.Array(Shape({ ...LinkLineOut, amount: Money })),
    currency: LinkCurrency,
    pricing_mode: PricingMode,
    tax_rate_percent: Money,
    totals: Shape({ subtotal: Money, tax: Money, gross: Money }),
    expires_at: Nullable(Timestamp),
  },
  'The link as its payment page shows it.',
);
