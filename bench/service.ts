// The service as the benchmarks run it: a fresh database (an SQLite file in a temporary data dir, or a
// PostgreSQL schema of its own, dropped afterwards), `kassa` child processes with logs off and the rate
// limits out of the way, and a merchant prepared the way an operator and a merchant would: the
// `kassa merchant create` CLI, a dashboard login, an API key and the webhook endpoint through the API.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { type Child, ROOT, runNode, startNode, waitFor } from './processes.ts';

export const DEFAULT_PG_URL = 'postgres://root@127.0.0.1:5432/test';

export type DatabaseKind = 'sqlite' | 'postgres';

export interface BenchDatabase {
  kind: DatabaseKind;
  /** The KASSA_* / DATABASE_URL settings every process of this run shares. */
  env: Record<string, string>;
  drop(): Promise<void>;
}

/** null when PostgreSQL answers at `url`, else why not. */
export async function postgresProblem(url: string): Promise<string | null> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('select 1');
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  } finally {
    await client.end().catch(() => {});
  }
}

export async function dropSchema(url: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await client.end();
  }
}

export function createBenchDatabase(kind: DatabaseKind, pgUrl: string): BenchDatabase {
  const dataDir = mkdtempSync(join(tmpdir(), 'kassa-bench-'));
  const schema = `kassa_bench_${randomBytes(4).toString('hex')}`;
  const env: Record<string, string> = {
    KASSA_DATA_DIR: dataDir,
    KASSA_HOST: '127.0.0.1',
    KASSA_PORT: '0',
    KASSA_LOG_LEVEL: 'silent',
    KASSA_SECRET_KEY: randomBytes(32).toString('hex'),
    // One client hammering one key from one address: the limits would measure only 429s.
    KASSA_RATE_LIMIT_API_KEY: '1000000000',
    KASSA_RATE_LIMIT_PUBLIC: '1000000000',
    KASSA_RATE_LIMIT_DECLINES_PER_ADDRESS: '1000000000',
    // The webhook receiver runs on loopback, which the SSRF guard refuses by default.
    KASSA_WEBHOOK_ALLOW_PRIVATE: 'true',
    ...(kind === 'postgres' ? { DATABASE_URL: pgUrl, KASSA_DB_SCHEMA: schema } : {}),
  };
  return {
    kind,
    env,
    async drop() {
      rmSync(dataDir, { recursive: true, force: true });
      if (kind === 'postgres') await dropSchema(pgUrl, schema);
    },
  };
}

export interface BenchMerchant {
  organizationId: number;
  email: string;
  password: string;
}

/** `kassa merchant create`, as an operator would (it also migrates the fresh database). */
export async function createMerchantWithCli(env: Record<string, string>): Promise<BenchMerchant> {
  const email = 'bench@kassa.test';
  const password = randomBytes(12).toString('base64url');
  const created = await runNode(
    [
      'src/cli/main.ts',
      'merchant',
      'create',
      '--org',
      'Bench Shop',
      '--email',
      email,
      // --password=… keeps a password that starts with "-" from reading as an option.
      `--password=${password}`,
    ],
    env,
  );
  if (created.code !== 0) throw new Error(`merchant create failed:\n${created.output}`);
  const printed = JSON.parse(created.output.slice(created.output.indexOf('{'))) as {
    organization: { id: number };
  };
  return { organizationId: printed.organization.id, email, password };
}

/** `npm start` (package.json is their one home): its environment prefix and its V8 flags. */
const START_SCRIPT = (
  JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts.start as string
).split(' ');
/** Environment `npm start` sets for the service (glibc's MALLOC_ARENA_MAX). */
export const SERVICE_ENV: Record<string, string> = Object.fromEntries(
  START_SCRIPT.filter((word) => /^[A-Z_]+=/.test(word)).map((word) => word.split('=', 2)),
);
/** The V8 flags `npm start` runs the service with (bin/kassa.js repeats them). */
export const SERVICE_NODE_FLAGS: string[] = START_SCRIPT.filter((arg) => arg.startsWith('--max-'));

/** `kassa serve` (or `serve --no-worker`), with the flags of `npm start`; resolves with its URL once it listens. */
export async function startServe(
  env: Record<string, string>,
  options: { worker?: boolean; nodeFlags?: string[] } = {},
): Promise<{ child: Child; url: string }> {
  const args = [...SERVICE_NODE_FLAGS, ...(options.nodeFlags ?? []), 'src/cli/main.ts', 'serve'];
  if (options.worker === false) args.push('--no-worker');
  const child = startNode(args, { ...SERVICE_ENV, ...env });
  const [, url] = await waitFor(child, /listening on (http:\/\/\S+)/);
  return { child, url };
}

/** `kassa worker`; resolves once it runs. */
export async function startWorkerProcess(env: Record<string, string>): Promise<Child> {
  const child = startNode([...SERVICE_NODE_FLAGS, 'src/cli/main.ts', 'worker'], { ...SERVICE_ENV, ...env });
  await waitFor(child, /worker running/);
  return child;
}

export interface Answer {
  status: number;
  body: Record<string, unknown>;
}

export type Call = (
  method: string,
  path: string,
  options?: { token?: string; apiKey?: string; body?: unknown },
) => Promise<Answer>;

export function caller(url: string): Call {
  return async (method, path, options = {}) => {
    const headers: Record<string, string> = {};
    if (options.token) headers.authorization = `Token ${options.token}`;
    if (options.apiKey) headers.authorization = `Api-Key ${options.apiKey}`;
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(url + path, {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
    const text = await response.text();
    return { status: response.status, body: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
  };
}

export interface MerchantAccess {
  /** Dashboard session token. */
  token: string;
  /** A production API key with every scope. */
  apiKey: string;
  /** The webhook signing secret, when an endpoint was set. */
  webhookSecret: string | null;
}

/** Logs in, creates an API key, and points the webhook endpoint at `webhookUrl` when given. */
export async function merchantAccess(
  url: string,
  merchant: BenchMerchant,
  webhookUrl: string | null,
): Promise<MerchantAccess> {
  const call = caller(url);
  const login = await call('POST', '/api/auth/login/', {
    body: { email: merchant.email, password: merchant.password },
  });
  if (login.status !== 200) throw new Error(`login failed: ${JSON.stringify(login.body)}`);
  const token = String(login.body.token);
  const key = await call('POST', '/api/organization/api-keys/', {
    token,
    body: { name: 'bench', allowed_scopes: '' },
  });
  if (key.status !== 201) throw new Error(`key creation failed: ${JSON.stringify(key.body)}`);
  let webhookSecret: string | null = null;
  if (webhookUrl !== null) {
    const endpoint = await call('PUT', '/api/organization/webhook/', {
      token,
      body: { endpoint_url: webhookUrl },
    });
    if (endpoint.status !== 200) throw new Error(`webhook endpoint failed: ${JSON.stringify(endpoint.body)}`);
    webhookSecret = String(endpoint.body.raw_secret);
  }
  return { token, apiKey: String(key.body.raw_key), webhookSecret };
}

export const CHECKOUT_BODY = {
  billing_country: 'FR',
  billing_first_name: 'Ada',
  billing_last_name: 'Lovelace',
  billing_email: 'ada@example.com',
  products: [{ name: 'Benchmark widget', unit_price: 25, quantity: 1 }],
};

/** One paid payment through the real flow (create, pay with 4242…, sync); its public TX id. */
export async function makePayment(url: string, apiKey: string): Promise<string> {
  const call = caller(url);
  const checkout = await call('POST', '/api/checkout/create/', { apiKey, body: CHECKOUT_BODY });
  if (checkout.status !== 201) throw new Error(`checkout failed: ${JSON.stringify(checkout.body)}`);
  const token = String(checkout.body.token);
  const paid = await call('POST', `/api/checkout/${token}/pay/`, {
    body: {
      card_number: '4242424242424242',
      exp_month: 12,
      exp_year: 2099,
      cvc: '123',
      cardholder_name: 'Ada',
    },
  });
  if (paid.status !== 200) throw new Error(`pay failed: ${JSON.stringify(paid.body)}`);
  return String(paid.body.transaction_id);
}
