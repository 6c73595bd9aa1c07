// The simulator's provider-webhook endpoint is public, so its calls are signed: Kassa-Signature:
// t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">, keyed with HKDF-SHA256(KASSA_SECRET_KEY,
// info "kassa simulator webhook"), a key of its own rather than the encryption key itself. A signature
// more than 5 minutes from now is refused (a captured call cannot be replayed later).
import { createHmac, createSecretKey, hkdfSync, type KeyObject } from 'node:crypto';
import { constantTimeEqual } from '../../lib/crypto.ts';

export const SIGNATURE_HEADER = 'kassa-signature';
export const SIGNATURE_TOLERANCE_S = 300;

const keys = new WeakMap<Buffer, KeyObject>();

function signingKey(secretKey: Buffer): KeyObject {
  let key = keys.get(secretKey);
  if (key === undefined) {
    key = createSecretKey(
      Buffer.from(hkdfSync('sha256', secretKey, Buffer.alloc(0), 'kassa simulator webhook', 32)),
    );
    keys.set(secretKey, key);
  }
  return key;
}

function digest(secretKey: Buffer, timestamp: number, body: string): string {
  return createHmac('sha256', signingKey(secretKey)).update(`${timestamp}.${body}`).digest('hex');
}

/** The Kassa-Signature header value for `body` (what a caller of the endpoint sends). */
export function signSimulatorWebhook(secretKey: Buffer, body: string, nowS: number): string {
  return `t=${nowS},v1=${digest(secretKey, nowS, body)}`;
}

/** Why a Kassa-Signature header does not vouch for `body`, or null when it does. */
export function simulatorSignatureProblem(
  secretKey: Buffer,
  header: string | string[] | undefined,
  body: string,
  nowS: number,
): string | null {
  if (typeof header !== 'string' || header === '') return 'is missing';
  const parts = new Map(header.split(',').map((part) => part.trim().split('=', 2) as [string, string]));
  const timestamp = Number(parts.get('t'));
  const signature = parts.get('v1');
  if (!Number.isSafeInteger(timestamp) || !signature) return 'must be t=<unix seconds>,v1=<hex HMAC>';
  if (Math.abs(nowS - timestamp) > SIGNATURE_TOLERANCE_S) return 'is too old (or from the future)';
  return constantTimeEqual(digest(secretKey, timestamp, body), signature.toLowerCase())
    ? null
    : 'does not match the body';
}
