// Configuration: environment variables → one typed, validated object. A bad value stops the start
// with a message naming the variable.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join, resolve } from 'node:path';
import { ensurePrivateDir } from './db/private-files.ts';
import { parseRate } from './lib/money.ts';

export type DatabaseKind = 'sqlite' | 'postgres';

export interface RateLimitConfig {
  apiKeyPerWindow: number;
  apiKeyWindowMs: number;
  publicPerWindow: number;
  publicWindowMs: number;
  /**
   * Failed password checks per account from one address per window (and wrong codes per account). The
   * two below never refuse an account from an address it has a session from (auth/password-tries.ts).
   */
  loginFailures: number;
  loginWindowMs: number;
  /** Failed password checks per account from any address per window. */
  loginFailuresPerAccount: number;
  /** Failed password checks from one address for any account per window. */
  loginFailuresPerAddress: number;
  /** Refund verification codes mailed per dashboard user per window. */
  verificationCodes: number;
  verificationCodeWindowMs: number;
  /** Declined card attempts per client address per hour, across checkouts (card testing); over it → 429. */
  declinesPerAddress: number;
}

export interface Config {
  env: 'development' | 'production' | 'test';
  host: string;
  port: number;
  publicUrl: string;
  dataDir: string;
  database:
    | { kind: 'sqlite'; file: string }
    | { kind: 'postgres'; url: string; schema: string | null; poolSize: number; namedStatements: boolean };
  secretKey: Buffer;
  /** Production's provider; the sandbox always uses the simulator. */
  provider: 'simulator' | 'stripe';
  fxEurUsd: bigint;
  checkoutTtlS: number;
  simSettleDelayMs: number;
  simRefundDelayMs: number;
  syncIntervalMs: number;
  workerEnabled: boolean;
  /**
   * The webhook worker's safety poll while idle. Commits wake it (in the process, by NOTIFY on
   * PostgreSQL, by the write-ahead log's watch on SQLite), so the poll only catches a crashed worker's
   * expired leases (already 15 s late) and retries a dead process had scheduled: 5 s is soon enough,
   * and each poll of an idle service costs about 1 ms of CPU on PostgreSQL (docs/performance.md).
   */
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
  /** false, a hop count, or the addresses/CIDRs of the proxies whose X-Forwarded-For is believed. */
  trustProxy: false | number | string[];
  bodyLimit: number;
  /** Webhook endpoints on loopback/private/reserved addresses allowed (development and tests only). */
  webhookAllowPrivate: boolean;
  /** How long a checkout started from a payment link stays open (its use is reserved meanwhile). */
  linkCheckoutTtlS: number;
  /** Which variable set the port (KASSA_PORT or PORT), for the message when the port is taken. */
  portVariable: 'KASSA_PORT' | 'PORT';
  /** Whether KASSA_PUBLIC_URL was given; when not, a server started on port 0 points it at the port it got. */
  publicUrlExplicit: boolean;
  /** KASSA_ALLOW_SIMULATOR: production may run on the simulator (its payments are marked simulated). */
  allowSimulator: boolean;
  stripe: StripeConfig;
  /** Tests only: the simulator records a successful charge and then fails to answer. */
  simFault: 'timeout_after_success' | null;
  /** How long one provider call may take before its outcome is unknown. */
  providerTimeoutMs: number;
  /** When the reconciler reads an unknown provider call again, counted from the call; then it flags it. */
  reconcileScheduleMs: number[];
  /** Tests only (KASSA_ENV=test): SIGKILL the process at this point of a provider call. */
  testCrashAt: 'operation-recorded' | 'provider-answered' | null;
}

export interface StripeConfig {
  secretKey: string | null;
  publishableKey: string | null;
  webhookSecret: string | null;
  /** https://api.stripe.com, or another URL the SDK is pointed at (protocol, host, port). */
  apiUrl: string;
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

function optionalOneOf<T extends string>(env: Env, name: string, values: readonly T[]): T | null {
  return env[name] ? oneOf(env, name, values, values[0]) : null;
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
  ensurePrivateDir(dataDir);
  if (existsSync(file)) return Buffer.from(readFileSync(file, 'utf8').trim(), 'hex');
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

const PROXY_KEYWORDS = new Set(['loopback', 'linklocal', 'uniquelocal']);

/**
 * KASSA_TRUST_PROXY: unset or false trusts no proxy; a whole number is how many proxies stand in front
 * (the client is the address the outermost of them saw); otherwise a comma-separated list of proxy
 * addresses or CIDRs. `true` is refused: it would believe any X-Forwarded-For a client sends.
 */
function trustProxy(env: Env): false | number | string[] {
  const raw = env.KASSA_TRUST_PROXY?.trim();
  if (!raw || /^(0|false|no|off)$/i.test(raw)) return false;
  if (/^(true|yes|on)$/i.test(raw)) {
    throw new ConfigError(
      'KASSA_TRUST_PROXY=true would trust any X-Forwarded-For a client sends; give the hop count (the number of proxies in front of Kassa) or their addresses/CIDRs, comma-separated.',
    );
  }
  if (/^\d+$/.test(raw)) return int(env, 'KASSA_TRUST_PROXY', 0, 1, 16);
  const entries = raw.split(',').map((entry) => entry.trim());
  for (const entry of entries) {
    const [address, prefix, extra] = entry.split('/');
    const family = isIP(address);
    const maxPrefix = family === 6 ? 128 : 32;
    const validPrefix = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= maxPrefix);
    if (!PROXY_KEYWORDS.has(entry) && (family === 0 || !validPrefix || extra !== undefined)) {
      throw new ConfigError(
        `KASSA_TRUST_PROXY must be a hop count or a comma-separated list of proxy addresses/CIDRs; "${entry}" is neither.`,
      );
    }
  }
  return entries;
}

/** Retries after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h: 8 attempts in all. */
/** Reads of an unknown provider call: 1 min, 5 min, 1 h, 6 h, 20 h after it; then it is flagged for review. */
export const DEFAULT_RECONCILE_SCHEDULE_MS = [60, 300, 3600, 21600, 72000].map((s) => s * 1000);

function optional(env: Env, name: string, prefixes: string[]): string | null {
  const raw = env[name];
  if (raw === undefined || raw === '') return null;
  if (!prefixes.some((prefix) => raw.startsWith(prefix))) {
    throw new ConfigError(`${name} must start with ${prefixes.join(' or ')}.`);
  }
  return raw;
}

export const DEFAULT_RETRY_SCHEDULE_MS = [5, 300, 1800, 7200, 18000, 36000, 36000].map((s) => s * 1000);

function simFault(env: Env, environment: Config['env']): Config['simFault'] {
  const fault = optionalOneOf(env, 'KASSA_SIM_FAULT', ['timeout_after_success'] as const);
  if (fault !== null && environment === 'production') {
    throw new ConfigError('KASSA_SIM_FAULT is for tests only and may not be set with KASSA_ENV=production.');
  }
  return fault;
}

/**
 * The port to listen on: KASSA_PORT wins; PORT (what platforms such as Heroku or Render set) applies
 * when it is unset; else 3000.
 */
export function listenPort(env: Env): { port: number; portVariable: Config['portVariable'] } {
  const portVariable = env.KASSA_PORT ? 'KASSA_PORT' : env.PORT ? 'PORT' : 'KASSA_PORT';
  return { port: int(env, portVariable, 3000, 0, 65535), portVariable };
}

/** KASSA_PUBLIC_URL, else http://localhost:{the port the service listens on}. */
export function publicUrlOf(env: Env): string {
  return url(env, 'KASSA_PUBLIC_URL', `http://localhost:${listenPort(env).port}`);
}

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
      namedStatements: bool(env, 'KASSA_DB_NAMED_STATEMENTS', true),
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
  const { port, portVariable } = listenPort(env);
  return {
    env: environment,
    host: env.KASSA_HOST || env.HOST || '0.0.0.0',
    port,
    publicUrl: publicUrlOf(env),
    dataDir,
    database,
    secretKey: secretKey(env, dataDir),
    provider: oneOf(env, 'KASSA_PROVIDER', ['simulator', 'stripe'] as const, 'simulator'),
    fxEurUsd,
    checkoutTtlS: int(env, 'KASSA_CHECKOUT_TTL_S', 86400, 1),
    simSettleDelayMs: int(env, 'KASSA_SIM_SETTLE_DELAY_MS', 30000),
    simRefundDelayMs: int(env, 'KASSA_SIM_REFUND_DELAY_MS', 3000),
    syncIntervalMs: int(env, 'KASSA_SYNC_INTERVAL_MS', 1000, 10),
    workerEnabled: bool(env, 'KASSA_WORKER', true),
    workerPollMs: int(env, 'KASSA_WORKER_POLL_MS', 5000, 5),
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
      loginFailuresPerAccount: int(env, 'KASSA_RATE_LIMIT_LOGIN_FAILURES_PER_ACCOUNT', 100, 1),
      loginFailuresPerAddress: int(env, 'KASSA_RATE_LIMIT_LOGIN_FAILURES_PER_ADDRESS', 100, 1),
      verificationCodes: int(env, 'KASSA_RATE_LIMIT_VERIFICATION_CODES', 10, 1),
      verificationCodeWindowMs: int(env, 'KASSA_RATE_LIMIT_VERIFICATION_CODES_WINDOW_MS', 3600000, 1),
      declinesPerAddress: int(env, 'KASSA_RATE_LIMIT_DECLINES_PER_ADDRESS', 20, 1),
    },
    trustProxy: trustProxy(env),
    bodyLimit: int(env, 'KASSA_BODY_LIMIT', 1024 * 1024, 1024),
    webhookAllowPrivate: bool(env, 'KASSA_WEBHOOK_ALLOW_PRIVATE', false),
    linkCheckoutTtlS: int(env, 'KASSA_LINK_CHECKOUT_TTL_S', 1800, 1),
    portVariable,
    publicUrlExplicit: Boolean(env.KASSA_PUBLIC_URL),
    allowSimulator: bool(env, 'KASSA_ALLOW_SIMULATOR', false),
    stripe: {
      secretKey: optional(env, 'KASSA_STRIPE_SECRET_KEY', ['sk_', 'rk_']),
      publishableKey: optional(env, 'KASSA_STRIPE_PUBLISHABLE_KEY', ['pk_']),
      webhookSecret: optional(env, 'KASSA_STRIPE_WEBHOOK_SECRET', ['whsec_']),
      apiUrl: url(env, 'KASSA_STRIPE_API_URL', 'https://api.stripe.com'),
    },
    simFault: simFault(env, environment),
    providerTimeoutMs: int(env, 'KASSA_PROVIDER_TIMEOUT_MS', 30000, 100, 600000),
    reconcileScheduleMs: schedule(env, 'KASSA_RECONCILE_SCHEDULE_MS', DEFAULT_RECONCILE_SCHEDULE_MS),
    testCrashAt:
      environment === 'test'
        ? optionalOneOf(env, 'KASSA_TEST_CRASH_AT', ['operation-recorded', 'provider-answered'] as const)
        : null,
  };
}
