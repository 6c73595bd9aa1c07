// Webhook verification over the exact raw body bytes, compared in constant time. Kassa signs every
// delivery twice:
//   - the interface's signature, `X-Webhook-Signature: sha256=<hex HMAC-SHA256 of the body>`, keyed
//     with the whole secret string's UTF-8 bytes (with `X-Webhook-Timestamp`, unsigned);
//   - Standard Webhooks, `webhook-signature: v1,<base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}">`,
//     keyed with the base64-decoded part of the secret after `whsec_`. The timestamp is signed, so a
//     replay of an old delivery is refused by the tolerance. During the overlap a secret rotation may
//     ask for (`previous_secret_expires_in`, up to 7 days), the header lists a second entry signed
//     with the secret the rotation replaced, so either secret verifies it; X-Webhook-Signature stays
//     the newest secret's alone.
// Given headers, verifyWebhook requires the Standard Webhooks signature: falling back to the body-only
// signature would let anyone who captured one delivery replay it with a fresh, unsigned
// X-Webhook-Timestamp and a new X-Webhook-Delivery-Id. The body-only check stays available, on
// purpose and without replay protection, through the string form (the X-Webhook-Signature value).
import { createHmac, timingSafeEqual } from 'node:crypto';
import { KassaSignatureVerificationError } from './errors.ts';
import type { WebhookEvent } from './types.ts';

/** Node's `request.headers`, a fetch `Headers`, or any object of header names to values. */
export type WebhookHeaders =
  | { get(name: string): string | null }
  | Record<string, string | string[] | undefined>;

export interface VerifyOptions {
  /**
   * Refuse deliveries whose signed `webhook-timestamp` is further than this from now. Default 300
   * seconds; `Infinity` turns the check off. With the string form it applies to `timestamp` below.
   */
  toleranceSeconds?: number;
  /**
   * String form only: the delivery's X-Webhook-Timestamp, checked against `toleranceSeconds` when both
   * are given. That header is not signed, so this catches stale clocks, not replays.
   */
  timestamp?: string | number | null;
  /** The clock, in milliseconds (for tests). */
  now?: () => number;
}

const DEFAULT_TOLERANCE_S = 300;

function fail(message: string): never {
  throw new KassaSignatureVerificationError(message);
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof headers.get === 'function')
    return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(record).find((candidate) => candidate.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? value[0] : value;
}

function bodyBytes(rawBody: unknown): Buffer {
  if (typeof rawBody === 'string') return Buffer.from(rawBody, 'utf8');
  if (rawBody instanceof Uint8Array)
    return Buffer.from(rawBody.buffer, rawBody.byteOffset, rawBody.byteLength);
  return fail(
    'rawBody must be the raw request body (string or Buffer), not a parsed object: verify before JSON.parse, ' +
      'e.g. express.raw({ type: "application/json" }) or await request.text().',
  );
}

function sameBytes(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

function checkTimestamp(raw: string, name: string, options: VerifyOptions): void {
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_S;
  if (!/^\d{1,12}$/.test(raw.trim())) fail(`${name} must be Unix time in seconds, got "${raw}".`);
  const now = (options.now ?? Date.now)() / 1000;
  if (Math.abs(now - Number(raw)) > tolerance) {
    fail(
      `${name} is more than ${tolerance} seconds from now: refused as a possible replay (check the clock).`,
    );
  }
}

/** The HMAC key of the Standard Webhooks signature: the base64 after `whsec_`. */
function standardKey(secret: string): Buffer {
  const encoded = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  const key = Buffer.from(encoded, 'base64');
  if (key.length === 0) fail('The webhook secret is not "whsec_" followed by base64.');
  return key;
}

/**
 * The interface's signature: `sha256=<hex>` over the body, keyed with the secret string. It covers the
 * body only, so it cannot tell a replay from a delivery; prefer verifyWebhook with the headers. It is
 * always the newest secret's, even during a rotation's overlap.
 */
export function verifyInterfaceSignature(body: Buffer, signature: string | undefined, secret: string): void {
  if (!signature) fail('Missing X-Webhook-Signature header.');
  const match = /^sha256=([0-9a-f]{64})$/i.exec(signature.trim());
  if (!match) fail('X-Webhook-Signature must look like "sha256=<64 hex digits>".');
  const expected = createHmac('sha256', secret).update(body).digest();
  if (!sameBytes(Buffer.from(match[1], 'hex'), expected)) {
    fail(
      'Signature does not match: check the secret (X-Webhook-Signature is signed with the newest secret only, ' +
        "also during a rotation's overlap, when only webhook-signature carries the previous secret's) and that " +
        'the body is unmodified.',
    );
  }
}

/**
 * Standard Webhooks: any `v1,<base64>` of the space-separated list over "{id}.{timestamp}.{body}" (two
 * entries during a rotation's overlap: the newest secret's and the previous one's).
 */
export function verifyStandardSignature(
  body: Buffer,
  headers: WebhookHeaders,
  secret: string,
  options: VerifyOptions = {},
): void {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures)
    fail('Missing webhook-id, webhook-timestamp or webhook-signature header.');
  checkTimestamp(timestamp, 'webhook-timestamp', options);
  const expected = createHmac('sha256', standardKey(secret))
    .update(`${id}.${timestamp}.`)
    .update(body)
    .digest();
  const matches = signatures
    .split(' ')
    .map((entry) => entry.trim())
    .filter((entry) => entry.startsWith('v1,'))
    .some((entry) => sameBytes(Buffer.from(entry.slice(3), 'base64'), expected));
  if (!matches) {
    fail(
      'webhook-signature does not match: check the secret (after a rotation the newest one verifies, and the ' +
        'previous one too until the overlap the rotation asked for ends) and that the body is unmodified.',
    );
  }
}

/**
 * Verifies a delivery and returns its typed event. `rawBody` must be the bytes as received (a Buffer
 * or the unparsed string), never re-serialized JSON.
 *
 * With the request's headers, it requires the Standard Webhooks signature, which Kassa sends on every
 * delivery (id and timestamp signed, timestamp within the tolerance): a delivery without
 * `webhook-signature` is refused, whatever its X-Webhook-Signature, because that signature covers the
 * body only and a captured delivery replayed with fresh X-Webhook-* headers would pass it.
 * Given the X-Webhook-Signature value itself instead of the headers, it checks that body-only
 * signature and nothing else: no replay protection (the timestamp only when `options.timestamp` and
 * `options.toleranceSeconds` are given, and that header is unsigned). Deduplicate on the delivery id.
 * After a secret rotation that asked for an overlap, the headers form accepts the previous secret too
 * until the overlap ends; the string form accepts only the newest.
 */
export function verifyWebhook(
  rawBody: string | Uint8Array,
  headersOrSignature: WebhookHeaders | string | null | undefined,
  secret: string,
  options: VerifyOptions = {},
): WebhookEvent {
  const body = bodyBytes(rawBody);
  if (!secret) fail('No webhook secret given.');
  if (
    headersOrSignature === null ||
    headersOrSignature === undefined ||
    typeof headersOrSignature === 'string'
  ) {
    verifyInterfaceSignature(body, headersOrSignature ?? undefined, secret);
    if (
      options.timestamp !== undefined &&
      options.timestamp !== null &&
      options.toleranceSeconds !== undefined
    )
      checkTimestamp(String(options.timestamp), 'X-Webhook-Timestamp', options);
  } else {
    if (!header(headersOrSignature, 'webhook-signature')) {
      fail(
        'Missing webhook-signature header: Kassa signs every delivery with the Standard Webhooks headers ' +
          '(webhook-id, webhook-timestamp, webhook-signature), the only signature that refuses replays. ' +
          'Forward them unchanged; to check the body-only X-Webhook-Signature instead, without replay ' +
          'protection, pass its value as the second argument.',
      );
    }
    verifyStandardSignature(body, headersOrSignature, secret, options);
  }
  try {
    return JSON.parse(body.toString('utf8')) as WebhookEvent;
  } catch {
    return fail('The body verified but is not JSON.');
  }
}

/** Signs a body as Kassa's X-Webhook-Signature does; for receivers' own tests. */
export function signWebhook(rawBody: string | Uint8Array, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(rawBody).digest('hex')}`;
}

/** The Standard Webhooks headers Kassa would send for `rawBody`; for receivers' own tests. */
export function signStandardWebhook(
  rawBody: string | Uint8Array,
  secret: string,
  id: string,
  timestamp: number = Math.floor(Date.now() / 1000),
): { 'webhook-id': string; 'webhook-timestamp': string; 'webhook-signature': string } {
  const signature = createHmac('sha256', standardKey(secret))
    .update(`${id}.${timestamp}.`)
    .update(rawBody)
    .digest('base64');
  return { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': `v1,${signature}` };
}
