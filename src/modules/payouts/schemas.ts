// Response schemas of the payout endpoints.
import { Type } from 'typebox';
import { Environment, Money, Nullable, Page, Shape, Timestamp } from '../../http/schemas.ts';

const QueryParam = (description: string) => Type.Optional(Type.Unknown({ description }));

/** Checked by the route (a bad or repeated parameter is a 400 naming it). */
export const PayoutListQuery = Type.Object({
  environment: QueryParam('production (default) or sandbox.'),
  page: QueryParam('From 1.'),
  page_size: QueryParam('Default 20, at most 100.'),
});

const DestinationType = Type.Enum(['iban', 'us_account']);

/** The account a payout went to, as the dashboard may show it (never the full number). */
export const PayoutDestinationSummary = Shape({
  id: Type.String({ description: 'Destination ID (ba_…).' }),
  type: DestinationType,
  account_holder: Type.String(),
  label: Type.String({ description: 'For example "DE IBAN •••• 3000".' }),
});

export const Payout = Shape(
  {
    id: Type.String({ description: 'Public payout ID (PO…).' }),
    amount: Money,
    // Always USD (the wallet's currency); the row's type is a plain string.
    currency: Type.Unsafe<string>(Type.Literal('USD')),
    status: Type.Enum(['pending', 'completed', 'rejected']),
    environment: Environment,
    destination: Nullable(PayoutDestinationSummary),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  'A payout request; its amount is held until the operator completes or rejects it.',
);

export const PayoutPage = Page(Payout, 'A page of payouts, newest first.');

/** PUT /payouts/destination/: an IBAN (BIC optional) or a US routing + account number. */
export const DestinationBody = Type.Object(
  {
    type: DestinationType,
    account_holder: Type.String({ minLength: 1, maxLength: 200 }),
    iban: Type.Optional(Type.String({ maxLength: 64 })),
    bic: Type.Optional(Type.String({ maxLength: 16 })),
    routing_number: Type.Optional(Type.String({ maxLength: 20 })),
    account_number: Type.Optional(Type.String({ maxLength: 32 })),
  },
  { additionalProperties: false },
);

export const PayoutDestination = Shape(
  {
    id: Type.String({ description: 'Destination ID (ba_…).' }),
    type: DestinationType,
    account_holder: Type.String(),
    country: Type.String({ description: 'ISO country code: the IBAN country, or US.' }),
    bic: Nullable(Type.String()),
    routing_number: Nullable(Type.String()),
    last4: Type.String(),
    label: Type.String(),
    environment: Environment,
    created_at: Timestamp,
  },
  'A payout bank account; the full number is stored encrypted and never shown again.',
);

export const CurrentDestination = Shape(
  { destination: Nullable(PayoutDestination) },
  "The environment's current payout account, or null when none is set.",
);
