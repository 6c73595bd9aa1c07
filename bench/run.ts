// npm run bench: throughput and latency of the real service, next to a bare Fastify route.
//
// The service runs as `kassa serve` would in production (API + worker, logs off) on SQLite, and also
// on PostgreSQL when KASSA_BENCH_DATABASE_URL (or KASSA_TEST_DATABASE_URL) is set. autocannon runs in
// a child process of its own. Figures go to the terminal and to bench/results/<timestamp>.json.
//
// KASSA_BENCH_DURATION_S (default 5) and KASSA_BENCH_CONNECTIONS (default 10) tune each measurement.
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { type Child, ROOT, rssMiB, runNode, sleep, startNode, stop, waitFor } from './processes.ts';
import { type BenchRequest, type CallResult, SCENARIOS, type ServiceFixture } from './scenarios.ts';

const DURATION_S = Number(process.env.KASSA_BENCH_DURATION_S) || 5;
const CONNECTIONS = Number(process.env.KASSA_BENCH_CONNECTIONS) || 10;
const WARMUP_S = 1;
const IDLE_WAIT_MS = 3000;
const PG_URL = process.env.KASSA_BENCH_DATABASE_URL || process.env.KASSA_TEST_DATABASE_URL || '';

interface Measurement {
  database: string;
  scenario: string;
  requests_per_s: number;
  p50_ms: number;
  p99_ms: number;
  total: number;
  unexpected: number;
  errors: number;
  expect_status: number;
  ratio_to_bare: number | null;
  note?: string;
}

interface ServiceRun {
  database: string;
  idle_rss_mib: number | null;
  rss_after_load_mib: number | null;
  error?: string;
}

interface AutocannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  errors: number;
  timeouts: number;
  statusCodeStats?: Record<string, { count: number }>;
}

async function autocannon(url: string, request: BenchRequest, seconds: number): Promise<AutocannonResult> {
  const args = [
    join(ROOT, 'node_modules', 'autocannon', 'autocannon.js'),
    '-j',
    '-n',
    '-c',
    String(CONNECTIONS),
    '-d',
    String(seconds),
    '-m',
    request.method,
  ];
  for (const [name, value] of Object.entries(request.headers ?? {})) args.push('-H', `${name}=${value}`);
  if (request.body !== undefined) args.push('-H', 'content-type=application/json', '-b', request.body);
  args.push(url + request.path);
  const { code, output } = await runNode(args, {});
  const json = output.slice(output.indexOf('{'), output.lastIndexOf('}') + 1);
  if (code !== 0 || !json) throw new Error(`autocannon failed (${code}):\n${output}`);
  return JSON.parse(json) as AutocannonResult;
}

async function measure(
  database: string,
  scenario: string,
  url: string,
  request: BenchRequest,
  bare: number | null,
): Promise<Measurement> {
  process.stderr.write(`  ${database.padEnd(10)} ${scenario} …\n`);
  await autocannon(url, request, WARMUP_S);
  const result = await autocannon(url, request, DURATION_S);
  const expected = result.statusCodeStats?.[String(request.expectStatus)]?.count ?? 0;
  const rps = Math.round(result.requests.average);
  return {
    database,
    scenario,
    requests_per_s: rps,
    p50_ms: result.latency.p50,
    p99_ms: result.latency.p99,
    total: result.requests.total,
    unexpected: result.statusCodeStats ? result.requests.total - expected : 0,
    errors: result.errors + result.timeouts,
    expect_status: request.expectStatus,
    ratio_to_bare: bare ? Math.round((rps / bare) * 1000) / 1000 : null,
    ...(request.note ? { note: request.note } : {}),
  };
}

function fixtureCall(url: string): ServiceFixture['call'] {
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
    return { status: response.status, body: (text ? JSON.parse(text) : {}) as CallResult['body'] };
  };
}

/** A running service with a merchant, a session and an API key, as the scenarios expect. */
async function startBenchService(
  env: Record<string, string>,
): Promise<{ child: Child; fixture: ServiceFixture }> {
  const password = randomBytes(12).toString('base64url');
  const created = await runNode(
    [
      'src/cli/main.ts',
      'merchant',
      'create',
      '--org',
      'Bench Shop',
      '--email',
      'bench@kassa.test',
      '--password',
      password,
    ],
    env,
  );
  if (created.code !== 0) throw new Error(`merchant create failed:\n${created.output}`);
  const child = startNode(['src/cli/main.ts', 'serve'], env);
  const [, url] = await waitFor(child, /listening on (http:\/\/\S+)/);
  const call = fixtureCall(url);
  const login = await call('POST', '/api/auth/login/', { body: { email: 'bench@kassa.test', password } });
  if (login.status !== 200) throw new Error(`login failed: ${JSON.stringify(login.body)}`);
  const token = String(login.body.token);
  const key = await call('POST', '/api/organization/api-keys/', {
    token,
    body: { name: 'bench', allowed_scopes: '' },
  });
  if (key.status !== 201) throw new Error(`key creation failed: ${JSON.stringify(key.body)}`);
  return { child, fixture: { url, token, apiKey: String(key.body.raw_key), call } };
}

async function benchDatabase(
  database: 'sqlite' | 'postgres',
  bare: number | null,
  results: Measurement[],
): Promise<ServiceRun> {
  const dataDir = mkdtempSync(join(tmpdir(), 'kassa-bench-'));
  const schema = `kassa_bench_${randomBytes(4).toString('hex')}`;
  const env: Record<string, string> = {
    KASSA_DATA_DIR: dataDir,
    KASSA_HOST: '127.0.0.1',
    KASSA_PORT: '0',
    KASSA_LOG_LEVEL: 'silent',
    KASSA_SECRET_KEY: randomBytes(32).toString('hex'),
    // The benchmark is one client hammering one key: the per-key limit would measure only 429s.
    KASSA_RATE_LIMIT_API_KEY: '1000000000',
    KASSA_RATE_LIMIT_PUBLIC: '1000000000',
    ...(database === 'postgres' ? { DATABASE_URL: PG_URL, KASSA_DB_SCHEMA: schema } : {}),
  };
  let child: Child | null = null;
  const run: ServiceRun = { database, idle_rss_mib: null, rss_after_load_mib: null };
  try {
    const started = await startBenchService(env);
    child = started.child;
    await sleep(IDLE_WAIT_MS);
    run.idle_rss_mib = rssMiB(child.process.pid);
    for (const scenario of SCENARIOS) {
      const request = await scenario.setup(started.fixture);
      results.push(await measure(database, scenario.name, started.fixture.url, request, bare));
    }
    run.rss_after_load_mib = rssMiB(child.process.pid);
  } catch (error) {
    run.error = error instanceof Error ? error.message : String(error);
    process.stderr.write(`  ${database}: ${run.error}\n`);
  } finally {
    if (child) await stop(child);
    rmSync(dataDir, { recursive: true, force: true });
    if (database === 'postgres') {
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await client.end();
    }
  }
  return run;
}

async function benchBare(results: Measurement[]): Promise<number | null> {
  const child = startNode(['bench/bare-server.ts'], {});
  try {
    const [, url] = await waitFor(child, /listening on (http:\/\/\S+)/);
    const request: BenchRequest = { method: 'GET', path: '/bare', expectStatus: 200 };
    const result = await measure('-', 'bare Fastify route', url, request, null);
    results.push({ ...result, ratio_to_bare: 1 });
    return result.requests_per_s;
  } finally {
    await stop(child);
  }
}

function printTable(results: Measurement[], runs: ServiceRun[]): void {
  const rows = [
    ['database', 'scenario', 'req/s', 'p50 ms', 'p99 ms', 'vs bare', 'status'],
    ...results.map((r) => [
      r.database,
      r.scenario,
      String(r.requests_per_s),
      String(r.p50_ms),
      String(r.p99_ms),
      r.ratio_to_bare === null ? '-' : `${Math.round(r.ratio_to_bare * 100)}%`,
      `${r.expect_status}${r.unexpected || r.errors ? ` (${r.unexpected} unexpected, ${r.errors} errors)` : ''}`,
    ]),
  ];
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  const line = (row: string[]) =>
    row.map((cell, i) => (i >= 2 && i <= 5 ? cell.padStart(widths[i]) : cell.padEnd(widths[i]))).join('  ');
  console.log(`\n${line(rows[0])}\n${widths.map((w) => '-'.repeat(w)).join('  ')}`);
  for (const row of rows.slice(1)) console.log(line(row));
  for (const r of results) if (r.note) console.log(`note (${r.database}, ${r.scenario}): ${r.note}`);
  console.log('');
  for (const run of runs) {
    console.log(
      `${run.database}: idle RSS ${run.idle_rss_mib ?? '?'} MiB, after load ${run.rss_after_load_mib ?? '?'} MiB${run.error ? ` — FAILED: ${run.error.split('\n')[0]}` : ''}`,
    );
  }
}

async function main(): Promise<number> {
  const startedAt = new Date();
  const results: Measurement[] = [];
  process.stderr.write(`kassa bench: ${DURATION_S} s per measurement, ${CONNECTIONS} connections\n`);
  const bare = await benchBare(results);
  const runs = [await benchDatabase('sqlite', bare, results)];
  if (PG_URL) runs.push(await benchDatabase('postgres', bare, results));
  else
    process.stderr.write('  postgres: skipped (set KASSA_BENCH_DATABASE_URL=postgres://... to include it)\n');
  printTable(results, runs);
  const report = {
    started_at: startedAt.toISOString(),
    duration_s: DURATION_S,
    connections: CONNECTIONS,
    machine: {
      cpus: cpus().length,
      cpu: cpus()[0]?.model ?? '',
      memory_mib: Math.round(totalmem() / 2 ** 20),
    },
    node: process.version,
    services: runs,
    results,
  };
  const dir = join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${startedAt.toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`results written to ${file}`);
  return runs.some((run) => run.error) ? 1 : 0;
}

process.exitCode = await main();
