// Card number helpers for the hosted step: normalising, the Luhn check, the brand. Pure functions.
// The full number only ever passes through memory on its way to the provider; nothing here keeps it.

/** Digits only ("4242 4242-4242 4242" → "4242424242424242"), or null when it cannot be a card number. */
export function normaliseCardNumber(input: string): string | null {
  const digits = input.replace(/[\s-]/g, '');
  return /^\d{12,19}$/.test(digits) ? digits : null;
}

export function isLuhnValid(digits: string): boolean {
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i -= 1) {
    let digit = digits.charCodeAt(i) - 48;
    if (double) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
    double = !double;
  }
  return sum % 10 === 0;
}

const BRANDS: [RegExp, string][] = [
  [/^4/, 'visa'],
  [/^(5[1-5]|222[1-9]|22[3-9]\d|2[3-6]\d\d|27[01]\d|2720)/, 'mastercard'],
  [/^3[47]/, 'amex'],
  [/^(6011|65|64[4-9])/, 'discover'],
  [/^35(2[89]|[3-8]\d)/, 'jcb'],
  [/^3(0[0-5]|[68])/, 'diners'],
  [/^62/, 'unionpay'],
];

export function cardBrand(digits: string): string {
  for (const [pattern, brand] of BRANDS) if (pattern.test(digits)) return brand;
  return 'unknown';
}

/** Whether a card's expiry month has passed at `now` (a card is valid through the end of its month). */
export function isCardExpired(expMonth: number, expYear: number, now: Date): boolean {
  const year = now.getUTCFullYear();
  const month = now.getUTCMonth() + 1;
  return expYear < year || (expYear === year && expMonth < month);
}
