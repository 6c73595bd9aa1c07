// npm run bench: throughput and latency of the real service next to a bare Fastify route, on SQLite and
// on PostgreSQL, with the service's peak memory. Each database gets a fresh `kassa serve` child (API +
// worker, logs off, rate limits out of the way), a merchant made with the CLI and an API key and webhook
// endpoint made through the API; the load comes from child processes (autocannon, bench/driver.ts) and
// webhooks go to a loopback receiver process. Figures go to the terminal and to bench/results/*.json.
//
//   KASSA_BENCH_SECONDS (default 5)       length of each measurement (plus 1 s of warm-up)
//   KASSA_BENCH_CONNECTIONS (default 10)  concurrent connections / clients
//   KASSA_BENCH_DATABASE_URL              PostgreSQL server (default postgres://root@127.0.0.1:5432/test);
//                                         a fresh schema is made and dropped; skipped if unreachable
//   KASSA_BENCH_DATABASES                 e.g. "sqlite" to run one database only
//   KASSA_BENCH_ONLY                      run only the scenarios whose name contains one of these
//                                         comma-separated texts
//   KASSA_BENCH_PROFILE=1                 CPU-profile the service (node --cpu-prof); the profile is
//                                         summarised and kept under bench/results/profiles/
//   KASSA_BENCH_ROUNDS (default 3)        rounds of the webhook queues' scenarios (Kassa's and the peers',
//                                         in turn in each round) and of the scenarios the ideal also runs
//                                         (Kassa's and the ideal's in turn); each row is the median round
//   KASSA_BENCH_NODE_FLAGS                extra node flags for the service, e.g. "--max-semi-space-size=4"
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config.ts';
import { type DbHandle, openDatabase } from '../src/db/connection.ts';
import { autocannon, summarize } from './autocannon.ts';
import { type IdealServer, startIdeal } from './ideal/check.ts';
import { describeIdle, IDLE_SECONDS, type IdleCpu, idleCpu } from './idle.ts';
import { PEER_PREFIX } from './peers/run.ts';
import {
  type Child,
  cpuSeconds,
  load1,
  postgresCpuSeconds,
  procMemoryMB,
  ROOT,
  resetPeakRss,
  sampleRss,
  sleep,
  startNode,
  stop,
  waitFor,
} from './processes.ts';
import { summarizeProfile } from './profile.ts';
import { startReceiverProcess } from './receiver.ts';
import {
  IDEAL_PREFIX,
  requestRow,
  SCENARIOS,
  type Scenario,
  type ScenarioResult,
  WEBHOOK_RATE,
} from './scenarios.ts';
import {
  createBenchDatabase,
  createMerchantWithCli,
  type DatabaseKind,
  DEFAULT_PG_URL,
  merchantAccess,
  postgresProblem,
  startServe,
} from './service.ts';

const SECONDS = Number(process.env.KASSA_BENCH_SECONDS) || 5;
const CONNECTIONS = Number(process.env.KASSA_BENCH_CONNECTIONS) || 10;
const WARMUP_SECONDS = 1;
const PG_URL = process.env.KASSA_BENCH_DATABASE_URL || DEFAULT_PG_URL;
const DATABASES = (process.env.KASSA_BENCH_DATABASES || 'sqlite,postgres').split(',');
const ONLY = (process.env.KASSA_BENCH_ONLY || '').split(',').filter(Boolean);
const PROFILE = process.env.KASSA_BENCH_PROFILE === '1';
const ROUNDS = Math.max(1, Math.floor(Number(process.env.KASSA_BENCH_ROUNDS) || 3));
const NODE_FLAGS = (process.env.KASSA_BENCH_NODE_FLAGS || '').split(' ').filter(Boolean);
const STARTED_AT = new Date();
const RESULTS_DIR = join(ROOT, 'bench', 'results');

interface Row extends ScenarioResult {
  database: string;
  scenario: string;
  ratioToBare: number | null;
  /** Service CPU per operation (request, flow, delivery), in µs. */
  cpuUsPerOp: number | null;
  /** The bare route's CPU per request over this scenario's CPU per HTTP request: the ratio a busy machine does not skew. */
  cpuRatioToBare: number | null;
  /** For a Kassa scenario the ideal also ran: the ideal's CPU per request over Kassa's (higher is better). */
  cpuRatioToIdeal?: number | null;
  /** The same with PostgreSQL's own CPU added to each side. */
  cpuDbRatioToIdeal?: number | null;
  /** Highest VmRSS of the service sampled during this scenario. */
  peakRssMB: number | null;
  /** 1-minute load average when the scenario started. */
  load1: number;
}

interface ServiceRun {
  database: DatabaseKind;
  idleRssMB: number | null;
  /** CPU used with no traffic (mostly the worker's polling), ms per second: see bench/idle.ts. */
  idleCpuMsPerS?: number | null;
  /** The idle measurement window by window (the figure above is their median). */
  idleCpu?: IdleCpu | null;
  /** The highest of the scenarios' peaks: the service's peak resident memory under load. */
  peakRssMB: number | null;
  /** VmHWM after setup: includes the login's scrypt spike. */
  setupPeakRssMB?: number | null;
  profile?: string;
  error?: string;
  skipped?: string;
}

function log(line: string) {
  process.stderr.write(`${line}\n`);
}

/** kassa_db_statements_total from the service's /metrics (null if it cannot be read). */
async function statementsSent(url: string): Promise<number | null> {
  try {
    const text = await (await fetch(`${url}/metrics`)).text();
    const match = /^kassa_db_statements_total (\d+)/m.exec(text);
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}

interface Bare {
  requestsPerS: number;
  cpuUsPerRequest: number | null;
}

/** Service CPU per operation, and per HTTP request (a flow is three), in µs. */
function cpuCost(result: ScenarioResult): { perOp: number | null; perRequest: number | null } {
  if (result.serviceCpuS === null || result.total === 0) return { perOp: null, perRequest: null };
  const perOp = (result.serviceCpuS * 1e6) / result.total;
  const requestsPerOp =
    result.requestsPerS === null || result.rate === 0 ? null : result.requestsPerS / result.rate;
  return { perOp, perRequest: requestsPerOp === null ? null : perOp / requestsPerOp };
}

async function benchBare(rows: Row[]): Promise<Bare> {
  const child = startNode(['bench/bare-server.ts'], {});
  try {
    const [, url] = await waitFor(child, /listening on (http:\/\/\S+)/);
    log('  bare Fastify route …');
    const load1Now = load1();
    const rss = sampleRss(child.process.pid);
    const request = { method: 'GET', path: '/bare', expectStatus: 200 } as const;
    await autocannon(url, request, WARMUP_SECONDS, CONNECTIONS);
    const cpuBefore = cpuSeconds(child.process.pid);
    const result = summarize(await autocannon(url, request, SECONDS, CONNECTIONS), request);
    const cpuAfter = cpuSeconds(child.process.pid);
    const measured = requestRow(result, {
      serviceCpuS: cpuBefore === null || cpuAfter === null ? null : cpuAfter - cpuBefore,
      statements: null,
      databaseCpuS: null,
    });
    const cost = cpuCost(measured);
    rows.push({
      database: '-',
      scenario: 'bare Fastify route (the ceiling)',
      ...measured,
      ratioToBare: 1,
      cpuUsPerOp: cost.perOp,
      cpuRatioToBare: 1,
      peakRssMB: rss.stop(),
      load1: load1Now,
    });
    return { requestsPerS: result.requestsPerS, cpuUsPerRequest: cost.perRequest };
  } finally {
    await stop(child);
  }
}

async function benchDatabase(kind: DatabaseKind, bare: Bare, rows: Row[]): Promise<ServiceRun> {
  const run: ServiceRun = { database: kind, idleRssMB: null, peakRssMB: null };
  if (kind === 'postgres') {
    const problem = await postgresProblem(PG_URL);
    if (problem) {
      run.skipped = `PostgreSQL at ${PG_URL} is not reachable (${problem}); set KASSA_BENCH_DATABASE_URL`;
      log(`  postgres: skipped — ${run.skipped}`);
      return run;
    }
  }
  const database = createBenchDatabase(kind, PG_URL);
  const profileDir = join(
    RESULTS_DIR,
    'profiles',
    `${STARTED_AT.toISOString().replace(/[:.]/g, '-')}-${kind}`,
  );
  let service: Child | null = null;
  let ideal: IdealServer | null = null;
  const receiver = await startReceiverProcess();
  let bench: DbHandle | null = null;
  try {
    const merchant = await createMerchantWithCli(database.env);
    const started = await startServe(database.env, {
      nodeFlags: [...NODE_FLAGS, ...(PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [])],
    });
    service = started.child;
    const access = await merchantAccess(started.url, merchant, `${receiver.url}/hooks`);
    if (access.webhookSecret) await receiver.ask({ type: 'secret', secret: access.webhookSecret }, 'ok');
    bench = openDatabase(loadConfig(database.env).database);
    await sleep(2000);
    run.idleRssMB = procMemoryMB(service.process.pid, 'VmRSS');
    log(`  ${kind.padEnd(8)} idle CPU over ${IDLE_SECONDS} s …`);
    const idle = await idleCpu(service);
    run.idleCpuMsPerS = idle?.msPerS ?? null;
    run.idleCpu = idle;
    // Setting up logged in once: a scrypt hash (N = 2^17, r = 8) holds 128 MiB for a moment. That
    // spike is a login's, not the load's; each scenario's peak is measured on its own below.
    run.setupPeakRssMB = procMemoryMB(service.process.pid, 'VmHWM');
    // After the idle measurement: the check pays a checkout, whose settlement would wake the worker.
    log(`  ${kind.padEnd(8)} ideal server: same bytes, same row …`);
    ideal = await startIdeal(
      database.env,
      started.url,
      access.apiKey,
      bench.db,
      PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}-ideal`] : [],
    );
    const idealPid = ideal.child.process.pid;
    const context = {
      url: started.url,
      access,
      webhooks: {
        db: bench.db,
        organizationId: merchant.organizationId,
        receiver,
        timeoutMs: 60_000,
      },
      seconds: SECONDS,
      warmupSeconds: WARMUP_SECONDS,
      connections: CONNECTIONS,
      paid: [],
      serviceCpu: () => cpuSeconds(service?.process.pid),
      serviceStatements: () => statementsSent(started.url),
      databaseCpu: () => (kind === 'postgres' ? postgresCpuSeconds() : null),
      ideal: { url: ideal.url, cpu: () => cpuSeconds(idealPid) },
      samplePayment: ideal.payment,
      peers:
        kind === 'postgres' && access.webhookSecret
          ? { databaseUrl: PG_URL, receiverUrl: receiver.url, secret: access.webhookSecret }
          : null,
    };
    const chosen = SCENARIOS.filter(
      (scenario) =>
        (!ONLY.length || ONLY.some((text) => scenario.name.includes(text))) &&
        (!scenario.databases || scenario.databases.includes(kind)),
    );
    const measure = async (scenario: Scenario, round = '') => {
      log(`  ${kind.padEnd(8)} ${scenario.name}${round} …`);
      const load1Now = load1();
      // The peak of this scenario alone: VmHWM reset before it (else the highest sample every 100 ms).
      const exact = resetPeakRss(service?.process.pid);
      const rss = sampleRss(service?.process.pid);
      const result = await scenario.run(context);
      const sampled = rss.stop();
      const peak = exact ? procMemoryMB(service?.process.pid, 'VmHWM') : sampled;
      const cost = cpuCost(result);
      if (peak !== null && (run.peakRssMB === null || peak > run.peakRssMB)) run.peakRssMB = peak;
      return {
        database: kind,
        scenario: scenario.name,
        ...result,
        ratioToBare:
          result.requestsPerS === null
            ? null
            : Math.round((result.requestsPerS / bare.requestsPerS) * 1000) / 1000,
        cpuUsPerOp: cost.perOp === null ? null : Math.round(cost.perOp),
        cpuRatioToBare:
          cost.perRequest === null || bare.cpuUsPerRequest === null
            ? null
            : Math.round((bare.cpuUsPerRequest / cost.perRequest) * 1000) / 1000,
        peakRssMB: peak,
        load1: load1Now,
      } satisfies Row;
    };
    // A scenario the ideal also runs is measured in rounds, Kassa's and the ideal's in turn, so that a
    // slow spell of the machine weighs on both alike; the pair kept is the round whose CPU share is the
    // median, and every round's share is in its note.
    const idealOf = (scenario: Scenario) =>
      chosen.find((other) => other.name === IDEAL_PREFIX + scenario.name) ?? null;
    const paired = new Set(
      chosen.flatMap((scenario) => {
        const ideal = idealOf(scenario);
        return ideal ? [scenario, ideal] : [];
      }),
    );
    for (const scenario of chosen.filter((s) => !s.compared)) {
      if (scenario.name.startsWith(IDEAL_PREFIX) && paired.has(scenario)) continue;
      const ideal = idealOf(scenario);
      if (!ideal) {
        rows.push(await measure(scenario));
        continue;
      }
      const pairs: [Row, Row][] = [];
      for (let round = 1; round <= ROUNDS; round++) {
        const label = ROUNDS > 1 ? ` (round ${round} of ${ROUNDS})` : '';
        pairs.push([await measure(scenario, label), await measure(ideal, label)]);
      }
      rows.push(...medianPair(pairs));
    }
    // The queues set side by side (Kassa's worker and the peers) run in rounds, each queue once per
    // round in turn, so that what else the machine was doing weighs on all of them alike; each row is
    // the median round.
    const compared = chosen.filter((s) => s.compared);
    const rounds = new Map<Scenario, Row[]>(compared.map((s) => [s, []]));
    for (let round = 1; round <= ROUNDS; round++)
      for (const scenario of compared)
        rounds
          .get(scenario)
          ?.push(await measure(scenario, ROUNDS > 1 ? ` (round ${round} of ${ROUNDS})` : ''));
    for (const [scenario, measured] of rounds) rows.push(medianRound(scenario, measured));
  } catch (error) {
    run.error = error instanceof Error ? (error.stack ?? error.message) : String(error);
    log(`  ${kind}: FAILED ${run.error}`);
  } finally {
    if (service) await stop(service);
    if (ideal) await stop(ideal.child);
    receiver.close();
    await bench?.close();
    await database.drop();
  }
  for (const [dir, what] of PROFILE
    ? [
        [profileDir, 'service'],
        [`${profileDir}-ideal`, 'ideal server'],
      ]
    : []) {
    const file = existsSync(dir) && readdirSync(dir).find((name) => name.endsWith('.cpuprofile'));
    if (!file) continue;
    if (what === 'service') run.profile = join(dir, file);
    console.log(
      `\nCPU profile of the ${kind} ${what}: ${join(dir, file)}\n${summarizeProfile(join(dir, file), 25)}`,
    );
  }
  return run;
}

/**
 * The median of a compared scenario's rounds (by rate for throughput, by p99 for latency; the lower
 * middle of an even count): one real round, every figure of it, with each round's figure in its note.
 */
function medianRound(scenario: Scenario, measured: Row[]): Row {
  const figure = (row: Row) => (scenario.compared === 'latency' ? (row.p99Ms ?? Infinity) : row.rate);
  const sorted = [...measured].sort((a, b) => figure(a) - figure(b));
  const median = sorted[Math.floor((sorted.length - 1) / 2)];
  if (measured.length < 2) return median;
  const unit = scenario.compared === 'latency' ? ' ms p99' : '/s';
  const each = measured.map((row) => `${figure(row)}`).join(', ');
  return {
    ...median,
    note: [median.note, `median of ${measured.length} rounds: ${each}${unit}`].filter(Boolean).join('; '),
  };
}

/**
 * The median of a scenario's rounds beside the ideal, by the ideal's CPU per request as a share of
 * Kassa's (the lower middle of an even count): one real pair of rows, with every round's share in the
 * note of Kassa's row.
 */
function medianPair(pairs: [Row, Row][]): [Row, Row] {
  const share = ([kassa, ideal]: [Row, Row]) => {
    const [k, i] = [perOp(kassa).cpu, perOp(ideal).cpu];
    return k === null || i === null || k === 0 ? -1 : i / k;
  };
  const sorted = [...pairs].sort((a, b) => share(a) - share(b));
  const [kassa, ideal] = sorted[Math.floor((sorted.length - 1) / 2)];
  if (pairs.length < 2) return [kassa, ideal];
  const each = pairs.map((pair) => `${(share(pair) * 100).toFixed(1)}`).join(', ');
  const note = `median of ${pairs.length} rounds beside the ideal (CPU share: ${each} %)`;
  return [{ ...kassa, note: [kassa.note, note].filter(Boolean).join('; ') }, ideal];
}

function format(value: number | null, digits = 0): string {
  return value === null ? '-' : value.toFixed(digits);
}

function percent(ratio: number | null | undefined): string {
  return ratio == null ? '-' : `${(ratio * 100).toFixed(1)}%`;
}

/** Per operation: the service's CPU, and the service's plus PostgreSQL's, in µs (null when not measured). */
function perOp(row: Row): { cpu: number | null; withDb: number | null } {
  if (row.serviceCpuS === null || row.total === 0) return { cpu: null, withDb: null };
  const cpu = (row.serviceCpuS * 1e6) / row.total;
  return { cpu, withDb: row.databaseCpuS === null ? null : cpu + (row.databaseCpuS * 1e6) / row.total };
}

/** Each Kassa row the ideal also ran gets the ideal's CPU per request as a share of Kassa's. */
function pairWithIdeal(rows: Row[]): void {
  for (const row of rows) {
    if (row.scenario.startsWith(IDEAL_PREFIX)) continue;
    const ideal = rows.find((r) => r.database === row.database && r.scenario === IDEAL_PREFIX + row.scenario);
    if (!ideal) continue;
    const [kassa, best] = [perOp(row), perOp(ideal)];
    const share = (a: number | null, b: number | null) =>
      a === null || b === null || b === 0 ? null : Math.round((a / b) * 1000) / 1000;
    row.cpuRatioToIdeal = share(best.cpu, kassa.cpu);
    row.cpuDbRatioToIdeal = share(best.withDb, kassa.withDb);
  }
}

function printTable(rows: Row[], runs: ServiceRun[]): void {
  const table = [
    [
      'database',
      'scenario',
      'rate',
      'unit',
      'req/s',
      'p50 ms',
      'p99 ms',
      'CPU µs/op',
      'SQL/op',
      'DB µs/op',
      'vs ideal (CPU)',
      'vs ideal (CPU+DB)',
      'vs bare (CPU)',
      'peak RSS MB',
      'load',
    ],
    ...rows.map((row) => [
      row.database,
      row.scenario,
      format(row.rate, row.rate < 100 ? 1 : 0),
      row.unit,
      format(row.requestsPerS),
      format(row.p50Ms, row.p50Ms !== null && row.p50Ms < 10 ? 1 : 0),
      format(row.p99Ms, row.p99Ms !== null && row.p99Ms < 10 ? 1 : 0),
      format(row.cpuUsPerOp),
      row.statements === null || row.total === 0 ? '-' : (row.statements / row.total).toFixed(1),
      row.databaseCpuS === null || row.total === 0 ? '-' : ((row.databaseCpuS * 1e6) / row.total).toFixed(0),
      percent(row.cpuRatioToIdeal),
      percent(row.cpuDbRatioToIdeal),
      row.cpuRatioToBare === null ? '-' : `${(row.cpuRatioToBare * 100).toFixed(1)}%`,
      format(row.peakRssMB),
      row.load1.toFixed(2),
    ]),
  ];
  const widths = table[0].map((_, column) => Math.max(...table.map((line) => line[column].length)));
  const numeric = new Set([2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
  const line = (cells: string[]) =>
    cells.map((cell, i) => (numeric.has(i) ? cell.padStart(widths[i]) : cell.padEnd(widths[i]))).join('  ');
  console.log(`\n${line(table[0])}\n${widths.map((w) => '-'.repeat(w)).join('  ')}`);
  for (const cells of table.slice(1)) console.log(line(cells));
  for (const row of rows) {
    const notes = [row.failed ? `${row.failed} failed` : '', row.note ?? ''].filter(Boolean).join('; ');
    if (notes) console.log(`  (${row.database}, ${row.scenario}): ${notes}`);
  }
  console.log('');
  for (const run of runs) {
    if (run.skipped) console.log(`${run.database}: skipped — ${run.skipped}`);
    else
      console.log(
        `${run.database}: idle RSS ${format(run.idleRssMB)} MB, idle CPU ${describeIdle(run.idleCpu ?? null)}, peak RSS under load ${format(run.peakRssMB)} MB, ` +
          `peak during setup ${format(run.setupPeakRssMB ?? null)} MB (a login's scrypt)` +
          (run.error ? ` — FAILED: ${run.error.split('\n')[0]}` : ''),
      );
  }
}

interface Target {
  target: string;
  database: string;
  value: string;
  met: boolean;
}

function targets(rows: Row[], runs: ServiceRun[]): Target[] {
  const found: Target[] = [];
  const row = (database: string, prefix: string) =>
    rows.find((r) => r.database === database && r.scenario.startsWith(prefix));
  const idealShare = (run: ServiceRun, prefix: string, name: string) => {
    const r = row(run.database, prefix);
    if (r?.cpuRatioToIdeal == null) return;
    found.push({
      target: `${name} ≥ 80 % of the ideal (CPU per request)`,
      database: run.database,
      value: `${(r.cpuRatioToIdeal * 100).toFixed(1)} %`,
      met: r.cpuRatioToIdeal >= 0.8,
    });
    if (r.cpuDbRatioToIdeal != null)
      found.push({
        target: `${name} ≥ 70 % of the ideal (with PostgreSQL's CPU)`,
        database: run.database,
        value: `${(r.cpuDbRatioToIdeal * 100).toFixed(1)} %`,
        met: r.cpuDbRatioToIdeal >= 0.7,
      });
  };
  for (const run of runs) {
    if (run.skipped || run.error) continue;
    idealShare(run, 'GET /api/transactions', 'GET /transactions/{id}/');
    idealShare(run, 'POST /api/checkout/create', 'POST /checkout/create/');
    if (run.idleCpuMsPerS != null)
      found.push({
        target: 'idle CPU ≤ 2 ms/s',
        database: run.database,
        value: `${run.idleCpuMsPerS.toFixed(1)} ms/s`,
        met: run.idleCpuMsPerS <= 2,
      });
    const flow = row(run.database, 'pay → sync');
    if (run.database === 'postgres' && flow?.statements != null && flow.total > 0)
      found.push({
        target: 'pay → sync ≤ 15 statements per flow',
        database: run.database,
        value: (flow.statements / flow.total).toFixed(1),
        met: flow.statements / flow.total <= 15,
      });
    const deliveries = row(run.database, 'webhook deliveries');
    if (deliveries)
      found.push({
        target: '≥ 3,000 deliveries/s',
        database: run.database,
        value: `${deliveries.rate}/s`,
        met: deliveries.rate >= 3000,
      });
    const peers = (prefix: string) =>
      rows.filter(
        (r) =>
          r.database === run.database && r.scenario.startsWith(PEER_PREFIX) && r.scenario.includes(prefix),
      );
    const fastest = peers('webhook deliveries').sort((a, b) => b.rate - a.rate)[0];
    if (deliveries && fastest)
      found.push({
        target: `deliveries/s ahead of the fastest peer (${fastest.scenario.split(':')[0]}, ${fastest.rate}/s)`,
        database: run.database,
        value: `${deliveries.rate}/s, ×${(deliveries.rate / fastest.rate).toFixed(2)}`,
        met: deliveries.rate > fastest.rate,
      });
    const pgBoss = peers('webhook deliveries').find((r) => r.scenario.includes('pg-boss'));
    if (deliveries && pgBoss)
      found.push({
        target: `deliveries/s ≥ 1.5 × pg-boss (${pgBoss.rate}/s)`,
        database: run.database,
        value: `×${(deliveries.rate / pgBoss.rate).toFixed(2)}`,
        met: deliveries.rate >= 1.5 * pgBoss.rate,
      });
    const quickest = peers('webhook latency')
      .filter((r) => r.p99Ms !== null)
      .sort((a, b) => (a.p99Ms ?? 0) - (b.p99Ms ?? 0))[0];
    const latency = row(run.database, 'webhook latency');
    if (latency?.p99Ms != null && quickest?.p99Ms != null)
      found.push({
        target: `p99 at ${WEBHOOK_RATE} events/s below the best peer's (${quickest.scenario.split(':')[0]}, ${quickest.p99Ms} ms)`,
        database: run.database,
        value: `${latency.p99Ms} ms`,
        met: latency.p99Ms < quickest.p99Ms,
      });
    if (latency?.p99Ms != null)
      found.push({
        target: `p99 ≤ 50 ms at ${WEBHOOK_RATE} events/s`,
        database: run.database,
        value: `${latency.p99Ms} ms`,
        met: latency.p99Ms <= 50,
      });
    if (run.peakRssMB !== null)
      found.push({
        target: 'RSS ≤ 250 MB under load',
        database: run.database,
        value: `${run.peakRssMB} MB`,
        met: run.peakRssMB <= 250,
      });
  }
  return found;
}

async function main(): Promise<number> {
  const rows: Row[] = [];
  const loadBefore = loadavg().map((value) => Math.round(value * 100) / 100);
  log(
    `kassa bench: ${SECONDS} s per measurement (+${WARMUP_SECONDS} s warm-up), ${CONNECTIONS} connections, ` +
      `load average ${loadBefore.join(' ')}`,
  );
  const bare = await benchBare(rows);
  const runs: ServiceRun[] = [];
  for (const kind of ['sqlite', 'postgres'] as const)
    if (DATABASES.includes(kind)) runs.push(await benchDatabase(kind, bare, rows));
  const loadAfter = loadavg().map((value) => Math.round(value * 100) / 100);
  pairWithIdeal(rows);
  printTable(rows, runs);
  const checked = targets(rows, runs);
  console.log('\ntargets:');
  for (const t of checked)
    console.log(`  ${t.met ? 'met   ' : 'MISSED'} ${t.target} (${t.database}): ${t.value}`);
  console.log(
    `\nload average (1, 5, 15 min): before ${loadBefore.join(' ')}, after ${loadAfter.join(' ')} on ${cpus().length} CPUs`,
  );
  const report = {
    started_at: STARTED_AT.toISOString(),
    seconds: SECONDS,
    warmup_seconds: WARMUP_SECONDS,
    connections: CONNECTIONS,
    load_average: { before: loadBefore, after: loadAfter },
    machine: { cpus: cpus().length, cpu: cpus()[0]?.model ?? '', memory_mb: Math.round(totalmem() / 1e6) },
    node: process.version,
    services: runs,
    results: rows,
    targets: checked,
  };
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = join(RESULTS_DIR, `${STARTED_AT.toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`results written to ${file}`);
  return runs.some((run) => run.error) ? 1 : 0;
}

process.exitCode = await main();
