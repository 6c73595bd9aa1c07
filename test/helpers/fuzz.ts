// Helpers of the fuzz and security tests: a raw HTTP client (no URL normalisation, any header, any body
// bytes), the operations of the server's own OpenAPI document, the invariants every response must
// keep, and a snapshot of one organization's rows to prove a refused request wrote nothing.
import { createHash } from 'node:crypto';
import http from 'node:http';
import { type Kysely, type RawBuilder, sql } from 'kysely';
import pg from 'pg';
import type { Database } from '../../src/db/database.ts';
import { type CallOptions, requestParts } from './server.ts';

// ---------------------------------------------------------------------------------------------------
// Raw HTTP

export interface RawRequest {
  method: string;
  /** Sent exactly as given (after escaping bytes Node refuses to put on the request line). */
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
}

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  ms: number;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

/** Percent-encodes every byte but the unreserved ones (lone surrogates go as U+FFFD, as UTF-8 does). */
export function encodePart(text: string): string {
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    const char = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-_.~]/.test(char) ? char : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** Percent-encodes what Node will not send on a request line (controls, spaces, non-ASCII). */
export function requestLine(path: string): string {
  return Array.from(path)
    .map((char) => {
      const code = char.codePointAt(0) ?? 0;
      return code > 0x20 && code < 0x7f ? char : encodePart(char);
    })
    .join('');
}

export function rawRequest(baseUrl: string, request: RawRequest, timeoutMs = 20_000): Promise<RawResponse> {
  const base = new URL(baseUrl);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...request.headers };
    const body = request.body;
    if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
    const req = http.request(
      {
        host: base.hostname,
        port: base.port,
        method: request.method,
        path: requestLine(request.path),
        headers,
        agent,
        setHost: !Object.keys(headers).some((name) => name.toLowerCase() === 'host'),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text: Buffer.concat(chunks).toString('utf8'),
            ms: performance.now() - started,
          }),
        );
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

export interface JsonAnswer<T> {
  status: number;
  body: T;
  text: string;
  headers: http.IncomingHttpHeaders;
}

/** A plain JSON call over the raw client (fixtures and the security test: no OpenAPI check in between). */
export async function jsonCall<T = Record<string, unknown>>(
  baseUrl: string,
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<JsonAnswer<T>> {
  const { headers, body } = requestParts(options);
  const response = await rawRequest(baseUrl, { method, path, headers, body });
  let parsed: unknown = null;
  try {
    parsed = response.text ? JSON.parse(response.text) : null;
  } catch {
    parsed = response.text;
  }
  return { status: response.status, body: parsed as T, text: response.text, headers: response.headers };
}

export function closeRawAgent(): void {
  agent.destroy();
}

// ---------------------------------------------------------------------------------------------------
// Operations from the OpenAPI document

export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  enum?: unknown[];
  format?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
}

/** Who the operation is for: dashboard sessions, API keys, anyone (JSON), or anyone (HTML pages). */
export type Audience = 'session' | 'apiKey' | 'public' | 'page';

export interface Operation {
  method: string;
  /** The path template with {name} parameters, e.g. /api/transactions/{id}/. */
  path: string;
  audience: Audience;
  /** The base path the operation belongs to (API-key and sync-status routes exist on both). */
  environment: 'production' | 'sandbox';
  pathParams: string[];
  query: { name: string; schema: JsonSchema }[];
  body: JsonSchema | null;
}

interface OpenApiOperation {
  security?: Record<string, unknown>[];
  parameters?: { in: string; name: string; schema?: JsonSchema | string }[];
  requestBody?: { content?: Record<string, { schema?: JsonSchema }> };
}

/** API-key routes the OpenAPI document lists as public (a key is optional), which the sandbox serves too. */
const SANDBOX_ALSO = ['/api/checkout/sync-status/'];

/** Routes outside the document: the sandbox-only 405 route, HTML pages, the app shell, operations. */
const EXTRA_OPERATIONS: Operation[] = [
  op('POST', '/sandbox/api/refunds/', 'apiKey', 'sandbox'),
  op('GET', '/checkout/{token}', 'page'),
  op('GET', '/pay/{id}', 'page'),
  op('GET', '/subscribe/{plan}', 'page'),
  op('GET', '/dashboard/', 'page'),
  op('GET', '/dashboard/{rest}', 'page'),
  op('GET', '/healthz', 'page'),
  op('GET', '/readyz', 'page'),
  op('GET', '/metrics', 'page'),
  op('GET', '/docs', 'page'),
  op('GET', '/docs/{page}', 'page'),
  op('GET', '/docs/assets/{rest}', 'page'),
  op('GET', '/api/openapi.json', 'page'),
  op('GET', '/api/{rest}/', 'public'),
  op('POST', '/{rest}', 'public'),
];

function op(
  method: string,
  path: string,
  audience: Audience,
  environment: 'production' | 'sandbox' = 'production',
): Operation {
  const pathParams = [...path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]);
  return { method, path, audience, environment, pathParams, query: [], body: null };
}

/** Every operation of the server's /api/openapi.json, the sandbox variants, and the routes outside it. */
export async function loadOperations(baseUrl: string): Promise<Operation[]> {
  const response = await rawRequest(baseUrl, { method: 'GET', path: '/api/openapi.json', headers: {} });
  const document = JSON.parse(response.text) as { paths: Record<string, Record<string, OpenApiOperation>> };
  const operations: Operation[] = [];
  for (const [path, methods] of Object.entries(document.paths)) {
    for (const [method, spec] of Object.entries(methods)) {
      const schemes = (spec.security ?? []).flatMap((entry) => Object.keys(entry));
      const audience: Audience = schemes.includes('ApiKey')
        ? 'apiKey'
        : schemes.includes('SessionToken')
          ? 'session'
          : 'public';
      const parameters = spec.parameters ?? [];
      const base: Operation = {
        method: method.toUpperCase(),
        path,
        audience,
        environment: 'production',
        pathParams: parameters.filter((p) => p.in === 'path').map((p) => p.name),
        query: parameters
          .filter((p) => p.in === 'query' && typeof p.schema === 'object')
          .map((p) => ({ name: p.name, schema: p.schema as JsonSchema })),
        body: spec.requestBody?.content?.['application/json']?.schema ?? null,
      };
      operations.push(base);
      if (audience === 'apiKey' || SANDBOX_ALSO.includes(path)) {
        operations.push({ ...base, path: `/sandbox${path}`, environment: 'sandbox' });
      }
    }
  }
  return [...operations, ...EXTRA_OPERATIONS];
}

export function operationName(operation: Operation): string {
  return `${operation.method} ${operation.path}`;
}

// ---------------------------------------------------------------------------------------------------
// Response invariants

/** Text that must never reach a client: stack frames, file paths, SQL and driver errors. */
const LEAKS = [
  /\bat [\w.<>]+ \(/,
  /node_modules|\/work\/|file:\/\/|\.ts:\d+/,
  /SQLITE_|sqlite3?_|syntax error|violates|duplicate key|relation "|column "|constraint/i,
  /TypeError|ReferenceError|RangeError|SyntaxError|Cannot read prop|is not a function|undefined is not/,
  /FST_[A-Z_]+|statusCode|"error":/,
];

/** HTML pages answer 404 with their own "not found" page for a browser; everything else is JSON. */
function isHtmlPage(path: string): boolean {
  const bare = path.split('?')[0].replace(/\/+/g, '/').replace(/\/$/, '');
  return /^\/(checkout|pay|subscribe)\/[^/]+$/.test(bare);
}

/** What is wrong with a response, or null. `path` is the request path as sent. */
export function responseViolation(method: string, path: string, response: RawResponse): string | null {
  if (response.status >= 500) return `server error ${response.status}`;
  if (response.status < 100) return `no status`;
  const requestId = response.headers['x-request-id'];
  if (typeof requestId !== 'string' || requestId === '') return 'no X-Request-Id header';
  if (response.status < 400 || method === 'HEAD') return null;
  const type = String(response.headers['content-type'] ?? '');
  if (isHtmlPage(path) && response.status === 404 && type.startsWith('text/html')) return null;
  if (!type.startsWith('application/json')) return `error with content type "${type}"`;
  let body: unknown;
  try {
    body = JSON.parse(response.text);
  } catch {
    return 'error body is not JSON';
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'error body is not an object';
  const keys = Object.keys(body);
  if (keys.length !== 1 || keys[0] !== 'detail') return `error body has keys ${JSON.stringify(keys)}`;
  const detail = (body as { detail: unknown }).detail;
  if (typeof detail !== 'string') return 'detail is not a string';
  if (detail.trim() === '') return 'detail is blank';
  if (!/[.!?]$/.test(detail)) return 'detail is not a sentence (no final punctuation)';
  if (detail.length > 1000) return `detail is ${detail.length} characters long`;
  for (const leak of LEAKS) if (leak.test(detail)) return `detail leaks internals (${leak})`;
  if (response.status === 405 && !response.headers.allow) return '405 without Allow';
  if (response.status === 429 && !response.headers['retry-after']) return '429 without Retry-After';
  return null;
}

// ---------------------------------------------------------------------------------------------------
// What one organization has in the database

type Scope = 'self' | 'org' | 'payment' | 'wallet' | 'delivery';

/**
 * The tables a refused request must not touch, each scoped to one organization. Left out on purpose:
 * sessions (last_seen_at is refreshed on use), idempotency_keys (a refused request's answer is stored
 * for replay), refund_verification_codes (a wrong code counts a try), the simulator's own tables.
 */
const TABLES: { table: string; scope: Scope; ignore?: string[] }[] = [
  { table: 'organizations', scope: 'self' },
  { table: 'users', scope: 'org' },
  // last_used_at is touched by a successful authentication, whatever the request's outcome.
  { table: 'api_keys', scope: 'org', ignore: ['last_used_at'] },
  { table: 'products', scope: 'org' },
  { table: 'payment_links', scope: 'org' },
  { table: 'checkout_sessions', scope: 'org' },
  { table: 'payments', scope: 'org' },
  { table: 'deposit_attempts', scope: 'payment' },
  { table: 'refunds', scope: 'org' },
  { table: 'payouts', scope: 'org' },
  { table: 'wallets', scope: 'org' },
  { table: 'wallet_movements', scope: 'wallet' },
  { table: 'wallet_entries', scope: 'wallet' },
  { table: 'wallet_reserves', scope: 'wallet' },
  { table: 'events', scope: 'org' },
  { table: 'webhook_endpoints', scope: 'org' },
  { table: 'webhook_deliveries', scope: 'org' },
  { table: 'webhook_attempts', scope: 'delivery' },
  { table: 'webhook_received', scope: 'org' },
];

function scoped(scope: Scope, organizationId: number): RawBuilder<unknown> {
  switch (scope) {
    case 'self':
      return sql`id = ${organizationId}`;
    case 'org':
      return sql`organization_id = ${organizationId}`;
    case 'payment':
      return sql`payment_id IN (SELECT id FROM payments WHERE organization_id = ${organizationId})`;
    case 'wallet':
      return sql`wallet_id IN (SELECT id FROM wallets WHERE organization_id = ${organizationId})`;
    case 'delivery':
      return sql`delivery_id IN (SELECT id FROM webhook_deliveries WHERE organization_id = ${organizationId})`;
  }
}

export type RowCounts = Record<string, number>;

/**
 * Where snapshot queries run: a Kysely instance, or (PostgreSQL) a pool of its own whose queries are
 * named prepared statements: planning the count over every table costs more than running it, and the
 * fuzz runs it after every refused request.
 */
export interface RowSource {
  /** PostgreSQL hashes the rows itself, in one statement; elsewhere they are read and hashed here. */
  hashesInDatabase: boolean;
  rows(name: string, query: RawBuilder<Record<string, unknown>>): Promise<Record<string, unknown>[]>;
  close(): Promise<void>;
}

export function kyselySource(db: Kysely<Database>): RowSource {
  return {
    hashesInDatabase: false,
    rows: async (_name, query) => (await query.execute(db)).rows,
    close: async () => {},
  };
}

export function preparedSource(
  db: Kysely<Database>,
  url: string,
  schema: string | null,
  size = 8,
): RowSource {
  const pool = new pg.Pool({
    connectionString: url,
    max: size,
    options: schema ? `-c search_path=${schema}` : undefined,
  });
  return {
    hashesInDatabase: true,
    async rows(name, query) {
      const { sql: text, parameters } = query.compile(db);
      return (await pool.query({ name, text, values: [...parameters] })).rows;
    },
    close: () => pool.end(),
  };
}

function source(from: Kysely<Database> | RowSource): RowSource {
  return 'rows' in from ? from : kyselySource(from);
}

/** Row counts of every table, for one organization, in one round trip. */
export async function rowCounts(
  from: Kysely<Database> | RowSource,
  organizationId: number,
): Promise<RowCounts> {
  const columns = TABLES.map(
    ({ table, scope }) =>
      sql`(SELECT count(*) FROM ${sql.table(table)} WHERE ${scoped(scope, organizationId)}) AS ${sql.ref(table)}`,
  );
  const [row = {}] = await source(from).rows(
    'fuzz_counts',
    sql<Record<string, unknown>>`SELECT ${sql.join(columns)}`,
  );
  return Object.fromEntries(TABLES.map(({ table }) => [table, Number(row[table])]));
}

/** A hash of every row (all columns but the ignored ones) of every table, per table. */
export async function rowChecksums(
  from: Kysely<Database> | RowSource,
  organizationId: number,
): Promise<Record<string, string>> {
  const reader = source(from);
  if (reader.hashesInDatabase) {
    const parts = TABLES.map(({ table, scope, ignore = [] }) => {
      const row = ignore.reduce((json, column) => sql`${json} - ${sql.lit(column)}`, sql`to_jsonb(x)`);
      return sql`SELECT ${sql.lit(table)} AS t, count(*) || ':' || left(md5(coalesce(string_agg((${row})::text, E'\\n' ORDER BY x.id), '')), 16) AS h FROM ${sql.table(table)} x WHERE ${scoped(scope, organizationId)}`;
    });
    const rows = await reader.rows(
      'fuzz_checksums',
      sql<Record<string, unknown>>`${sql.join(parts, sql` UNION ALL `)}`,
    );
    return Object.fromEntries(rows.map((row) => [String(row.t), String(row.h)]));
  }
  const results = await Promise.all(
    TABLES.map(({ table, scope }) =>
      reader.rows(
        `fuzz_rows_${table}`,
        sql<
          Record<string, unknown>
        >`SELECT * FROM ${sql.table(table)} WHERE ${scoped(scope, organizationId)} ORDER BY id`,
      ),
    ),
  );
  const out: Record<string, string> = {};
  for (const [index, { table, ignore = [] }] of TABLES.entries()) {
    const hash = createHash('sha256');
    for (const row of results[index]) {
      for (const column of ignore) delete row[column];
      hash.update(JSON.stringify(row, (_key, value) => (typeof value === 'bigint' ? String(value) : value)));
      hash.update('\n');
    }
    out[table] = `${results[index].length}:${hash.digest('hex').slice(0, 16)}`;
  }
  return out;
}

/** The tables whose value differs between two snapshots, with both values. */
export function differences<T>(before: Record<string, T>, after: Record<string, T>): string[] {
  return Object.keys({ ...before, ...after })
    .filter((table) => before[table] !== after[table])
    .map((table) => `${table}: ${String(before[table])} -> ${String(after[table])}`);
}
