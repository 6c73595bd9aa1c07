// Configuration: environment variables → one typed, validated object. A bad value stops the start
// with a message naming the variable.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseRate } from './lib/money.ts';

export type DatabaseKind = 'sqlite' | 'postgres';

export interface RateLimitConfig {
  apiKeyPerWindow: number;
  apiKeyWindowMs: number;
  publicPerWindow: number;
  publicWindowMs: number;
  loginFailures: number;
  loginWindowMs: number;
  /** Refund verification codes mailed per dashboard user per window. */
  verificationCodes: number;
  verificationCodeWindowMs: number;
}

export interface Config {
  env: 'development' | 'production' | 'test';
  host: string;
  port: number;
  publicUrl: string;
  dataDir: string;
  database:
    | { kind: 'sqlite'; file: string }
    | { kind: 'postgres'; url: string; schema: string | null; poolSize: number };
  secretKey: Buffer;
  provider: 'simulator';
  fxEurUsd: bigint;
  checkoutTtlS: number;
  simSettleDelayMs: number;
  simRefundDelayMs: number;
  syncIntervalMs: number;
  workerEnabled: boolean;
  workerPollMs: number;
  webhookRetryScheduleMs: number[];
  webhookTimeoutMs: number;
  /** How long a claimed Idempotency-Key stays locked before a retry may take it over (a dead process). */
  idempotencyLockMs: number;
  /** Days finished webhook deliveries (with their attempts) and dispatched events are kept; 0 keeps them forever. */
  retentionDays: number;
  smtpUrl: string | null;
  mailFrom: string;
  logLevel: string;
  rateLimits: RateLimitConfig;
  trustProxy: boolean;
  bodyLimit: number;
}

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be a whole number, got "${raw}".`);
  const value = Number(raw.trim());
  if (value < min || value > max)
    throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}.`);
  return value;
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}".`);
}

function oneOf<T extends string>(env: Env, name: string, values: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(values as readonly string[]).includes(raw)) {
    throw new ConfigError(`${name} must be one of ${values.join(', ')}, got "${raw}".`);
  }
  return raw as T;
}

function url(env: Env, name: string, fallback: string): string {
  const raw = env[name] || fallback;
  try {
    const parsed = new URL(raw);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('scheme');
    return raw.replace(/\/+$/, '');
  } catch {
    throw new ConfigError(`${name} must be an http(s) URL, got "${raw}".`);
  }
}

/** The key that encrypts webhook secrets: KASSA_SECRET_KEY, or one generated once into the data dir. */
function secretKey(env: Env, dataDir: string): Buffer {
  const raw = env.KASSA_SECRET_KEY;
  if (raw) {
    const key = /^[0-9a-f]{64}$/i.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64url');
    if (key.length !== 32)
      throw new ConfigError('KASSA_SECRET_KEY must be 32 bytes, as 64 hex or base64url characters.');
    return key;
  }
  const file = join(dataDir, 'secret.key');
  if (existsSync(file)) return Buffer.from(readFileSync(file, 'utf8').trim(), 'hex');
  mkdirSync(dataDir, { recursive: true });
  const key = randomBytes(32);
  writeFileSync(file, key.toString('hex'), { mode: 0o600, flag: 'wx' });
  return key;
}

function schedule(env: Env, name: string, fallback: number[]): number[] {
  const raw = env[name];
  if (!raw) return fallback;
  const parts = raw.split(',').map((part) => part.trim());
  if (parts.some((part) => !/^\d+$/.test(part))) {
    throw new ConfigError(`${name} must be a comma-separated list of milliseconds, got "${raw}".`);
  }
  return parts.map(Number);
}

/** Retries after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h: 8 attempts in all. */
export const DEFAULT_RETRY_SCHEDULE_MS = [5, 300, 1800, 7200, 18000, 36000, 36000].map((s) => s * 1000);

export function loadConfig(env: Env = process.env): Config {
  const dataDir = resolve(env.KASSA_DATA_DIR || './data');
  const databaseUrl = env.DATABASE_URL;
  let database: Config['database'];
  if (databaseUrl) {
    if (!/^postgres(ql)?:\/\//.test(databaseUrl)) {
      throw new ConfigError('DATABASE_URL must be a postgres:// URL; leave it unset for embedded SQLite.');
    }
    const schema = env.KASSA_DB_SCHEMA || null;
    if (schema !== null && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
      throw new ConfigError(`KASSA_DB_SCHEMA must be a lower-case SQL identifier, got "${schema}".`);
    }
    database = {
      kind: 'postgres',
      url: databaseUrl,
      schema,
      poolSize: int(env, 'KASSA_DB_POOL_SIZE', 10, 1, 500),
    };
  } else {
    database = { kind: 'sqlite', file: join(dataDir, 'kassa.sqlite') };
  }
  let fxEurUsd: bigint;
  try {
    fxEurUsd = parseRate(env.KASSA_FX_EUR_USD || '1.08');
  } catch {
    throw new ConfigError(`KASSA_FX_EUR_USD must be a positive decimal rate, got "${env.KASSA_FX_EUR_USD}".`);
  }
  const environment = oneOf(env, 'KASSA_ENV', ['development', 'production', 'test'] as const, 'development');
  return {
    env: environment,
    host: env.KASSA_HOST || '0.0.0.0',
    port: int(env, 'KASSA_PORT', 3000, 0, 65535),
    publicUrl: url(env, 'KASSA_PUBLIC_URL', 'http://localhost:3000'),
    dataDir,
    database,
    secretKey: secretKey(env, dataDir),
    provider: oneOf(env, 'KASSA_PROVIDER', ['simulator'] as const, 'simulator'),
    fxEurUsd,
    checkoutTtlS: int(env, 'KASSA_CHECKOUT_TTL_S', 86400, 1),
    simSettleDelayMs: int(env, 'KASSA_SIM_SETTLE_DELAY_MS', 30000),
    simRefundDelayMs: int(env, 'KASSA_SIM_REFUND_DELAY_MS', 3000),
    syncIntervalMs: int(env, 'KASSA_SYNC_INTERVAL_MS', 1000, 10),
    workerEnabled: bool(env, 'KASSA_WORKER', true),
    workerPollMs: int(env, 'KASSA_WORKER_POLL_MS', 200, 5),
    webhookRetryScheduleMs: schedule(env, 'KASSA_WEBHOOK_RETRY_SCHEDULE_MS', DEFAULT_RETRY_SCHEDULE_MS),
    webhookTimeoutMs: int(env, 'KASSA_WEBHOOK_TIMEOUT_MS', 10000, 1),
    idempotencyLockMs: int(env, 'KASSA_IDEMPOTENCY_LOCK_MS', 60000, 1),
    retentionDays: int(env, 'KASSA_RETENTION_DAYS', 30, 0, 36500),
    smtpUrl: env.KASSA_SMTP_URL || null,
    mailFrom: env.KASSA_MAIL_FROM || 'Kassa <no-reply@kassa.local>',
    logLevel: oneOf(
      env,
      'KASSA_LOG_LEVEL',
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const,
      'info',
    ),
    rateLimits: {
      apiKeyPerWindow: int(env, 'KASSA_RATE_LIMIT_API_KEY', 100, 1),
      apiKeyWindowMs: int(env, 'KASSA_RATE_LIMIT_API_KEY_WINDOW_MS', 10000, 1),
      publicPerWindow: int(env, 'KASSA_RATE_LIMIT_PUBLIC', 60, 1),
      publicWindowMs: int(env, 'KASSA_RATE_LIMIT_PUBLIC_WINDOW_MS', 60000, 1),
      loginFailures: int(env, 'KASSA_RATE_LIMIT_LOGIN_FAILURES', 10, 1),
      loginWindowMs: int(env, 'KASSA_RATE_LIMIT_LOGIN_WINDOW_MS', 900000, 1),
      verificationCodes: int(env, 'KASSA_RATE_LIMIT_VERIFICATION_CODES', 10, 1),
      verificationCodeWindowMs: int(env, 'KASSA_RATE_LIMIT_VERIFICATION_CODES_WINDOW_MS', 3600000, 1),
    },
    trustProxy: bool(env, 'KASSA_TRUST_PROXY', false),
    bodyLimit: int(env, 'KASSA_BODY_LIMIT', 1024 * 1024, 1024),
  };
}
