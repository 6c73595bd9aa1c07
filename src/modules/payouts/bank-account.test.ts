import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  BankAccountError,
  formatIban,
  ibanRemainder,
  parseIban,
  parseRoutingNumber,
  parseUsAccountNumber,
} from './bank-account.ts';

// Published example IBANs (ECBS / the banks' own documentation) and routing numbers.
const VALID_IBANS = [
  'DE89 3704 0044 0532 0130 00',
  'FR14 2004 1010 0505 0001 3M02 606',
  'GB29 NWBK 6016 1331 9268 19',
  'NL91 ABNA 0417 1643 00',
  'BE68 5390 0754 7034',
  'NO93 8601 1117 947',
  'MT84 MALT 0110 0001 2345 MTLC AST0 01S',
];

test('published IBANs pass, spaces and case do not matter', () => {
  for (const iban of VALID_IBANS) {
    assert.equal(parseIban(iban), iban.replace(/ /g, ''));
    assert.equal(parseIban(iban.toLowerCase()), iban.replace(/ /g, ''));
  }
  assert.equal(formatIban('DE89370400440532013000'), 'DE89 3704 0044 0532 0130 00');
});

test('an IBAN with one character changed fails the mod-97 check', () => {
  assert.throws(() => parseIban('DE89 3704 0044 0532 0130 01'), /check digits do not match/);
  assert.throws(() => parseIban('DE88 3704 0044 0532 0130 00'), /check digits do not match/);
});

test('any single-digit substitution in a valid IBAN is caught (mod 97 detects all of them)', () => {
  fc.assert(
    fc.property(
      fc.constantFrom(...VALID_IBANS.map((iban) => iban.replace(/ /g, ''))),
      fc.nat(),
      fc.integer({ min: 1, max: 9 }),
      (iban, at, shift) => {
        const digits = [...iban].map((char, index) => (index >= 2 && /\d/.test(char) ? index : -1));
        const positions = digits.filter((index) => index >= 0);
        const position = positions[at % positions.length];
        const changed = (Number(iban[position]) + shift) % 10;
        const mutated = iban.slice(0, position) + String(changed) + iban.slice(position + 1);
        assert.notEqual(ibanRemainder(mutated), 1);
      },
    ),
  );
});

test('an IBAN of the wrong length or an unknown country is refused with the reason', () => {
  assert.throws(() => parseIban('DE89 3704 0044 0532 0130 0'), /from DE has 22 characters; this one has 21/);
  assert.throws(() => parseIban('ZZ89 3704 0044 0532 0130 00'), /ZZ is not a country that uses IBANs/);
  assert.throws(() => parseIban('12345'), BankAccountError);
  assert.throws(() => parseIban(''), BankAccountError);
});

test('ABA routing numbers: the 3-7-1 checksum', () => {
  for (const routing of ['011000015', '021000021', '110000000', '122105155']) {
    assert.equal(parseRoutingNumber(routing), routing);
  }
  assert.throws(() => parseRoutingNumber('021000022'), /not a valid ABA routing number/);
  assert.throws(() => parseRoutingNumber('02100002'), /must be 9 digits/);
  assert.throws(() => parseRoutingNumber('02100002a'), /must be 9 digits/);
});

test('US account numbers are 4 to 17 digits', () => {
  assert.equal(parseUsAccountNumber('000123456789'), '000123456789');
  assert.equal(parseUsAccountNumber('1234'), '1234');
  assert.throws(() => parseUsAccountNumber('123'), /4 to 17 digits/);
  assert.throws(() => parseUsAccountNumber('123456789012345678'), /4 to 17 digits/);
});
