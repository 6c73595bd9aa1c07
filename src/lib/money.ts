// Money: integer minor units (bigint) inside, two-decimal strings at the edge.
// Every parse, format and rounding step of the project lives here; no floats.

export class MoneyFormatError extends Error {}

const DECIMAL = /^(\d+)(?:\.(\d{1,2}))?$/;

/**
 * The largest amount accepted at the edge: 9 999 999 999 999.99. Its minor units stay below
 * Number.MAX_SAFE_INTEGER, so they survive the database drivers, which hand integers back as numbers.
 */
export const MAX_AMOUNT_MINOR = 999_999_999_999_999n;

/**
 * Parses a decimal amount ("12.5", "12.50", 12.5) into minor units.
 * Numbers are read through their shortest decimal representation, never through float arithmetic.
 * More than two decimals, negatives, exponents and non-numbers are refused.
 */
export function parseAmount(input: unknown): bigint {
  let text: string;
  if (typeof input === 'number') {
    if (!Number.isFinite(input)) throw new MoneyFormatError('not a finite number');
    text = String(input);
    if (/e/i.test(text)) throw new MoneyFormatError('exponent notation is not accepted');
  } else if (typeof input === 'string') {
    text = input.trim();
  } else {
    throw new MoneyFormatError('must be a decimal string');
  }
  const match = DECIMAL.exec(text);
  if (!match) throw new MoneyFormatError('must be a decimal amount with at most two decimals');
  const cents = (match[2] ?? '').padEnd(2, '0');
  const minor = BigInt(match[1]) * 100n + BigInt(cents);
  if (minor > MAX_AMOUNT_MINOR)
    throw new MoneyFormatError(`must be at most ${formatAmount(MAX_AMOUNT_MINOR)}`);
  return minor;
}

/** Formats minor units as a decimal string with two decimals: 1250n → "12.50". */
export function formatAmount(minor: bigint): string {
  const negative = minor < 0n;
  const abs = negative ? -minor : minor;
  const whole = abs / 100n;
  const cents = (abs % 100n).toString().padStart(2, '0');
  return `${negative ? '-' : ''}${whole}.${cents}`;
}

/** value × numerator / denominator, rounded half-up (away from zero at .5) to an integer. */
export function mulDivHalfUp(value: bigint, numerator: bigint, denominator: bigint): bigint {
  if (denominator <= 0n) throw new RangeError('denominator must be positive');
  const product = value * numerator;
  const negative = product < 0n;
  const abs = negative ? -product : product;
  const rounded = (abs * 2n + denominator) / (denominator * 2n);
  return negative ? -rounded : rounded;
}

/** value × numerator / denominator, rounded down (toward zero). */
export function mulDivFloor(value: bigint, numerator: bigint, denominator: bigint): bigint {
  if (denominator <= 0n) throw new RangeError('denominator must be positive');
  return (value * numerator) / denominator;
}

/**
 * Percentages such as fee_percent are kept as basis points (hundredths of a percent):
 * "2.90" → 290n. Parsed with the same two-decimal rule as amounts.
 */
export function parsePercent(input: unknown): bigint {
  return parseAmount(input);
}

export function formatPercent(basisPoints: bigint): string {
  return formatAmount(basisPoints);
}

/** A percentage as the JSON number the interface shows (fee_percent: 2.9). Display only. */
export function percentNumber(basisPoints: bigint): number {
  return Number(formatAmount(basisPoints));
}

/** amount × percent/100, half-up; percent in basis points. */
export function percentOf(amount: bigint, basisPoints: bigint): bigint {
  return mulDivHalfUp(amount, basisPoints, 10_000n);
}

/** An exchange rate with six decimals ("1.08" → 1_080_000n). */
export const RATE_SCALE = 1_000_000n;

export function parseRate(input: string): bigint {
  const match = /^(\d+)(?:\.(\d{1,6}))?$/.exec(input.trim());
  if (!match) throw new MoneyFormatError('must be a decimal rate with at most six decimals');
  const rate = BigInt(match[1]) * RATE_SCALE + BigInt((match[2] ?? '').padEnd(6, '0'));
  if (rate <= 0n) throw new MoneyFormatError('must be positive');
  return rate;
}

export function convert(amount: bigint, rate: bigint): bigint {
  return mulDivHalfUp(amount, rate, RATE_SCALE);
}

/** Reads an integer that a database driver may hand back as number, bigint or numeric string. */
export function toBigInt(value: unknown): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number') return BigInt(value);
  if (typeof value === 'string') return BigInt(value.split('.')[0] || '0');
  if (value === null || value === undefined) return 0n;
  throw new TypeError('not an integer');
}
