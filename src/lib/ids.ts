// Identifiers: prefixed public ids from one prefix map, random tokens, UUIDs.
import { createHash, randomBytes, randomFillSync, randomUUID } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

// Random bytes come from the system CSPRNG 4 KiB at a time (as Node's randomUUID does): a syscall per
// id or token showed in the benchmark's profile. Each byte is handed out once and the pool is wiped as it goes.
const POOL_SIZE = 4096;
const pool = Buffer.alloc(POOL_SIZE);
let poolOffset = POOL_SIZE;

/** `length` fresh random bytes (a copy: the pool's own bytes are zeroed once handed out). */
function secureRandomBytes(length: number): Buffer {
  if (length > POOL_SIZE) return randomBytes(length);
  if (poolOffset + length > POOL_SIZE) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const out = Buffer.from(pool.subarray(poolOffset, poolOffset + length));
  pool.fill(0, poolOffset, poolOffset + length);
  poolOffset += length;
  return out;
}

/** Uniform base62 string from the system CSPRNG (rejection sampling, no modulo bias). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const bytes = secureRandomBytes(length * 2);
    for (const byte of bytes) {
      if (byte < 248) out += BASE62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

export const ID_PREFIX = {
  payment: { prefix: 'TX', length: 16 },
  refund: { prefix: 'RF', length: 16 },
  payout: { prefix: 'PO', length: 16 },
  checkout: { prefix: 'CO', length: 20 },
  product: { prefix: 'prod_', length: 14 },
  destination: { prefix: 'ba_', length: 16 },
  plan: { prefix: 'plan_', length: 14 },
  subscription: { prefix: 'SU', length: 16 },
} as const;

export type IdKind = keyof typeof ID_PREFIX;

export function newPublicId(kind: IdKind): string {
  const { prefix, length } = ID_PREFIX[kind];
  return prefix + randomBase62(length);
}

export function isPublicId(kind: IdKind, value: string): boolean {
  const { prefix, length } = ID_PREFIX[kind];
  return (
    value.length === prefix.length + length &&
    value.startsWith(prefix) &&
    /^[0-9A-Za-z]+$/.test(value.slice(prefix.length))
  );
}

/** 256 random bits, base64url: session tokens, checkout tokens. */
export function newToken(): string {
  return secureRandomBytes(32).toString('base64url');
}

export function newUuid(): string {
  return randomUUID();
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

export function sha256Hex(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

/** A numeric id as written in a path: digits only, positive, within the safe integer range. */
export function parseNumericId(value: string): number | null {
  if (!/^\d{1,15}$/.test(value)) return null;
  const id = Number(value);
  return id > 0 ? id : null;
}
