import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import {
  convert,
  formatAmount,
  formatPercent,
  MAX_AMOUNT_MINOR,
  MoneyFormatError,
  mulDivFloor,
  mulDivHalfUp,
  parseAmount,
  parsePercent,
  parseRate,
  percentNumber,
  percentOf,
  RATE_SCALE,
  toBigInt,
} from './money.ts';

/** Any amount the edge accepts, in minor units. */
const minorUnits = fc.bigInt({ min: 0n, max: MAX_AMOUNT_MINOR });

/** Half-up division written the schoolbook way: quotient and remainder, then compare twice the remainder. */
function referenceHalfUp(value: bigint, numerator: bigint, denominator: bigint): bigint {
  const product = value * numerator;
  const sign = product < 0n ? -1n : 1n;
  const abs = product * sign;
  const quotient = abs / denominator;
  const remainder = abs % denominator;
  return sign * (remainder * 2n >= denominator ? quotient + 1n : quotient);
}

describe('parseAmount and formatAmount', () => {
  test('formatting then parsing gives back every amount', () => {
    fc.assert(fc.property(minorUnits, (minor) => parseAmount(formatAmount(minor)) === minor));
  });

  test('a canonical two-decimal string survives parse then format unchanged', () => {
    const canonical = fc
      .tuple(fc.bigInt({ min: 0n, max: 9_999_999_999_999n }), fc.integer({ min: 0, max: 99 }))
      .map(([whole, cents]) => `${whole}.${String(cents).padStart(2, '0')}`);
    fc.assert(fc.property(canonical, (text) => formatAmount(parseAmount(text)) === text));
  });

  test('one decimal or none is read as tenths or whole units', () => {
    assert.equal(parseAmount('12.5'), 1250n);
    assert.equal(parseAmount('12'), 1200n);
    assert.equal(parseAmount(' 7.05 '), 705n);
    assert.equal(parseAmount('0'), 0n);
    assert.equal(formatAmount(5n), '0.05');
    assert.equal(formatAmount(-1250n), '-12.50');
    // Zero has no sign: the property tests above reach 0n only when fast-check happens to draw it (a
    // mutant that formatted it "-0.00" survived one CI run in several).
    assert.equal(formatAmount(0n), '0.00');
  });

  test('more than two decimals are refused, whatever the digits', () => {
    const tooPrecise = fc
      .tuple(fc.nat(), fc.stringMatching(/^\d{3,8}$/))
      .map(([whole, decimals]) => `${whole}.${decimals}`);
    fc.assert(
      fc.property(tooPrecise, (text) => {
        assert.throws(() => parseAmount(text), MoneyFormatError);
      }),
    );
  });

  test('signs, exponents, blanks and other shapes are refused', () => {
    for (const input of ['-1.00', '+1', '1e3', '1.', '.5', '', ' ', '1,00', '1 000', 'abc', '0x10', '١٢']) {
      assert.throws(() => parseAmount(input), MoneyFormatError, `accepted ${JSON.stringify(input)}`);
    }
    for (const input of [null, undefined, true, {}, [], 10n]) {
      assert.throws(() => parseAmount(input), MoneyFormatError);
    }
  });

  test('an amount above the maximum is refused, the maximum itself accepted', () => {
    assert.equal(parseAmount('9999999999999.99'), MAX_AMOUNT_MINOR);
    assert.throws(() => parseAmount('10000000000000.00'), /must be at most 9999999999999\.99/);
    assert.ok(MAX_AMOUNT_MINOR <= BigInt(Number.MAX_SAFE_INTEGER));
  });

  test('a JSON number is read through its decimal string, so every accepted amount parses the same as its text', () => {
    fc.assert(
      fc.property(minorUnits, (minor) => {
        const text = formatAmount(minor);
        assert.equal(parseAmount(Number(text)), parseAmount(text));
      }),
    );
  });

  test('a number whose decimal string has float noise or an exponent is refused, never rounded', () => {
    for (const input of [0.1 + 0.2, 1.005, 1e21, 1e-7, Number.NaN, Number.POSITIVE_INFINITY, -5]) {
      assert.throws(() => parseAmount(input), MoneyFormatError, `accepted ${input}`);
    }
    assert.equal(parseAmount(12.5), 1250n);
    assert.equal(parseAmount(0.29), 29n);
  });
});

describe('rounding', () => {
  const value = fc.bigInt({ min: -(10n ** 18n), max: 10n ** 18n });
  const numerator = fc.bigInt({ min: -(10n ** 9n), max: 10n ** 9n });
  const denominator = fc.bigInt({ min: 1n, max: 10n ** 9n });

  test('mulDivHalfUp matches a quotient-and-remainder reference, .5 going away from zero', () => {
    fc.assert(
      fc.property(
        value,
        numerator,
        denominator,
        (v, n, d) => mulDivHalfUp(v, n, d) === referenceHalfUp(v, n, d),
      ),
    );
    assert.equal(mulDivHalfUp(5n, 1n, 10n), 1n);
    assert.equal(mulDivHalfUp(-5n, 1n, 10n), -1n);
    assert.equal(mulDivHalfUp(4n, 1n, 10n), 0n);
  });

  test('mulDivHalfUp is never more than half a unit from the exact quotient, and a tie goes away from zero', () => {
    fc.assert(
      fc.property(value, numerator, denominator, (v, n, d) => {
        const rounded = mulDivHalfUp(v, n, d);
        const error = rounded * d - v * n; // (rounded − exact) × d
        const absError = error < 0n ? -error : error;
        if (absError * 2n < d) return true;
        // A tie: the result moved away from zero, so the error has the sign of the exact value.
        return absError * 2n === d && (v * n > 0n ? error > 0n : error < 0n);
      }),
    );
  });

  test('mulDivFloor of non-negative values is the largest result not above the exact quotient', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 10n ** 18n }),
        fc.bigInt({ min: 0n, max: 10n ** 9n }),
        denominator,
        (v, n, d) => {
          const floor = mulDivFloor(v, n, d);
          return floor * d <= v * n && (floor + 1n) * d > v * n;
        },
      ),
    );
  });

  test('a zero or negative denominator is a RangeError', () => {
    assert.throws(() => mulDivHalfUp(1n, 1n, 0n), RangeError);
    assert.throws(() => mulDivFloor(1n, 1n, -1n), RangeError);
  });

  test('a fee and the net it leaves always add back up to the gross', () => {
    fc.assert(
      fc.property(minorUnits, fc.bigInt({ min: 0n, max: 10_000n }), (gross, basisPoints) => {
        const fee = percentOf(gross, basisPoints);
        return fee >= 0n && fee <= gross && fee + (gross - fee) === gross;
      }),
    );
    assert.equal(percentOf(parseAmount('10.00'), parseAmount('2.90')), 29n);
    assert.equal(percentOf(parseAmount('0.50'), parseAmount('2.90')), 1n); // 1.45 cents → 1
    assert.equal(percentOf(parseAmount('0.55'), parseAmount('10.00')), 6n); // 5.5 cents → 6
  });

  test('amounts that binary floats get wrong come out exact', () => {
    // 1.15 × 100 / 2 is 57.4999… in floats; in minor units half of 115 is exactly 57.5 → 58.
    assert.equal(mulDivHalfUp(parseAmount('1.15'), 1n, 2n), 58n);
    assert.equal(formatAmount(parseAmount('0.10') + parseAmount('0.20')), '0.30');
  });
});

describe('rates and conversion', () => {
  test('a rate keeps six decimals and conversion rounds half-up to the cent', () => {
    assert.equal(parseRate('1.08'), 1_080_000n);
    assert.equal(parseRate('0.000001'), 1n);
    assert.equal(convert(parseAmount('10.00'), parseRate('1.08')), 1080n);
    assert.equal(convert(parseAmount('0.05'), parseRate('1.1')), 6n); // 5.5 cents → 6
    fc.assert(
      fc.property(minorUnits, fc.bigInt({ min: 1n, max: 10n * RATE_SCALE }), (amount, rate) => {
        return convert(amount, rate) === referenceHalfUp(amount, rate, RATE_SCALE);
      }),
    );
  });

  test('a zero, negative or over-precise rate is refused', () => {
    for (const input of ['0', '0.000000', '-1.08', '1.0000001', 'abc', '']) {
      assert.throws(() => parseRate(input), MoneyFormatError, `accepted ${JSON.stringify(input)}`);
    }
  });
});

describe('toBigInt', () => {
  test('reads what the database drivers hand back: number, bigint or numeric string', () => {
    assert.equal(toBigInt(1250), 1250n);
    assert.equal(toBigInt(1250n), 1250n);
    assert.equal(toBigInt('1250'), 1250n);
    assert.equal(toBigInt(null), 0n);
    assert.throws(() => toBigInt({}), TypeError);
  });
});

test('money.ts uses no floating-point helpers', () => {
  const source = readFileSync(new URL('./money.ts', import.meta.url), 'utf8');
  for (const helper of ['parseFloat', 'Math.round', 'Math.floor', 'toFixed', 'toPrecision']) {
    assert.ok(!source.includes(helper), `money.ts uses ${helper}`);
  }
});

// The refusal messages reach the API as the 400's detail ("unit_price: must be a decimal amount with
// at most two decimals."), so they are part of what a merchant sees and are pinned here.
describe('the words of each refusal', () => {
  const refusal = (run: () => unknown) => {
    try {
      run();
    } catch (error) {
      return `${(error as Error).constructor.name}: ${(error as Error).message}`;
    }
    return 'accepted';
  };

  test('amounts', () => {
    assert.equal(
      refusal(() => parseAmount(Number.NaN)),
      'MoneyFormatError: not a finite number',
    );
    assert.equal(
      refusal(() => parseAmount(Number.POSITIVE_INFINITY)),
      'MoneyFormatError: not a finite number',
    );
    assert.equal(
      refusal(() => parseAmount(1e21)),
      'MoneyFormatError: exponent notation is not accepted',
    );
    assert.equal(
      refusal(() => parseAmount(1e-7)),
      'MoneyFormatError: exponent notation is not accepted',
    );
    for (const input of [null, undefined, true, {}, [], 12n]) {
      assert.equal(
        refusal(() => parseAmount(input)),
        'MoneyFormatError: must be a decimal string',
        String(input),
      );
    }
    assert.equal(
      refusal(() => parseAmount('1.234')),
      'MoneyFormatError: must be a decimal amount with at most two decimals',
    );
    assert.equal(
      refusal(() => parseAmount('10000000000000.00')),
      'MoneyFormatError: must be at most 9999999999999.99',
    );
  });

  test('rates, divisions and integers', () => {
    assert.equal(
      refusal(() => parseRate('1.0000001')),
      'MoneyFormatError: must be a decimal rate with at most six decimals',
    );
    assert.equal(
      refusal(() => parseRate('0.000000')),
      'MoneyFormatError: must be positive',
    );
    for (const denominator of [0n, -1n]) {
      assert.equal(
        refusal(() => mulDivHalfUp(1n, 1n, denominator)),
        'RangeError: denominator must be positive',
      );
      assert.equal(
        refusal(() => mulDivFloor(1n, 1n, denominator)),
        'RangeError: denominator must be positive',
      );
    }
    assert.equal(
      refusal(() => toBigInt({})),
      'TypeError: not an integer',
    );
    assert.equal(
      refusal(() => toBigInt(true)),
      'TypeError: not an integer',
    );
  });
});

describe('percentages and rates as the organization fields use them', () => {
  test('a percentage is kept in basis points and shown with two decimals', () => {
    // decisions.md "Money": fee_percent 2.90, rolling_reserve_percent 10.
    assert.equal(parsePercent('2.90'), 290n);
    assert.equal(parsePercent('10'), 1_000n);
    assert.equal(formatPercent(290n), '2.90');
    assert.equal(formatPercent(1_000n), '10.00');
    // The interface shows fee_percent as a JSON number: 2.9.
    assert.equal(percentNumber(290n), 2.9);
    assert.equal(percentNumber(1_000n), 10);
    assert.equal(percentOf(10_000n, 290n), 290n);
  });

  test('a rate may have several whole digits, no decimals, or spaces around it', () => {
    // An FX rate of 10 or more (EUR→JPY-like) must not lose its whole digits.
    assert.equal(parseRate('10.5'), 10_500_000n);
    assert.equal(parseRate('123.456789'), 123_456_789n);
    assert.equal(parseRate('2'), 2_000_000n);
    assert.equal(parseRate(' 1.08 '), 1_080_000n);
    assert.equal(convert(10_000n, parseRate('10.5')), 105_000n);
  });

  test('toBigInt reads null and undefined as zero and keeps only the integer part of a numeric string', () => {
    assert.equal(toBigInt(undefined), 0n);
    assert.equal(toBigInt(null), 0n);
    assert.equal(toBigInt('42.99'), 42n);
    assert.equal(toBigInt('.5'), 0n);
    assert.equal(toBigInt('9007199254740993'), 9_007_199_254_740_993n);
  });
});
