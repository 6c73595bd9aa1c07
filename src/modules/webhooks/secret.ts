// Signing secrets and signatures. A secret is `whsec_` + standard base64 of 32 random bytes (secrets made
// before were base64url, and keep working). Two signatures go with every delivery:
// - the interface's X-Webhook-Signature: `sha256=` + hex HMAC-SHA256 over the exact body bytes, keyed with
//   the secret string's UTF-8 bytes; always the current secret's alone (it holds one signature, and the
//   interface says only the new secret verifies after a rotation);
// - Standard Webhooks' webhook-signature: `v1,` + base64 HMAC-SHA256 over "{id}.{timestamp}.{body}",
//   keyed with the bytes the secret encodes after `whsec_`; it covers the timestamp, so a receiver using
//   the standardwebhooks or svix libraries also refuses replays. During the overlap a rotation asked for
//   (previous_secret_expires_in), it also lists the previous secret's signature.
import { createHmac, createSecretKey, type KeyObject, randomBytes } from 'node:crypto';
import { constantTimeEqual, decrypt, encrypt } from '../../lib/crypto.ts';

export const SECRET_PREFIX = 'whsec_';

export function generateSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64');
}

export function secretPreview(secret: string): string {
  return `${SECRET_PREFIX}…${secret.slice(-4)}`;
}

// Keys made once per secret and kept (secrets are few; deliveries are many): Node 24.21 imports a Buffer
// key anew on every HMAC, six times the cost of the HMAC (see keyObject in lib/crypto.ts), and a string
// key is converted and imported at every call too (an HMAC of a delivery's body in a loop: 4.6 µs with
// the string, 2.9 µs with a KeyObject).
const signingKeys = new Map<string, KeyObject>();
const standardKeys = new Map<string, KeyObject>();

function cachedKey(cache: Map<string, KeyObject>, secret: string, bytes: () => Buffer): KeyObject {
  let key = cache.get(secret);
  if (key === undefined) {
    key = createSecretKey(bytes());
    if (cache.size >= 1000) cache.clear();
    cache.set(secret, key);
  }
  return key;
}

/** The X-Webhook-Signature of `body`: keyed with the secret string's UTF-8 bytes. */
export function sign(secret: string, body: string | Buffer): string {
  const key = cachedKey(signingKeys, secret, () => Buffer.from(secret, 'utf8'));
  return `sha256=${createHmac('sha256', key).update(body).digest('hex')}`;
}

/** The key of the Standard Webhooks signature: the secret's bytes (Node decodes either base64 alphabet). */
function standardKey(secret: string): KeyObject {
  return cachedKey(standardKeys, secret, () =>
    Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64'),
  );
}

function standardSignature(secret: string, signed: string): string {
  return `v1,${createHmac('sha256', standardKey(secret)).update(signed).digest('base64')}`;
}

/**
 * The Standard Webhooks headers of one attempt: webhook-id, webhook-timestamp, webhook-signature. With
 * `previous` (a rotation's overlap the merchant asked for), webhook-signature lists a second `v1,`
 * entry made with it, after the current secret's: receivers accept a delivery when any entry verifies.
 */
export function standardWebhookHeaders(
  secret: string,
  id: string,
  timestamp: number,
  body: string,
  previous: string | null = null,
): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  const signed = `${id}.${timestamp}.${body}`;
  const current = standardSignature(secret, signed);
  const signature = previous === null ? current : `${current} ${standardSignature(previous, signed)}`;
  return { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signature };
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
