// Request bodies of checkout creation, the hosted step and sync-status.
import { type Static, Type } from 'typebox';
import { Email, Url } from '../../http/schemas.ts';

const Nullable = <T extends Parameters<typeof Type.Optional>[0]>(schema: T) =>
  Type.Optional(Type.Union([schema, Type.Null()]));

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
  billing_postal_code: Nullable(Type.String({ maxLength: 32 })),
  billing_first_name: Type.String({ minLength: 1, maxLength: 100 }),
  billing_last_name: Type.String({ minLength: 1, maxLength: 100 }),
  billing_email: Email,
  billing_phone: Nullable(Type.String({ maxLength: 32 })),
  successUrl: Nullable(Url),
  failedUrl: Nullable(Url),
  cancelUrl: Nullable(Url),
};

export const CheckoutCurrency = Type.Enum(['USD', 'EUR']);

export const CreateCheckoutBody = Type.Object({
  ...BillingFields,
  currency: Type.Optional(CheckoutCurrency),
  products: Type.Array(CheckoutItemBody, { minItems: 1, maxItems: 100 }),
  sandbox_simulate: Nullable(Type.String({ maxLength: 64 })),
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

export const CheckoutCreated = Type.Object({
  checkout_id: Type.String(),
  order_id: Type.String(),
  checkout_url: Type.String({ format: 'uri' }),
  token: Type.String(),
  expires_at: Type.Integer(),
});
export type CheckoutCreatedBody = Static<typeof CheckoutCreated>;
