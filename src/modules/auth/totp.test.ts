// TOTP against RFC 6238's test vectors (Appendix B, SHA-1) and against an independent implementation
// written here with node:crypto (RFC 4226 dynamic truncation, RFC 4648 base32), so a wrong parameter in
// our wrapper (period, digits, algorithm, window) or in the library would show.
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { Secret, TOTP } from 'otpauth';
import { matchTotp, newTotpSecret, totpCode, totpUri } from './totp.ts';

const RFC_SECRET = '12345678901234567890';
const RFC_VECTORS: [number, string][] = [
  [59, '94287082'],
  [1111111109, '07081804'],
  [1111111111, '14050471'],
  [1234567890, '89005924'],
  [2000000000, '69279037'],
  [20000000000, '65353130'],
];

/** The reference: HOTP(K, floor(T / 30)) with HMAC-SHA1 and dynamic truncation (RFC 4226 §5.3). */
function referenceTotp(key: Buffer, unixSeconds: number, digits: number): string {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(unixSeconds / 30)));
  const mac = createHmac('sha1', key).update(counter).digest();
  const offset = mac[mac.length - 1] & 0x0f;
  const binary = mac.readUInt32BE(offset) & 0x7fffffff;
  return String(binary % 10 ** digits).padStart(digits, '0');
}

function base32Decode(text: string): Buffer {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = '';
  for (const char of text.replace(/=+$/, '').toUpperCase()) {
    const value = alphabet.indexOf(char);
    assert.ok(value >= 0, `base32 character ${char}`);
    bits += value.toString(2).padStart(5, '0');
  }
  const bytes: number[] = [];
  for (let i = 0; i + 8 <= bits.length; i += 8) bytes.push(Number.parseInt(bits.slice(i, i + 8), 2));
  return Buffer.from(bytes);
}

test('the reference implementation and the otpauth library both give RFC 6238 Appendix B (SHA-1)', () => {
  const totp = new TOTP({ algorithm: 'SHA1', digits: 8, period: 30, secret: Secret.fromUTF8(RFC_SECRET) });
  for (const [seconds, expected] of RFC_VECTORS) {
    assert.equal(referenceTotp(Buffer.from(RFC_SECRET), seconds, 8), expected, `reference at T=${seconds}`);
    assert.equal(totp.generate({ timestamp: seconds * 1000 }), expected, `otpauth at T=${seconds}`);
  }
});

test('our six-digit codes equal the reference implementation for random secrets and times', () => {
  for (let i = 0; i < 200; i++) {
    const secret = i === 0 ? newTotpSecret() : new Secret({ buffer: randomBytes(20).buffer }).base32;
    const seconds = Math.floor(Math.random() * 4_000_000_000);
    const at = new Date(seconds * 1000);
    assert.equal(
      totpCode(secret, at),
      referenceTotp(base32Decode(secret), seconds, 6),
      `${secret} at ${seconds}`,
    );
  }
});

test('a code matches its own step and one step either side, and reports the step it matched', () => {
  const secret = newTotpSecret();
  const key = base32Decode(secret);
  const seconds = 1_700_000_000;
  const step = Math.floor(seconds / 30);
  const at = new Date(seconds * 1000);
  assert.equal(matchTotp(secret, referenceTotp(key, seconds, 6), at), step);
  assert.equal(matchTotp(secret, referenceTotp(key, seconds - 30, 6), at), step - 1);
  assert.equal(matchTotp(secret, referenceTotp(key, seconds + 30, 6), at), step + 1);
  for (const far of [seconds - 90, seconds + 90]) {
    const code = referenceTotp(key, far, 6);
    // A far code may collide with a near one by chance (1 in 10^6 per step); skip that case.
    if ([-30, 0, 30].some((d) => referenceTotp(key, seconds + d, 6) === code)) continue;
    assert.equal(matchTotp(secret, code, at), null, `a code from ${far - seconds} s away is refused`);
  }
  assert.equal(matchTotp(secret, '12345', at), null, 'five digits');
  assert.equal(matchTotp(secret, 'abcdef', at), null, 'not digits');
});

test('the otpauth URI names the issuer and the account, with the secret and the RFC parameters', () => {
  const secret = newTotpSecret();
  const uri = new URL(totpUri(secret, 'owner@acme.test', 'Kassa (Acme)'));
  assert.equal(uri.protocol, 'otpauth:');
  assert.equal(uri.host, 'totp');
  assert.equal(decodeURIComponent(uri.pathname), '/Kassa (Acme):owner@acme.test');
  assert.equal(uri.searchParams.get('secret'), secret);
  assert.equal(uri.searchParams.get('issuer'), 'Kassa (Acme)');
  assert.equal(uri.searchParams.get('algorithm'), 'SHA1');
  assert.equal(uri.searchParams.get('digits'), '6');
  assert.equal(uri.searchParams.get('period'), '30');
  assert.equal(base32Decode(secret).length, 20, '160-bit secret');
});
