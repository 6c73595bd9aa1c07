// Response schemas of the payout endpoints.
import { Type } from 'typebox';
import { Environment, Money, Page, Shape, Timestamp } from '../../http/schemas.ts';

const QueryParam = (description: string) => Type.Optional(Type.Unknown({ description }));

/** Checked by the route (a bad or repeated parameter is a 400 naming it). */
export const PayoutListQuery = Type.Object({
  environment: QueryParam('production (default) or sandbox.'),
  page: QueryParam('From 1.'),
  page_size: QueryParam('Default 20, at most 100.'),
});

export const Payout = Shape(
  {
    id: Type.String({ description: 'Public payout ID (PO…).' }),
    amount: Money,
    // Always USD (the wallet's currency); the row's type is a plain string.
    currency: Type.Unsafe<string>(Type.Literal('USD')),
    status: Type.Enum(['pending', 'completed', 'rejected']),
    environment: Environment,
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  'A payout request; its amount is held until the operator completes or rejects it.',
);

export const PayoutPage = Page(Payout, 'A page of payouts, newest first.');
