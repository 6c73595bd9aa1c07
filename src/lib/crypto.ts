// Password hashing, constant-time comparison and at-rest encryption, all from node:crypto.
import {
  createCipheriv,
  createDecipheriv,
  createSecretKey,
  type KeyObject,
  randomBytes,
  scrypt,
  timingSafeEqual,
} from 'node:crypto';
import { HashQueue } from './hash-queue.ts';

// OWASP's scrypt settings come in equal-strength pairs; Kassa uses N=2^14, r=8, p=5, which costs as much CPU
// as N=2^17, p=1 but holds 16 MiB per hash instead of 128 MiB, so a burst of logins cannot balloon the
// server's memory. Hashes go through one bounded queue (lib/hash-queue.ts): at most HASH_CONCURRENCY run at
// once (which leaves libuv's other threads to file and DNS work), at most HASH_MAX_WAITING wait, and one
// client address holds at most HASH_MAX_PER_KEY places; past those bounds a hash is refused at once.
// KASSA_SCRYPT_LOG_N (test suites only) swaps in N=2^value with p=1. Each stored hash records its own N, r
// and p, so hashes made under any setting verify.
const TEST_LOG_N = Number(process.env.KASSA_SCRYPT_LOG_N);
const SCRYPT =
  TEST_LOG_N >= 10 && TEST_LOG_N <= 17
    ? { N: 2 ** TEST_LOG_N, r: 8, p: 1, keyLength: 32 }
    : { N: 2 ** 14, r: 8, p: 5, keyLength: 32 };
const MAX_MEMORY = 256 * 1024 * 1024;
const HASH_CONCURRENCY = 2;
const HASH_MAX_WAITING = 16;
const HASH_MAX_PER_KEY = 4;

export const hashQueue = new HashQueue(HASH_CONCURRENCY, HASH_MAX_WAITING, HASH_MAX_PER_KEY);

/**
 * Password checks in progress, each from the count of its try in the database (auth/password-tries.ts)
 * to the end of its hash, bounded like the hash queue's line: HASH_MAX_PER_KEY per client address, and
 * as many in all as the queue runs and holds waiting. Past that a check is refused at once, before it
 * reaches the database: a flood from one address would otherwise hold the connection pool (on SQLite,
 * the one connection) while its counts wait on that address's row, and every other login behind it.
 */
export const passwordChecks = new HashQueue(HASH_CONCURRENCY + HASH_MAX_WAITING, 0, HASH_MAX_PER_KEY);

function scryptAsync(
  queueKey: string | null,
  password: string,
  salt: Buffer,
  N: number,
  r: number,
  p: number,
  keyLength: number,
): Promise<Buffer> {
  return hashQueue.run(
    queueKey,
    () =>
      new Promise((resolve, reject) => {
        scrypt(password, salt, keyLength, { N, r, p, maxmem: MAX_MEMORY }, (error, key) =>
          error ? reject(error) : resolve(key),
        );
      }),
  );
}

/** `queueKey` (the client's address) bounds one client's share of the hash queue; null for operator commands. */
export async function hashPassword(password: string, queueKey: string | null = null): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptAsync(queueKey, password, salt, SCRYPT.N, SCRYPT.r, SCRYPT.p, SCRYPT.keyLength);
  return ['scrypt', SCRYPT.N, SCRYPT.r, SCRYPT.p, salt.toString('base64url'), key.toString('base64url')].join(
    '$',
  );
}

/** Throws HashQueueFullError (before any waiting) when the queue refuses the check. */
export async function verifyPassword(
  password: string,
  stored: string,
  queueKey: string | null = null,
): Promise<boolean> {
  const [scheme, n, r, p, salt, expected] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !expected) return false;
  const expectedKey = Buffer.from(expected, 'base64url');
  const key = await scryptAsync(
    queueKey,
    password,
    Buffer.from(salt, 'base64url'),
    Number(n),
    Number(r),
    Number(p),
    expectedKey.length,
  );
  return timingSafeEqual(key, expectedKey);
}

/** A hash that burns the same time as a real check, so unknown emails cannot be told apart by timing. */
export const DUMMY_PASSWORD_HASH = `scrypt$${SCRYPT.N}$${SCRYPT.r}$${SCRYPT.p}$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA`;

export function constantTimeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'utf8');
  const right = Buffer.from(b, 'utf8');
  if (left.length !== right.length) {
    timingSafeEqual(left, left);
    return false;
  }
  return timingSafeEqual(left, right);
}

const keyObjects = new WeakMap<Buffer, KeyObject>();

/**
 * The key as a KeyObject, made once per key buffer. Node 24.21 imports a Buffer key anew on every
 * cipher or HMAC it is given to, which costs 5 to 7 times the operation itself (an HMAC-SHA256 of 600
 * bytes: 19 µs with a Buffer key, 3 µs with a KeyObject or a string; AES-256-GCM of a token: 24 µs
 * against 7 µs); 24.9 did not. Keys are long-lived (the configuration's), so they are imported once.
 */
export function keyObject(key: Buffer): KeyObject {
  let object = keyObjects.get(key);
  if (object === undefined) {
    object = createSecretKey(key);
    keyObjects.set(key, object);
  }
  return object;
}

/** AES-256-GCM; output is iv.tag.ciphertext in base64url. */
export function encrypt(plain: string, key: Buffer): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyObject(key), iv);
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return [iv, cipher.getAuthTag(), body].map((part) => part.toString('base64url')).join('.');
}

export function decrypt(sealed: string, key: Buffer): string {
  const [iv, tag, body] = sealed.split('.').map((part) => Buffer.from(part, 'base64url'));
  const decipher = createDecipheriv('aes-256-gcm', keyObject(key), iv);
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
}
