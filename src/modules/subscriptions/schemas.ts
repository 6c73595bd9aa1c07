// Request and response schemas of the subscriptions endpoints (dashboard sessions only).
import { Type } from 'typebox';
import { Currency, Environment, Money, Nullable, Page, Shape, Timestamp } from '../../http/schemas.ts';

export const IntervalSchema = Type.Union(
  [Type.Literal('day'), Type.Literal('week'), Type.Literal('month'), Type.Literal('year')],
  { description: 'The unit of a period.' },
);

export const Plan = Shape(
  {
    id: Type.String({ description: 'plan_ + 14 base62 characters.' }),
    name: Type.String(),
    amount: Money,
    currency: Currency,
    interval: IntervalSchema,
    interval_count: Type.Integer({ minimum: 1, maximum: 12, description: 'Units per period.' }),
    trial_days: Type.Integer({ minimum: 0, maximum: 90 }),
    environment: Environment,
    is_active: Type.Boolean({ description: 'Whether the plan takes new signups.' }),
    signup_url: Type.String({ description: 'The public signup page: {KASSA_PUBLIC_URL}/subscribe/{id}.' }),
    stats: Type.Object(
      {
        active_subscriptions: Type.Integer({
          description: 'Subscriptions of this plan that are not canceled.',
        }),
        mrr: Type.String({
          pattern: '^\\d+\\.\\d{2}$',
          description:
            'Monthly recurring revenue of its active and past-due subscriptions, in the plan currency (a year is 12 months, a month 365/12 days).',
        }),
      },
      { additionalProperties: false },
    ),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  'A subscription plan. Its price, currency and interval never change: a new price is a new plan.',
);

export const PlanList = Type.Array(Plan, { description: 'The plans of one environment, newest first.' });

export const CreatePlanBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    amount: Type.Union([Type.String({ maxLength: 20 }), Type.Number()], {
      description: 'The price of one period, a decimal with at most 2 places, greater than 0.',
    }),
    currency: Type.Optional(Currency),
    interval: IntervalSchema,
    interval_count: Type.Optional(Type.Integer({ minimum: 1, maximum: 12 })),
    trial_days: Type.Optional(Type.Integer({ minimum: 0, maximum: 90 })),
    environment: Type.Optional(Environment),
  },
  { additionalProperties: false },
);

export const UpdatePlanBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    is_active: Type.Optional(Type.Boolean()),
  },
  {
    additionalProperties: false,
    description: 'Only the name and is_active change; any other field is a 400.',
  },
);

const SubscriptionStatus = Type.Union(
  [Type.Literal('trialing'), Type.Literal('active'), Type.Literal('past_due'), Type.Literal('canceled')],
  { description: 'trialing, active, past_due or canceled.' },
);

const subscriptionFields = {
  id: Type.String({ description: 'SU + 16 base62 characters.' }),
  plan: Type.Object({ id: Type.String(), name: Type.String() }, { additionalProperties: false }),
  status: SubscriptionStatus,
  environment: Environment,
  customer_email: Type.String(),
  customer_name: Nullable(Type.String()),
  card: Type.Object(
    {
      brand: Type.String(),
      last4: Type.String(),
      exp_month: Type.Integer({ minimum: 1, maximum: 12 }),
      exp_year: Type.Integer(),
    },
    { additionalProperties: false, description: 'The saved card renewals are charged to.' },
  ),
  current_period_start: Timestamp,
  current_period_end: Timestamp,
  trial_end: Nullable(Timestamp),
  cancel_at_period_end: Type.Boolean(),
  canceled_at: Nullable(Timestamp),
  cancel_reason: Nullable(Type.Union([Type.Literal('merchant'), Type.Literal('payment_failed')])),
  test_clock_at: Nullable(
    Type.String({
      format: 'date-time',
      description:
        "Sandbox only: the subscription's test clock, once advance-clock has moved it; null: real time.",
    }),
  ),
  created_at: Timestamp,
  updated_at: Timestamp,
};

export const Subscription = Shape(subscriptionFields, "A customer's subscription to a plan.");

export const SubscriptionPage = Page(Subscription, 'A page of subscriptions, newest first.');

const Cycle = Shape(
  {
    period_index: Type.Integer({ minimum: 0 }),
    period_start: Timestamp,
    period_end: Timestamp,
    amount: Money,
    currency: Currency,
    status: Type.Union(
      [
        Type.Literal('processing'),
        Type.Literal('paid'),
        Type.Literal('retrying'),
        Type.Literal('uncollectible'),
        Type.Literal('void'),
      ],
      { description: 'processing, paid, retrying, uncollectible or void (never charged).' },
    ),
    attempts: Type.Integer({ minimum: 0, maximum: 5 }),
    next_attempt_at: Nullable(Timestamp),
    transaction_id: Nullable(Type.String({ description: 'The payment (TX…) that paid the period.' })),
  },
  'One period of a subscription and its charge.',
);

export const SubscriptionDetail = Shape(
  { ...subscriptionFields, cycles: Type.Array(Cycle, { description: 'Newest first.' }) },
  'A subscription with its cycles.',
);

/** A documented query parameter; listSubscriptions checks it (a bad or repeated one is a 400 naming it). */
const QueryParam = (description: string) => Type.Optional(Type.Unknown({ description }));

export const SubscriptionListQuery = Type.Object({
  status: QueryParam('trialing, active, past_due or canceled.'),
  plan: QueryParam('A plan id (plan_…).'),
  environment: QueryParam('production (default) or sandbox.'),
  search: QueryParam("Part of the customer's email or name (case-insensitive)."),
  page: QueryParam('From 1.'),
  page_size: QueryParam('Default 20, at most 100.'),
});

export const CancelBody = Type.Object(
  {
    at_period_end: Type.Optional(
      Type.Boolean({ description: 'true (default): at the end of the current period; false: now.' }),
    ),
  },
  { additionalProperties: false },
);

export const AdvanceClockBody = Type.Object(
  {
    days: Type.Integer({
      minimum: 1,
      maximum: 400,
      description: 'How many days to move the test clock forward (1–400).',
    }),
  },
  { additionalProperties: false },
);

/** GET /subscriptions/public/{plan id}/: what the signup page shows. */
export const PublicPlan = Shape(
  {
    id: Type.String(),
    name: Type.String(),
    amount: Money,
    currency: Currency,
    interval: Type.Enum(['day', 'week', 'month', 'year']),
    interval_count: Type.Integer({ minimum: 1, maximum: 12 }),
    trial_days: Type.Integer({ minimum: 0, maximum: 90 }),
    environment: Environment,
    merchant: Shape({ name: Type.String(), website: Nullable(Type.String()) }),
  },
  'A plan as its public signup page shows it.',
);

/** POST /subscriptions/{id}/update-card-link/ */
export const UpdateCardLink = Shape(
  {
    url: Type.String({ format: 'uri', description: "The customer's page: single use, for 7 days." }),
    expires_at: Timestamp,
  },
  'A page where the customer saves a new card; it replaces the saved one and retries a past-due period at once.',
);
