// TOTP (RFC 6238: HMAC-SHA1, 30-second steps, 6 digits) through the otpauth library: no base32 or HOTP of
// our own. A code is accepted for the current step and one step either side (clock drift), and verify()
// returns the step it matched so the caller can refuse that step a second time (replay).
import { Secret, TOTP } from 'otpauth';

export const TOTP_PERIOD_S = 30;
export const TOTP_DIGITS = 6;
const WINDOW = 1;

function totpOf(secretBase32: string, label = '', issuer = 'Kassa'): TOTP {
  return new TOTP({
    issuer,
    label,
    algorithm: 'SHA1',
    digits: TOTP_DIGITS,
    period: TOTP_PERIOD_S,
    secret: Secret.fromBase32(secretBase32),
  });
}

/** A fresh 160-bit secret, base32 (what authenticator apps take). */
export function newTotpSecret(): string {
  return new Secret({ size: 20 }).base32;
}

/** The otpauth:// URI an authenticator app scans (as a QR code). */
export function totpUri(secretBase32: string, account: string, issuer: string): string {
  return totpOf(secretBase32, account, issuer).toString();
}

/** The code for a time (tests and the dashboard's own checks use the library the same way). */
export function totpCode(secretBase32: string, at: Date): string {
  return totpOf(secretBase32).generate({ timestamp: at.getTime() });
}

/** The step a six-digit code matches within ±1 step of `at`, or null. */
export function matchTotp(secretBase32: string, code: string, at: Date): number | null {
  if (!/^\d{6}$/.test(code)) return null;
  const delta = totpOf(secretBase32).validate({ token: code, timestamp: at.getTime(), window: WINDOW });
  if (delta === null) return null;
  return Math.floor(at.getTime() / 1000 / TOTP_PERIOD_S) + delta;
}
