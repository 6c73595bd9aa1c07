// Bank account numbers a payout can go to, checked the way banks check them: an IBAN's length for its
// country and its ISO 7064 mod-97 check digits; a US routing number's ABA checksum and an account
// number's length. Pure functions, no I/O.

/** IBAN length per country (the SWIFT IBAN registry), as country code + length. */
const IBAN_LENGTHS = new Map(
  (
    'AD24 AE23 AL28 AT20 AZ28 BA20 BE16 BG22 BH22 BI27 BR29 BY28 CH21 CR22 CY28 CZ24 DE22 DJ27 DK18 ' +
    'DO28 EE20 EG29 ES24 FI18 FK18 FO18 FR27 GB22 GE22 GI23 GL18 GR27 GT28 HR21 HU28 IE22 IL23 IQ23 ' +
    'IS26 IT27 JO30 KW30 KZ20 LB28 LC32 LI21 LT20 LU20 LV21 LY25 MC27 MD24 ME22 MK19 MN20 MR27 MT31 ' +
    'MU30 NI28 NL18 NO15 OM23 PK24 PL28 PS29 PT25 QA29 RO24 RS22 RU33 SA24 SC31 SD18 SE24 SI19 SK24 ' +
    'SM27 SO23 ST25 SV28 TL23 TN24 TR26 UA29 VA22 VG24 XK20 YE30'
  )
    .split(' ')
    .map((entry) => [entry.slice(0, 2), Number(entry.slice(2))] as const),
);

export class BankAccountError extends Error {}

/** The IBAN without spaces or dashes, upper-case. */
export function normalizeIban(input: string): string {
  return input.replace(/[\s-]+/g, '').toUpperCase();
}

/** ISO 7064 MOD 97-10 of an IBAN: letters become 10..35, the first four characters move to the end. */
export function ibanRemainder(iban: string): number {
  const rearranged = iban.slice(4) + iban.slice(0, 4);
  let remainder = 0;
  for (const char of rearranged) {
    const value = char >= 'A' ? char.charCodeAt(0) - 55 : Number(char);
    remainder = value >= 10 ? (remainder * 100 + value) % 97 : (remainder * 10 + value) % 97;
  }
  return remainder;
}

/** A valid IBAN, normalized; throws BankAccountError saying what is wrong. */
export function parseIban(input: string): string {
  const iban = normalizeIban(input);
  if (!/^[A-Z]{2}\d{2}[A-Z0-9]+$/.test(iban)) {
    throw new BankAccountError(
      'must start with a country code and two check digits, then letters and digits.',
    );
  }
  const expected = IBAN_LENGTHS.get(iban.slice(0, 2));
  if (expected === undefined)
    throw new BankAccountError(`${iban.slice(0, 2)} is not a country that uses IBANs.`);
  if (iban.length !== expected) {
    throw new BankAccountError(
      `an IBAN from ${iban.slice(0, 2)} has ${expected} characters; this one has ${iban.length}.`,
    );
  }
  if (ibanRemainder(iban) !== 1) {
    throw new BankAccountError('the check digits do not match the number; look for a typo.');
  }
  return iban;
}

/** The IBAN in groups of four, as printed on statements. */
export function formatIban(iban: string): string {
  return iban.replace(/(.{4})(?=.)/g, '$1 ');
}

/** A 9-digit ABA routing number whose weighted checksum 3-7-1 is a multiple of 10. */
export function parseRoutingNumber(input: string): string {
  const routing = input.replace(/[\s-]+/g, '');
  if (!/^\d{9}$/.test(routing)) throw new BankAccountError('must be 9 digits.');
  const d = [...routing].map(Number);
  const sum = 3 * (d[0] + d[3] + d[6]) + 7 * (d[1] + d[4] + d[7]) + (d[2] + d[5] + d[8]);
  if (sum % 10 !== 0) throw new BankAccountError('is not a valid ABA routing number; look for a typo.');
  return routing;
}

/** A US account number: 4 to 17 digits. */
export function parseUsAccountNumber(input: string): string {
  const account = input.replace(/[\s-]+/g, '');
  if (!/^\d{4,17}$/.test(account)) throw new BankAccountError('must be 4 to 17 digits.');
  return account;
}
