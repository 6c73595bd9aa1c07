// Request and response bodies of the refund endpoints, and the field checks TypeBox cannot phrase well.
import { Type } from 'typebox';
import { ValidationError } from '../../http/errors.ts';
import {
  CreatedRangeParams,
  Currency,
  DecimalString,
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
import { MoneyFormatError, parseAmount } from '../../lib/money.ts';

export const REASON_MAX = 500;

export const ApiRefundBody = Type.Object({
  reason: Type.String({ maxLength: REASON_MAX }),
  amount: Type.Optional(Type.Unknown()),
});

export const DashboardRefundBody = Type.Object({
  transaction_id: Type.Union([Type.String({ minLength: 1, maxLength: 64 }), Type.Integer({ minimum: 1 })]),
  reason: Type.String({ maxLength: REASON_MAX }),
  amount: Type.Optional(Type.Unknown()),
  verification_code: Type.String({ minLength: 1, maxLength: 16 }),
});

export const RefundIdParam = Type.Object({ id: Type.String({ maxLength: 64 }) });

/** A documented query parameter; listRefunds checks it (a bad or repeated one is a 400 naming it). */
export const QueryParam = (description: string) => Type.Optional(Type.Unknown({ description }));

const refundListParams = {
  status: QueryParam('pending, processing, completed, failed or rejected.'),
  created_at__gte: QueryParam('ISO 8601 date-time: created on or after.'),
  created_at__lte: QueryParam('ISO 8601 date-time: created on or before.'),
  search: QueryParam('Matches the payment or refund public id, or the reason (case-insensitive).'),
  ordering: QueryParam('created_at, amount or status; prefix - for descending (default -created_at).'),
  page: QueryParam('From 1.'),
  page_size: QueryParam('Default 20, at most 100.'),
};

export const RefundListQuery = Type.Object(refundListParams);
export const DashboardRefundListQuery = Type.Object({
  ...refundListParams,
  environment: QueryParam('production (default) or sandbox.'),
});

const RefundStatus = Named(
  'RefundStatus',
  Type.Enum(['pending', 'processing', 'completed', 'failed', 'rejected']),
);

/** The interface's Refund object (GET /refunds/, GET /refunds/{id}/). */
export const Refund = Named(
  'Refund',
  Shape(
    {
      id: Type.String({ description: 'Public refund ID (RF…).' }),
      transaction_id: Type.String({ description: 'Public ID of the refunded payment.' }),
      amount: { ...Money, description: 'In the charge currency, TTC.' },
      currency: Currency,
      amount_in_cents: Nullable(Type.Integer({ description: 'Sent to the provider, HT basis.' })),
      amount_usd: Nullable({ ...Money, description: 'Merchant wallet hold in USD.' }),
      reason: Type.String(),
      status: RefundStatus,
      created_at: Timestamp,
      updated_at: Timestamp,
    },
    'A refund.',
  ),
);

export const RefundPage = Named('RefundPage', Page(Refund, 'A page of refunds, newest first by default.'));

/** The creation response: integer ids and the public id without its RF prefix, as the interface shows. */
export const RefundCreated = Named(
  'RefundCreated',
  Shape(
    {
      id: Type.String({ description: 'Public refund ID (RF…), as GET /refunds/ and the webhooks show it.' }),
      transaction: Type.String({ description: 'Public ID (TX…) of the refunded payment.' }),
      status: RefundStatus,
      refund_id: Type.Integer({ description: 'Internal refund ID.' }),
      refund_public_id: Type.String({ description: 'Public refund ID without the RF prefix.' }),
      transaction_id: Type.Integer({ description: 'Internal payment ID.' }),
      amount: Money,
      currency: Currency,
      amount_usd: { ...Money, description: 'Merchant wallet hold in USD.' },
      amount_in_cents: Type.Integer({ description: 'Sent to the provider, HT basis.' }),
    },
    'The refund request was accepted: processing, or failed at once.',
  ),
);

export const VerificationCodeSent = Shape({ detail: Type.String(), expires_at: Timestamp });

/** The reason shown to the customer: required, not blank, at most 500 characters. */
export function parseReason(value: string): string {
  const reason = value.trim();
  if (!reason) throw new ValidationError('reason: may not be blank.');
  return reason;
}

/** A positive decimal amount (string or number, at most two decimals) in minor units. */
export function parsePositiveAmount(field: string, value: unknown): bigint {
  if (typeof value !== 'string' && typeof value !== 'number') {
    throw new ValidationError(`${field}: must be a decimal string.`);
  }
  let amount: bigint;
  try {
    amount = parseAmount(value);
  } catch (error) {
    if (error instanceof MoneyFormatError) throw new ValidationError(`${field}: ${error.message}.`);
    throw error;
  }
  if (amount <= 0n) throw new ValidationError(`${field}: must be greater than 0.`);
  return amount;
}

/** A partial amount in the charge currency; null when omitted (the whole remainder). */
export function parseRefundAmount(value: unknown): bigint | null {
  if (value === undefined || value === null) return null;
  return parsePositiveAmount('amount', value);
}

/** The precise types of what the refund handlers check by hand (the amount, the list parameters). */
const RefundAmount = Type.Union([DecimalString, Type.Number({ exclusiveMinimum: 0 }), Type.Null()], {
  description:
    'In the charge currency, greater than 0, at most two decimals ("12.50" or 12.5); ' +
    'the whole refundable remainder when omitted or null.',
});
export const RefundBodyDocumented = documented({ body: { amount: RefundAmount } });
const refundListDocumented = {
  status: RefundStatus,
  ...CreatedRangeParams,
  ordering: Ordering(['created_at', 'amount', 'status']),
  ...PageParams,
};
export const RefundListDocumented = documented({ query: refundListDocumented });
export const DashboardRefundListDocumented = documented({
  query: { ...refundListDocumented, environment: Environment },
});
