// Request and response bodies of checkout creation, the hosted step and sync-status.
import { type Static, Type } from 'typebox';
import {
  Currency,
  DecimalString,
  documented,
  Email,
  Environment,
  Money,
  Named,
  Nullable,
  Shape,
  Url,
} from '../../http/schemas.ts';
import { SIMULATE_VALUES } from '../../provider/simulator/script.ts';
import { HostedAttempt, PaymentStatus } from '../payments/schemas.ts';

const OptionalOrNull = <T extends Parameters<typeof Type.Optional>[0]>(schema: T) =>
  Type.Optional(Nullable(schema));

/** A catalog item {id, quantity} or an ad hoc item {name, unit_price, quantity}. */
export const CheckoutItemBody = Type.Object({
  id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  unit_price: Type.Optional(Type.Union([Type.Number(), Type.String({ maxLength: 20 })])),
  quantity: Type.Optional(Type.Integer({ minimum: 1 })),
});

/** The customer and return addresses, shared by checkout creation and a payment link's start. */
export const BillingFields = {
  billing_country: Type.String({ minLength: 1, maxLength: 2 }),
  billing_postal_code: OptionalOrNull(Type.String({ maxLength: 32 })),
  billing_first_name: Type.String({ minLength: 1, maxLength: 100 }),
  billing_last_name: Type.String({ minLength: 1, maxLength: 100 }),
  billing_email: Email,
  billing_phone: OptionalOrNull(Type.String({ maxLength: 32 })),
  successUrl: OptionalOrNull(Url),
  failedUrl: OptionalOrNull(Url),
  cancelUrl: OptionalOrNull(Url),
};

export const CheckoutCurrency = Type.Enum(['USD', 'EUR']);

/** A flat {key: string} object: at most 20 keys of at most 40 characters, values of at most 500. */
export const CheckoutMetadata = Type.Record(Type.String(), Type.String({ maxLength: 500 }), {
  maxProperties: 20,
  propertyNames: { minLength: 1, maxLength: 40 },
  description:
    'Your own key-value data (at most 20 keys of at most 40 characters, string values of at most 500); ' +
    'returned on the payment and in its webhooks.',
});

export const CreateCheckoutBody = Type.Object({
  ...BillingFields,
  currency: Type.Optional(CheckoutCurrency),
  products: Type.Array(CheckoutItemBody, { minItems: 1, maxItems: 100 }),
  sandbox_simulate: OptionalOrNull(Type.String({ maxLength: 64 })),
  metadata: OptionalOrNull(CheckoutMetadata),
  client_reference_id: OptionalOrNull(
    Type.String({
      minLength: 1,
      maxLength: 200,
      description: 'Your own reference (an order or cart id); returned on the payment and in its webhooks.',
    }),
  ),
});
export type CreateCheckoutInput = Static<typeof CreateCheckoutBody>;
export type CheckoutItemInput = Static<typeof CheckoutItemBody>;

const IntegerLike = Type.Union([Type.Integer(), Type.String({ maxLength: 8 })]);

export const PayBody = Type.Object({
  card_number: Type.String({ minLength: 1, maxLength: 40 }),
  exp_month: IntegerLike,
  exp_year: IntegerLike,
  cvc: Type.Union([Type.String({ maxLength: 8 }), Type.Integer()]),
  cardholder_name: Type.String({ minLength: 1, maxLength: 200 }),
});
export type PayInput = Static<typeof PayBody>;

export const SyncStatusBody = Type.Object({
  token: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  checkout_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
});

export const TokenParam = Type.Object({ token: Type.String() });

/** The checkout session of the interface (201 from /checkout/create/ and a payment link's start). */
export const CheckoutCreated = Named(
  'CheckoutSession',
  Shape(
    {
      checkout_id: Type.String({ description: 'Same value as order_id: match webhooks with it.' }),
      order_id: Type.String(),
      checkout_url: Type.String({ format: 'uri', description: 'Send the customer here.' }),
      token: Type.String(),
      expires_at: Type.Integer({ description: 'Unix time in seconds.' }),
    },
    'A hosted checkout session.',
  ),
);
export type CheckoutCreatedBody = Static<typeof CheckoutCreated>;

const SyncStatusValue = Type.Enum(['SUCCESS', 'FAILED', 'CANCELED', 'CHECKOUT_PENDING']);
const RedirectUrl = Nullable(Type.String({ description: 'Where the hosted page sends the customer now.' }));

/** POST /checkout/sync-status/ and POST /checkout/{token}/cancel/. */
export const SyncStatusResult = Named(
  'CheckoutStatus',
  Shape(
    {
      checkout_id: Type.String(),
      order_id: Type.String(),
      status: SyncStatusValue,
      transaction_id: Nullable(Type.String()),
      payment_status: Nullable(PaymentStatus),
      redirect_url: RedirectUrl,
    },
    "The checkout's outcome.",
  ),
);

/** What the customer must do before the attempt can finish: the simulator's 3-D Secure step, or Stripe.js's. */
const NextActionBody = Nullable(
  Shape({
    type: Type.Enum(['simulator_challenge', 'stripe_sdk']),
    challenge_id: Type.Optional(Type.String({ description: "The simulator's challenge." })),
    url: Type.Optional(
      Type.String({ description: 'Where the challenge is answered: POST {"answer": "approve" | "fail"}.' }),
    ),
  }),
);

/** POST /checkout/{token}/pay/ */
export const PayResult = Shape(
  {
    status: SyncStatusValue,
    // null on a trial signup's checkout: the card is saved, nothing is charged.
    payment_status: Nullable(PaymentStatus),
    transaction_id: Nullable(Type.String()),
    attempt: Nullable(HostedAttempt),
    redirect_url: RedirectUrl,
    outcome: Type.Enum(['succeeded', 'pending', 'requires_action', 'failed', 'unknown'], {
      description:
        "The provider's answer to this attempt; unknown: no answer came back, the status is being confirmed.",
    }),
    next_action: NextActionBody,
  },
  'The payment after this card attempt.',
);

/** GET /checkout/{token}/: what the hosted page shows (the body, HostedCheckout's headers below). */
const HostedCheckoutBody = Shape(
  {
    checkout_id: Type.String(),
    order_id: Type.String(),
    status: Type.Enum(['open', 'pending', 'paid', 'failed', 'canceled', 'expired']),
    sync_status: SyncStatusValue,
    payment_status: Nullable(PaymentStatus),
    transaction_id: Nullable(Type.String()),
    environment: Environment,
    merchant: Shape({ name: Type.String(), website: Nullable(Type.String()) }),
    currency: Currency,
    price_mode: Type.Enum(['HT', 'TTC']),
    tax_rate_percent: Money,
    items: Type.Array(
      Shape({
        id: Type.String(),
        name: Type.String(),
        unit_price: Money,
        quantity: Type.Integer({ minimum: 1 }),
        amount: Money,
      }),
    ),
    subtotal: Money,
    tax: Money,
    total: Money,
    customer: Nullable(
      Shape(
        {
          first_name: Type.String(),
          last_name: Type.String(),
          email: Type.String(),
          country: Type.String(),
        },
        'Null once the checkout is finished (paid, failed, canceled or expired).',
      ),
    ),
    attempts: Type.Array(HostedAttempt),
    urls: Shape({
      success_url: Nullable(Type.String()),
      failed_url: Nullable(Type.String()),
      cancel_url: Nullable(Type.String()),
    }),
    redirect_url: RedirectUrl,
    expires_at: Type.Integer({ description: 'Unix time in seconds.' }),
    provider: Shape(
      {
        name: Type.Enum(['simulator', 'stripe']),
        publishable_key: Type.Optional(Type.String()),
        client_secret: Type.Optional(
          Nullable(
            Type.String({
              description: "The PaymentIntent's client secret the Payment Element mounts with.",
            }),
          ),
        ),
        mode: Type.Optional(
          Type.Enum(['payment', 'setup'], {
            description: "setup: a trial signup's card is only saved (the client secret is a SetupIntent's).",
          }),
        ),
      },
      "Who takes the card: the simulator's form on this page, or Stripe's Payment Element.",
    ),
    next_action: NextActionBody,
    subscription: Nullable(
      Shape(
        {
          plan_id: Type.String(),
          plan_name: Type.String(),
          amount: Money,
          currency: Currency,
          interval: Type.Enum(['day', 'week', 'month', 'year']),
          interval_count: Type.Integer({ minimum: 1, maximum: 12 }),
          trial_days: Type.Integer({ minimum: 0, maximum: 90 }),
          update_card: Type.Boolean({
            description:
              "true: the subscription's update-card page (a new card is saved, nothing is charged).",
          }),
        },
        'A signup checkout (/subscribe/{plan id}): the plan it subscribes to. With trial_days > 0 the card is only saved today.',
      ),
    ),
  },
  'The checkout as the hosted page shows it.',
);

/**
 * The answer of GET /checkout/{token}/: its body, and the Retry-After a Stripe checkout's read carries
 * when Stripe did not answer the open of its PaymentIntent (provider-form.ts): the page reads again then.
 */
export const HostedCheckout = Object.assign(HostedCheckoutBody, {
  headers: {
    'Retry-After': Type.Integer({
      minimum: 1,
      description:
        'Only when provider.name is stripe and provider.client_secret is null because Stripe did not answer ' +
        'the opening of the payment (a timeout, a 5xx, a rate limit): seconds to wait before reading the ' +
        'checkout again, which tries the opening again under the same idempotency key. Absent otherwise.',
    }),
  },
});

/**
 * The precise types of what checkout creation checks by hand (input.ts), for the document. Like the
 * body they sit in, items may carry other fields, which are ignored (integrations send them): the
 * schemas say so rather than additionalProperties: false. What tells the two kinds apart is what
 * input.ts goes by: an id makes a catalog item, which may not have a unit_price. That field is the
 * schema `false` (nothing is valid; typed `never` by openapi-typescript), which Type.Object cannot
 * hold: these two are written as plain JSON Schema (Ajv never sees them).
 */
const quantity = Type.Integer({ minimum: 1, description: 'Default 1.' });
const CatalogItem = Named(
  'CatalogItem',
  Type.Unsafe({
    type: 'object',
    required: ['id'],
    properties: { id: Type.String({ minLength: 1, maxLength: 64 }), quantity, unit_price: false },
    description:
      'A product of the catalog, at its catalog price (so no unit_price). Other fields are ignored.',
  }),
);
const AdHocItem = Named(
  'AdHocItem',
  Type.Unsafe({
    type: 'object',
    required: ['name', 'unit_price'],
    properties: {
      name: Type.String({ minLength: 1, maxLength: 200 }),
      unit_price: Type.Union([Type.Number({ exclusiveMinimum: 0 }), DecimalString], {
        description: 'In the checkout currency, at most two decimals.',
      }),
      quantity,
      id: false,
    },
    description:
      'A product named and priced in the request (no id: an id makes it a catalog item). Other fields are ignored.',
  }),
);
export const CreateCheckoutDocumented = documented({
  body: {
    products: Type.Array(Type.Unsafe({ oneOf: [CatalogItem, AdHocItem] }), { minItems: 1, maxItems: 100 }),
    sandbox_simulate: Nullable(
      Type.Enum([...SIMULATE_VALUES], { description: 'Sandbox keys only: the outcome to simulate.' }),
    ),
  },
});
