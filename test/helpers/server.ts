// Starts the real service on a loopback port for a test: a fresh SQLite file, or (with
// KASSA_TEST_DATABASE_URL) a fresh PostgreSQL schema of its own, dropped at the end.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { loadConfig } from '../../src/config.ts';
import type { AppContext } from '../../src/context.ts';
import type { App } from '../../src/http/types.ts';
import { randomBase62 } from '../../src/lib/ids.ts';
import { createMerchant } from '../../src/modules/organizations/service.ts';
import { startService } from '../../src/server.ts';
import { checkResponse } from './conformance.ts';

export const PG_URL = process.env.KASSA_TEST_DATABASE_URL;
export const DB_KIND = PG_URL ? 'postgres' : 'sqlite';

export interface TestServer {
  url: string;
  ctx: AppContext;
  /** The Fastify app (for printRoutes and the like). */
  app: App;
  env: Record<string, string>;
  close(): Promise<void>;
}

export interface StartTestServerOptions {
  env?: Record<string, string>;
  clock?: AppContext['clock'];
  worker?: boolean;
  /** Reuse another server's database (a second process-like instance on the same data). */
  shareWith?: TestServer;
}

/** Environment for a test service: own data dir, own database, quiet logs, fast loops. */
export async function testEnv(
  extra: Record<string, string> = {},
): Promise<{ env: Record<string, string>; cleanup: () => Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'kassa-test-'));
  const env: Record<string, string> = {
    KASSA_DATA_DIR: dataDir,
    KASSA_HOST: '127.0.0.1',
    KASSA_PORT: '0',
    KASSA_LOG_LEVEL: 'silent',
    KASSA_ENV: 'test',
    KASSA_SYNC_INTERVAL_MS: '50',
    KASSA_WORKER_POLL_MS: '20',
    KASSA_SECRET_KEY: 'a'.repeat(64),
    // Limits are exercised by their own tests with low values; elsewhere they must not interfere.
    KASSA_RATE_LIMIT_API_KEY: '1000000',
    KASSA_RATE_LIMIT_PUBLIC: '1000000',
    KASSA_RATE_LIMIT_DECLINES_PER_ADDRESS: '1000000',
    // Webhook tests run their receivers on loopback; the SSRF guard's own tests turn this off.
    KASSA_WEBHOOK_ALLOW_PRIVATE: 'true',
    ...extra,
  };
  let schema: string | null = null;
  if (PG_URL) {
    schema = `kt_${process.pid}_${randomBase62(8).toLowerCase()}`;
    env.DATABASE_URL = PG_URL;
    env.KASSA_DB_SCHEMA = schema;
    env.KASSA_DB_POOL_SIZE ??= '5';
  }
  return {
    env,
    cleanup: async () => {
      if (schema && PG_URL) {
        const client = new pg.Client({ connectionString: PG_URL });
        await client.connect();
        await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        await client.end();
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export async function startTestServer(options: StartTestServerOptions = {}): Promise<TestServer> {
  const shared = options.shareWith;
  const { env, cleanup } = shared
    ? { env: { ...shared.env, ...options.env }, cleanup: async () => {} }
    : await testEnv(options.env);
  const config = loadConfig(env);
  config.publicUrl = 'http://127.0.0.1';
  const service = await startService(config, { clock: options.clock, worker: options.worker ?? true });
  const url = service.url as string;
  config.publicUrl = url;
  if (!service.app) throw new Error('the test service started without HTTP');
  return {
    url,
    ctx: service.ctx,
    app: service.app,
    env,
    async close() {
      await service.close();
      await cleanup();
    },
  };
}

export interface ApiResponse<T = Record<string, unknown>> {
  status: number;
  body: T;
  headers: Headers;
  text: string;
}

export interface CallOptions {
  token?: string;
  apiKey?: string;
  body?: unknown;
  headers?: Record<string, string>;
}

/** The headers and body a call sends: the credential, and a JSON body (a string is sent as it is). */
export function requestParts(options: CallOptions): {
  headers: Record<string, string>;
  body: string | undefined;
} {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Token ${options.token}`;
  if (options.apiKey) headers.authorization = `Api-Key ${options.apiKey}`;
  let body: string | undefined;
  if (options.body !== undefined) {
    body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  return { headers, body };
}

/** A TCP port that was free a moment ago on 127.0.0.1 (for a child service that must keep its port across restarts). */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const address = probe.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** One HTTP call as a merchant's code would make it; /api answers are checked against the OpenAPI document. */
export async function call<T = Record<string, unknown>>(
  server: { url: string },
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<ApiResponse<T>> {
  const { headers, body } = requestParts(options);
  const response = await fetch(server.url + path, { method, headers, body });
  const text = await response.text();
  let parsed: unknown = null;
  if (text) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
  }
  await checkResponse(server.url, {
    method: method.toUpperCase(),
    path,
    status: response.status,
    contentType: response.headers.get('content-type'),
    text,
    body: parsed,
    headers: response.headers,
  });
  return { status: response.status, body: parsed as T, headers: response.headers, text };
}

export interface Merchant {
  organizationId: number;
  slug: string;
  email: string;
  password: string;
  token: string;
}

let merchantCounter = 0;

/** Creates a merchant as the operator would, and logs in as its owner. */
export async function createTestMerchant(server: TestServer, name = 'Acme'): Promise<Merchant> {
  merchantCounter += 1;
  const email = `owner${merchantCounter}-${randomBase62(6).toLowerCase()}@acme.test`;
  const password = 'correct horse battery';
  const { organization } = await createMerchant(server.ctx, { organization: name, email, password });
  const login = await call<{ token: string }>(server, 'POST', '/api/auth/login/', {
    body: { email, password },
  });
  if (login.status !== 200) throw new Error(`login failed: ${login.text}`);
  return {
    organizationId: organization.id,
    slug: organization.slug,
    email,
    password,
    token: login.body.token,
  };
}

/** Creates an API key through the dashboard endpoint and returns the raw key. */
export async function createTestKey(
  server: TestServer,
  merchant: Merchant,
  options: { scopes?: string; environment?: 'production' | 'sandbox' } = {},
): Promise<string> {
  const response = await call<{ raw_key: string }>(server, 'POST', '/api/organization/api-keys/', {
    token: merchant.token,
    body: {
      name: 'test key',
      allowed_scopes: options.scopes ?? '',
      environment: options.environment ?? 'production',
    },
  });
  if (response.status !== 201) throw new Error(`key creation failed: ${response.text}`);
  return response.body.raw_key;
}
