// Request bodies of the refund endpoints, and the field checks TypeBox cannot phrase well.
import { Type } from 'typebox';
import { ValidationError } from '../../http/errors.ts';
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
