// Webhook verification: HMAC-SHA256 over the exact raw body bytes, compared in constant time.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { KassaSignatureVerificationError } from './errors.ts';
import type { WebhookEvent } from './types.ts';

export interface VerifyOptions {
  /** Reject deliveries whose X-Webhook-Timestamp is older than this many seconds (replay guard). */
  timestamp?: string | number | null;
  toleranceSeconds?: number;
  now?: () => number;
}

/**
 * Verifies a delivery and returns its typed event.
 * `rawBody` must be the bytes as received (a Buffer or the unparsed string), not re-serialized JSON.
 */
export function verifyWebhook(
  rawBody: string | Uint8Array,
  signatureHeader: string | null | undefined,
  secret: string,
  options: VerifyOptions = {},
): WebhookEvent {
  if (typeof rawBody !== 'string' && !(rawBody instanceof Uint8Array)) {
    throw new KassaSignatureVerificationError(
      'rawBody must be the raw request body (string or Buffer), not a parsed object: verify before JSON.parse, ' +
        'e.g. express.raw({ type: "application/json" }) or request.text().',
    );
  }
  if (!secret) throw new KassaSignatureVerificationError('No webhook secret given.');
  if (!signatureHeader) throw new KassaSignatureVerificationError('Missing X-Webhook-Signature header.');
  const match = /^sha256=([0-9a-f]{64})$/i.exec(signatureHeader.trim());
  if (!match)
    throw new KassaSignatureVerificationError('X-Webhook-Signature must look like "sha256=<64 hex digits>".');
  const bytes = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : Buffer.from(rawBody);
  const expected = createHmac('sha256', Buffer.from(secret, 'utf8')).update(bytes).digest();
  const given = Buffer.from(match[1], 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new KassaSignatureVerificationError(
      'Signature does not match: check the secret (only the newest one verifies after rotation) and that the body is unmodified.',
    );
  }
  if (
    options.timestamp !== undefined &&
    options.timestamp !== null &&
    options.toleranceSeconds !== undefined
  ) {
    const sent = Number(options.timestamp);
    const now = (options.now ?? Date.now)() / 1000;
    if (!Number.isFinite(sent) || Math.abs(now - sent) > options.toleranceSeconds) {
      throw new KassaSignatureVerificationError('X-Webhook-Timestamp is outside the allowed tolerance.');
    }
  }
  return JSON.parse(bytes.toString('utf8')) as WebhookEvent;
}

/** Signs a body as Kassa does; for receivers' own tests. */
export function signWebhook(rawBody: string | Uint8Array, secret: string): string {
  return `sha256=${createHmac('sha256', Buffer.from(secret, 'utf8')).update(rawBody).digest('hex')}`;
}
