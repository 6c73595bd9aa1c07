// Signing secrets and signatures: `whsec_` + 32 random bytes (base64url); the HMAC key is the secret
// string's UTF-8 bytes; the signature is `sha256=` + hex HMAC-SHA256 over the exact body bytes.
import { createHmac, randomBytes } from 'node:crypto';
import { constantTimeEqual, decrypt, encrypt } from '../../lib/crypto.ts';

export const SECRET_PREFIX = 'whsec_';

export function generateSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64url');
}

export function secretPreview(secret: string): string {
  return `${SECRET_PREFIX}…${secret.slice(-4)}`;
}

export function sign(secret: string, body: string | Buffer): string {
  return `sha256=${createHmac('sha256', Buffer.from(secret, 'utf8')).update(body).digest('hex')}`;
}

/** Whether `signature` (the X-Webhook-Signature header) is the signature of `body` under `secret`. */
export function verifySignature(secret: string, body: string | Buffer, signature: string): boolean {
  return constantTimeEqual(sign(secret, body), signature.trim().toLowerCase());
}

export function sealSecret(secret: string, key: Buffer): string {
  return encrypt(secret, key);
}

// Decrypting is cheap, but the delivery loop signs thousands of bodies a second with a few secrets.
const opened = new Map<string, string>();

export function openSecret(sealed: string, key: Buffer): string {
  let secret = opened.get(sealed);
  if (secret === undefined) {
    secret = decrypt(sealed, key);
    if (opened.size >= 1000) opened.clear();
    opened.set(sealed, secret);
  }
  return secret;
}
