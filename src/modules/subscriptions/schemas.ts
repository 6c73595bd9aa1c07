// Request and response schemas of the subscription plans endpoints (dashboard sessions only).
import { Type } from 'typebox';
import { Currency, Environment, Money, Shape, Timestamp } from '../../http/schemas.ts';

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
