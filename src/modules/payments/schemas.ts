// The dashboard's payment list query, and the response schemas of the payment endpoints: the interface's Payment and DepositAttempt objects, and the
// dashboard's view of a payment. They document the API; the e2e suite checks every response against them.
import { Type } from 'typebox';
import {
  CreatedRangeParams,
  Currency,
  DateTimeParam,
  documented,
  Environment,
  Money,
  Named,
  Nullable,
  Ordering,
  Page,
  PageParams,
  Shape,
  Timestamp,
} from '../../http/schemas.ts';
import { PAYMENT_STATUSES } from './table.ts';

export const PaymentStatus = Named('PaymentStatus', Type.Enum(PAYMENT_STATUSES));

const depositAttemptFields = {
  status: Type.String({ description: 'For example succeeded, requires_payment_method, failed.' }),
  paymentId: Type.String({ description: 'Provider payment id.' }),
  attemptedAt: Timestamp,
  errorMessage: Nullable(Type.String({ description: 'Decline or error text; null on success.' })),
  paymentMethod: Type.String({ description: 'For example card.' }),
};

/** One card attempt synced from the provider. */
export const DepositAttempt = Named(
  'DepositAttempt',
  Shape(depositAttemptFields, 'One card attempt synced from the provider.'),
);

/** The hosted page's view of an attempt: the interface's fields plus the card's brand and last 4. */
export const HostedAttempt = Shape({
  ...depositAttemptFields,
  cardBrand: Nullable(Type.String()),
  cardLast4: Nullable(Type.String()),
});

/** What a payment carries from its checkout and subscription: on the Payment and in its webhook. */
export const paymentReferenceFields = {
  metadata: Type.Record(Type.String(), Type.String(), {
    description: "The checkout's metadata; {} when none was given.",
  }),
  client_reference_id: Nullable(Type.String({ description: "The checkout's client_reference_id." })),
  subscription_id: Nullable(
    Type.String({
      description: 'The subscription (SU…) this payment charges for; null for every other payment.',
    }),
  ),
};

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
  simulated: Type.Boolean({
    description:
      'True when the built-in simulator processed it: no real money moved (sandbox, or KASSA_ALLOW_SIMULATOR).',
  }),
  created_at: Timestamp,
  updated_at: Timestamp,
  ...paymentReferenceFields,
};

/** GET /transactions/{id}/ */
export const Payment = Named(
  'Payment',
  Shape(paymentFields, 'A payment with the history of its card attempts.'),
);

/** The dashboard's payment: the API's object, the checkout it came from, its environment and refunds. */
export const DashboardPayment = Shape(
  {
    ...paymentFields,
    depositAttempts: Type.Array(HostedAttempt, {
      description: 'Every attempt, newest first, with the brand and last 4 digits of the card tried.',
    }),
    checkout_id: Type.String(),
    environment: Environment,
    refunded_amount: Money,
    payment_link_id: Nullable(Type.String({ description: 'The payment link it was paid through.' })),
    provider_review: Nullable(
      Shape(
        {
          state: Type.Enum(['confirming', 'flagged']),
          operation: Type.String({
            description:
              'The provider call, by its idempotency key (kassa-refund-RF… for a refund the provider contradicts), or "payment" for a payment the provider charged after Kassa gave it up.',
          }),
          reason: Nullable(Type.String()),
          since: Timestamp,
        },
        "A provider call whose outcome Kassa does not know (being read back, or flagged for review after the reconciler's last read), or a provider that contradicts Kassa (flagged).",
      ),
    ),
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
  search: text("Matches the payment or checkout id, the payer email, or a card's last 4 digits."),
  ordering: text('created_at, amount or status; prefix - for descending (default -created_at).'),
  page: text('From 1.'),
  page_size: text('Default 20, at most 100.'),
});

export const PaymentPage = Page(DashboardPayment, 'A page of payments, newest first by default.');

/** GET /transactions/ (API keys); like the dashboard's list, each parameter is checked by hand. */
export const TransactionListQuery = Type.Object({
  status: text('A payment status.'),
  order_id: text('The checkout id (CO…) the payment came from.'),
  client_reference_id: text("The checkout's client_reference_id."),
  created_after: text('ISO 8601: created strictly after.'),
  created_before: text('ISO 8601: created strictly before.'),
  page: text('From 1.'),
  page_size: text('Default 20, at most 100.'),
});

export const TransactionPage = Named('PaymentPage', Page(Payment, 'A page of payments, newest first.'));

export const ProviderWebhookReceived = Shape({
  received: Type.Literal(true),
  payments: Type.Integer({ description: 'Payments re-read from the provider.' }),
  refunds: Type.Integer({ description: 'Refunds re-read from the provider.' }),
});

/** The precise types of the list parameters parseListQuery checks by hand, for the document. */
export const PaymentListDocumented = documented({
  query: {
    environment: Environment,
    status: PaymentStatus,
    currency: Currency,
    ...CreatedRangeParams,
    ordering: Ordering(['created_at', 'amount', 'status']),
    ...PageParams,
  },
});
export const TransactionListDocumented = documented({
  query: {
    status: PaymentStatus,
    created_after: DateTimeParam('Created strictly after.'),
    created_before: DateTimeParam('Created strictly before.'),
    ...PageParams,
  },
});
