// The dashboard's payment list query, and the response schemas of the payment endpoints: the interface's Payment and DepositAttempt objects, and the
// dashboard's view of a payment. They document the API; the e2e suite checks every response against them.
import { Type } from 'typebox';
import { Currency, Environment, Money, Nullable, Page, Shape, Timestamp } from '../../http/schemas.ts';
import { PAYMENT_STATUSES } from './table.ts';

export const PaymentStatus = Type.Enum(PAYMENT_STATUSES);

const depositAttemptFields = {
  status: Type.String({ description: 'For example succeeded, requires_payment_method, failed.' }),
  paymentId: Type.String({ description: 'Provider payment id.' }),
  attemptedAt: Timestamp,
  errorMessage: Nullable(Type.String({ description: 'Decline or error text; null on success.' })),
  paymentMethod: Type.String({ description: 'For example card.' }),
};

/** One card attempt synced from the provider. */
export const DepositAttempt = Shape(depositAttemptFields, 'One card attempt synced from the provider.');

/** The hosted page's view of an attempt: the interface's fields plus the card's brand and last 4. */
export const HostedAttempt = Shape({
  ...depositAttemptFields,
  cardBrand: Nullable(Type.String()),
  cardLast4: Nullable(Type.String()),
});

const paymentFields = {
  id: Type.String({ description: 'Public payment ID (TX…).' }),
  amount: { ...Money, description: 'Gross total charged (TTC).' },
  net_amount: { ...Money, description: 'Net to the merchant after fees.' },
  status: PaymentStatus,
  currency: Currency,
  payer_email: Nullable(Type.String()),
  products: Type.Array(Shape({ id: Type.String(), name: Type.String() })),
  depositAttempts: Type.Array(DepositAttempt, { description: 'Every attempt, newest first; [] when none.' }),
  fee_percent: Type.Number(),
  amount_breakdown: Shape({ gross_ttc: Money, currency: Currency, net_usd: Money }),
  created_at: Timestamp,
  updated_at: Timestamp,
};

/** GET /transactions/{id}/ */
export const Payment = Shape(paymentFields, 'A payment with the history of its card attempts.');

/** The dashboard's payment: the API's object, the checkout it came from, its environment and refunds. */
export const DashboardPayment = Shape(
  {
    ...paymentFields,
    checkout_id: Type.String(),
    environment: Environment,
    refunded_amount: Money,
  },
  'A payment as the dashboard shows it.',
);

const text = (description: string) => Type.Optional(Type.String({ description }));

/** GET /payments/: every parameter is a string checked by parseListQuery, so a bad one is a 400 naming it. */
export const PaymentListQuery = Type.Object({
  environment: text('production (default) or sandbox.'),
  status: text('A payment status.'),
  currency: text('USD or EUR.'),
  created_at__gte: text('ISO 8601: created on or after.'),
  created_at__lte: text('ISO 8601: created on or before.'),
  search: text('Matches the payment id or the payer email.'),
  ordering: text('created_at, amount or status; prefix - for descending (default -created_at).'),
  page: text('From 1.'),
  page_size: text('Default 20, at most 100.'),
});

export const PaymentPage = Page(DashboardPayment, 'A page of payments, newest first by default.');

export const ProviderWebhookReceived = Shape({
  received: Type.Literal(true),
  payments: Type.Integer({ description: 'Payments re-read from the provider.' }),
  refunds: Type.Integer({ description: 'Refunds re-read from the provider.' }),
});
