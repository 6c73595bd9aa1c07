// npm run bench:scale: the scale-out shape on PostgreSQL: two API processes (`kassa serve --no-worker`)
// and two workers (`kassa worker`) on one schema. Measures checkout creation and GET /transactions on
// one API process, then with load spread over both (an autocannon per port, at the same time); then
// drives mixed traffic (pay → sync flows and refunds on both ports, a webhook backlog for both workers),
// waits for the outbox to drain and checks the invariants (bench/invariants.ts) with what the loopback
// receiver got. Exit code 1 if an invariant fails.
//
//   KASSA_BENCH_SECONDS (default 5), KASSA_BENCH_CONNECTIONS (default 10 per port),
//   KASSA_BENCH_DATABASE_URL (default postgres://root@127.0.0.1:5432/test; a fresh schema, dropped after)
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config.ts';
import { type DbHandle, openDatabase } from '../src/db/connection.ts';
import { webhooksInFlight } from '../src/modules/webhooks/worker-store.ts';
import { type BenchRequest, type LoadResult, load } from './autocannon.ts';
import type { DriverResult } from './driver.ts';
import { checkInvariants, formatInvariants, type InvariantResult } from './invariants.ts';
import { type Child, procMemoryMB, ROOT, runNode, sleep, stop } from './processes.ts';
import { startReceiverProcess } from './receiver.ts';
import { drive } from './scenarios.ts';
import {
  CHECKOUT_BODY,
  createBenchDatabase,
  createMerchantWithCli,
  DEFAULT_PG_URL,
  makePayment,
  merchantAccess,
  postgresProblem,
  startServe,
  startWorkerProcess,
} from './service.ts';
import { webhookThroughput } from './webhooks.ts';

const SECONDS = Number(process.env.KASSA_BENCH_SECONDS) || 5;
const CONNECTIONS = Number(process.env.KASSA_BENCH_CONNECTIONS) || 10;
const PG_URL = process.env.KASSA_BENCH_DATABASE_URL || DEFAULT_PG_URL;
const LOAD = { seconds: SECONDS, connections: CONNECTIONS, warmupSeconds: 1 };

function log(line: string) {
  process.stderr.write(`${line}\n`);
}

interface Comparison {
  scenario: string;
  one: LoadResult;
  two: LoadResult[];
  load1: number;
}

/** The same request on every URL at once; one result per URL. */
function loadAll(urls: string[], request: BenchRequest): Promise<LoadResult[]> {
  return Promise.all(urls.map((url) => load(url, request, LOAD)));
}

async function waitForQuiet(handle: DbHandle, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const count = async (query: Promise<{ n: string | number | bigint } | undefined>) =>
      Number((await query)?.n ?? 0);
    const busy =
      (await webhooksInFlight(handle.db)) +
      (await count(
        handle.db
          .selectFrom('refunds')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('status', 'in', ['pending', 'processing'])
          .executeTakeFirst(),
      ));
    if (busy === 0) return true;
    await sleep(250);
  }
  return false;
}

function printComparisons(comparisons: Comparison[]) {
  const rows = [
    ['scenario', '1 API process', '2 API processes', 'scale', 'p99 ms (1 | 2)', 'load'],
    ...comparisons.map((c) => {
      const total = c.two.reduce((sum, r) => sum + r.requestsPerS, 0);
      return [
        c.scenario,
        `${c.one.requestsPerS} req/s`,
        `${total} req/s (${c.two.map((r) => r.requestsPerS).join(' + ')})`,
        `×${(total / c.one.requestsPerS).toFixed(2)}`,
        `${c.one.p99Ms} | ${c.two.map((r) => r.p99Ms).join(', ')}`,
        c.load1.toFixed(2),
      ];
    }),
  ];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  for (const [index, row] of rows.entries()) {
    console.log(row.map((cell, i) => cell.padEnd(widths[i])).join('  '));
    if (index === 0) console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  }
}

async function main(): Promise<number> {
  const problem = await postgresProblem(PG_URL);
  if (problem) {
    console.error(`bench:scale needs PostgreSQL: ${PG_URL} is not reachable (${problem}).`);
    console.error('Start it, or point KASSA_BENCH_DATABASE_URL at one.');
    return 1;
  }
  const startedAt = new Date();
  const loadBefore = loadavg().map((value) => Math.round(value * 100) / 100);
  log(`kassa bench:scale on ${cpus().length} CPUs, load average ${loadBefore.join(' ')}`);
  const database = createBenchDatabase('postgres', PG_URL);
  const children: Child[] = [];
  const receiver = await startReceiverProcess();
  let handle: DbHandle | null = null;
  let invariants: InvariantResult[] = [];
  const comparisons: Comparison[] = [];
  const mixed: Record<string, unknown> = {};
  const memory: Record<string, number | null> = {};
  try {
    // Migrate once before several processes start (docs/operations.md), then the merchant.
    const migrated = await runNode(['src/cli/main.ts', 'migrate'], database.env);
    if (migrated.code !== 0) throw new Error(`migrate failed:\n${migrated.output}`);
    const merchant = await createMerchantWithCli(database.env);
    const api1 = await startServe(database.env, { worker: false });
    children.push(api1.child, await startWorkerProcess(database.env));
    const access = await merchantAccess(api1.url, merchant, `${receiver.url}/hooks`);
    if (access.webhookSecret) await receiver.ask({ type: 'secret', secret: access.webhookSecret }, 'ok');
    handle = openDatabase(loadConfig(database.env).database);
    const payment = await makePayment(api1.url, access.apiKey);
    const auth = { authorization: `Api-Key ${access.apiKey}` };
    const requests: [string, BenchRequest][] = [
      [
        'POST /api/checkout/create/',
        {
          method: 'POST',
          path: '/api/checkout/create/',
          headers: auth,
          body: JSON.stringify(CHECKOUT_BODY),
          expectStatus: 201,
        },
      ],
      [
        'GET /api/transactions/{id}/',
        { method: 'GET', path: `/api/transactions/${payment}/`, headers: auth, expectStatus: 200 },
      ],
    ];
    const one = new Map<string, { result: LoadResult; load1: number }>();
    for (const [name, request] of requests) {
      log(`  1 API process: ${name} …`);
      const load1 = loadavg()[0];
      one.set(name, { result: (await loadAll([api1.url], request))[0], load1 });
    }

    const api2 = await startServe(database.env, { worker: false });
    children.push(api2.child, await startWorkerProcess(database.env));
    const urls = [api1.url, api2.url];
    for (const [name, request] of requests) {
      log(`  2 API processes: ${name} …`);
      const before = one.get(name);
      if (!before) continue;
      const two = await loadAll(urls, request);
      comparisons.push({ scenario: name, one: before.result, two, load1: before.load1 });
    }

    log('  mixed traffic on both API processes, both workers: pay → sync flows, then refunds …');
    const flows = await Promise.all(
      urls.map((url) =>
        drive({ mode: 'flows', url, apiKey: access.apiKey, connections: CONNECTIONS, seconds: SECONDS }),
      ),
    );
    const paid = flows.flatMap((result) => result.paid);
    const refunds: DriverResult[] = await Promise.all(
      urls.map((url, index) =>
        drive({
          mode: 'refunds',
          url,
          apiKey: access.apiKey,
          connections: CONNECTIONS,
          seconds: SECONDS * 2,
          transactionIds: paid.filter((_, i) => i % urls.length === index),
        }),
      ),
    );
    log('  webhook backlog for two workers …');
    const deliveries = await webhookThroughput(
      {
        db: handle.db,
        organizationId: merchant.organizationId,
        receiver,
        timeoutMs: 60_000,
      },
      3000 * SECONDS,
    );
    mixed.flows = flows.map(({ paid: _paid, ...result }) => result);
    mixed.refunds = refunds.map(({ paid: _paid, ...result }) => result);
    mixed.deliveries = deliveries;

    log('  waiting for the outbox to drain and the refunds to complete …');
    const drained = await waitForQuiet(handle, 90_000);
    for (const [index, child] of children.entries())
      memory[`${index % 2 === 0 ? 'api' : 'worker'}${Math.floor(index / 2) + 1}`] = procMemoryMB(
        child.process.pid,
        'VmHWM',
      );
    const received = (await receiver.ask({ type: 'deliveries' }, 'deliveries')).deliveries;
    invariants = await checkInvariants(handle.db, { received });
    if (!drained)
      invariants.unshift({ name: 'drained within 90 s', checked: 1, problems: ['no'], problemCount: 1 });

    console.log('');
    printComparisons(comparisons);
    console.log('');
    for (const [i, result] of flows.entries())
      console.log(
        `flows on API ${i + 1}: ${result.perSecond}/s (p50 ${result.p50Ms} ms, p99 ${result.p99Ms} ms, ${result.failed} failed)`,
      );
    for (const [i, result] of refunds.entries())
      console.log(
        `refunds on API ${i + 1}: ${result.completed} in ${result.elapsedS} s = ${result.perSecond}/s (${result.failed} refused)`,
      );
    console.log(
      `webhook backlog, 2 workers: ${deliveries.delivered}/${deliveries.events} in ${deliveries.elapsedS} s = ${deliveries.perSecond}/s`,
    );
    console.log(
      `peak RSS (VmHWM, MB): ${Object.entries(memory)
        .map(([name, mb]) => `${name} ${mb}`)
        .join(', ')}`,
    );
    console.log(`\ninvariants:\n${formatInvariants(invariants)}`);
  } finally {
    await Promise.all(children.map((child) => stop(child)));
    receiver.close();
    await handle?.close();
    await database.drop();
  }
  const loadAfter = loadavg().map((value) => Math.round(value * 100) / 100);
  console.log(`\nload average (1, 5, 15 min): before ${loadBefore.join(' ')}, after ${loadAfter.join(' ')}`);
  const dir = join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `scale-out-${startedAt.toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(
    file,
    `${JSON.stringify(
      {
        started_at: startedAt.toISOString(),
        seconds: SECONDS,
        connections_per_port: CONNECTIONS,
        load_average: { before: loadBefore, after: loadAfter },
        cpus: cpus().length,
        comparisons,
        mixed,
        peak_rss_mb: memory,
        invariants,
      },
      null,
      2,
    )}\n`,
  );
  console.log(`results written to ${file}`);
  return invariants.every((result) => result.problemCount === 0) && invariants.length > 0 ? 0 : 1;
}

process.exitCode = await main();
