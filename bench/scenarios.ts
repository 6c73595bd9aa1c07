// What `npm run bench` measures against each database's running service, in this order (the refund
// scenario refunds the payments the flow scenario made). To add one, append it to SCENARIOS: `run`
// gets the running service, its merchant and the shared state, and returns one row of the table.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { webhooksInFlight } from '../src/modules/webhooks/worker-store.ts';
import { autocannon, type BenchRequest, type LoadResult, summarize } from './autocannon.ts';
import type { DriverConfig, DriverResult } from './driver.ts';
import { type PeerSetting, peerScenarios } from './peers/run.ts';
import { runNode, sleep } from './processes.ts';
import { CHECKOUT_BODY, type MerchantAccess, makePayment } from './service.ts';
import { type Enqueue, type WebhookBench, webhookLatency, webhookThroughput } from './webhooks.ts';

export interface ScenarioContext {
  url: string;
  access: MerchantAccess;
  webhooks: WebhookBench;
  seconds: number;
  warmupSeconds: number;
  connections: number;
  /** Paid payments made so far (by the flow scenario), for the refund scenario to refund. */
  paid: string[];
  /** CPU seconds the service process has used so far. */
  serviceCpu(): number | null;
  /** SQL statements the service has sent so far (kassa_db_statements_total in its /metrics). */
  serviceStatements(): Promise<number | null>;
  /** CPU seconds the local PostgreSQL server has used so far (null on SQLite). */
  databaseCpu(): number | null;
  /** The ideal server (bench/ideal/server.ts) on the same database, and the CPU seconds it has used. */
  ideal: { url: string; cpu(): number | null } | null;
  /** The payment the GET scenario reads (the ideal reads the same one). */
  samplePayment?: string;
  /** Where the peer job queues run (PostgreSQL only; null on SQLite). */
  peers: PeerSetting | null;
}

export interface ScenarioResult {
  /** What the rate counts: requests, complete flows, deliveries. */
  unit: 'req/s' | 'flows/s' | 'deliveries/s' | 'events/s';
  rate: number;
  /** HTTP requests per second (the ratio to the bare route is taken on this); null when no HTTP. */
  requestsPerS: number | null;
  p50Ms: number | null;
  p99Ms: number | null;
  total: number;
  failed: number;
  /** CPU seconds the service spent on the measured part (warm-up excluded). */
  serviceCpuS: number | null;
  /** SQL statements the service sent during the measured part (BEGIN and COMMIT included). */
  statements: number | null;
  /** CPU seconds the PostgreSQL server spent during the measured part (null on SQLite). */
  databaseCpuS: number | null;
  note?: string;
}

/** What the service spent on a measured part: CPU seconds and SQL statements. */
export type Spent = Pick<ScenarioResult, 'serviceCpuS' | 'statements' | 'databaseCpuS'>;

export interface Scenario {
  name: string;
  /** The databases it runs on (all when absent). */
  databases?: ('sqlite' | 'postgres')[];
  /**
   * A webhook queue's figure set beside the others' (Kassa's and the peers'): these scenarios run in
   * interleaved rounds (run.ts), and the row is the median round, by rate for `throughput`, by p99 for
   * `latency`.
   */
  compared?: 'throughput' | 'latency';
  run(context: ScenarioContext): Promise<ScenarioResult>;
}

/** Runs bench/driver.ts in a child process with this configuration. */
export async function drive(config: DriverConfig): Promise<DriverResult> {
  const dir = mkdtempSync(join(tmpdir(), 'kassa-driver-'));
  try {
    const file = join(dir, 'config.json');
    writeFileSync(file, JSON.stringify(config));
    const { code, output } = await runNode(['bench/driver.ts', file], {});
    const line = output.trim().split('\n').pop() ?? '';
    if (code !== 0 || !line.startsWith('{')) throw new Error(`driver failed (${code}):\n${output}`);
    return JSON.parse(line) as DriverResult;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function unexpectedNote(unexpected: Record<string, number>): string | undefined {
  const parts = Object.entries(unexpected).map(([what, count]) => `${count}× ${what}`);
  return parts.length ? `unexpected: ${parts.join(', ')}` : undefined;
}

/**
 * Waits (up to `timeoutMs`) until the service has no background work left: nothing to send, no refund
 * waiting for the provider and no deposit about to settle (the flow scenario's payments settle
 * KASSA_SIM_SETTLE_DELAY_MS after they were paid). Otherwise the webhook figures would also carry the
 * settlement and refund completion of the earlier scenarios' thousands of payments.
 */
async function outboxQuiet(webhooks: WebhookBench, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    // The refunds and deposits are read first: a refund or deposit that settles commits its events with
    // it, so once they read zero, the webhook count read after them includes those events.
    const row = await sql<{ n: number | string }>`
      select (select count(*) from refunds where status in ('pending', 'processing'))
           + (select count(*) from payments where deposit_status = 'pending') as n`.execute(webhooks.db);
    if (Number(row.rows[0]?.n ?? 0) === 0 && (await webhooksInFlight(webhooks.db)) === 0) return;
    await sleep(100);
  }
}

/**
 * Starts counting what the service (and PostgreSQL) spend: `cpuFrom()` may restart the CPU counts
 * later (the backlog's, at its commit), `stop()` gives the totals. The statements are counted from the
 * start: what runs before `cpuFrom()` goes through the benchmark's own connection, not the service.
 */
async function spending(context: ScenarioContext) {
  const statementsBefore = await context.serviceStatements();
  let databaseBefore = context.databaseCpu();
  let before = context.serviceCpu();
  return {
    cpuFrom() {
      databaseBefore = context.databaseCpu();
      before = context.serviceCpu();
    },
    async stop(): Promise<Spent> {
      const after = context.serviceCpu();
      const databaseAfter = context.databaseCpu();
      const statementsAfter = await context.serviceStatements();
      return {
        serviceCpuS: before === null || after === null ? null : Math.round((after - before) * 100) / 100,
        statements:
          statementsBefore === null || statementsAfter === null ? null : statementsAfter - statementsBefore,
        databaseCpuS:
          databaseBefore === null || databaseAfter === null
            ? null
            : Math.round((databaseAfter - databaseBefore) * 100) / 100,
      };
    },
  };
}

/** Runs `work` and returns its result with the service CPU seconds and SQL statements it took. */
async function timed<T>(context: ScenarioContext, work: () => Promise<T>): Promise<[T, Spent]> {
  const meter = await spending(context);
  const result = await work();
  return [result, await meter.stop()];
}

async function autocannonScenario(context: ScenarioContext, request: BenchRequest): Promise<ScenarioResult> {
  await autocannon(context.url, request, context.warmupSeconds, context.connections);
  const [raw, spent] = await timed(context, () =>
    autocannon(context.url, request, context.seconds, context.connections),
  );
  return requestRow(summarize(raw, request), spent);
}

/** The same load on the ideal server: its own CPU, PostgreSQL's, and no statement count (it has no metrics). */
async function idealScenario(context: ScenarioContext, request: BenchRequest): Promise<ScenarioResult> {
  const ideal = context.ideal;
  if (!ideal) throw new Error('the ideal server is not running');
  await autocannon(ideal.url, request, context.warmupSeconds, context.connections);
  const [raw, spent] = await timed(
    { ...context, serviceCpu: ideal.cpu, serviceStatements: async () => null },
    () => autocannon(ideal.url, request, context.seconds, context.connections),
  );
  return requestRow(summarize(raw, request), spent);
}

/** The prefix of the ideal's row for a Kassa scenario; run.ts pairs them by it. */
export const IDEAL_PREFIX = 'ideal: ';

function getTransaction(context: ScenarioContext): BenchRequest {
  if (!context.samplePayment) throw new Error('no payment to read: the GET scenario makes it');
  return {
    method: 'GET',
    path: `/api/transactions/${context.samplePayment}/`,
    headers: { authorization: `Api-Key ${context.access.apiKey}` },
    expectStatus: 200,
  };
}

function createCheckout(context: ScenarioContext): BenchRequest {
  return {
    method: 'POST',
    path: '/api/checkout/create/',
    headers: { authorization: `Api-Key ${context.access.apiKey}` },
    body: JSON.stringify(CHECKOUT_BODY),
    expectStatus: 201,
  };
}

/** A table row for an autocannon measurement (its rate is requests per second). */
export function requestRow(result: LoadResult, spent: Spent): ScenarioResult {
  return {
    ...spent,
    unit: 'req/s',
    rate: result.requestsPerS,
    requestsPerS: result.requestsPerS,
    p50Ms: result.p50Ms,
    p99Ms: result.p99Ms,
    total: result.total,
    failed: result.failed,
  };
}

export const WEBHOOK_RATE = 500;
const WEBHOOK_THROUGHPUT = 'webhook deliveries (backlog → loopback receiver)';
const WEBHOOK_LATENCY = `webhook latency at ${WEBHOOK_RATE} events/s (commit → receiver)`;

/** A backlog committed at once, delivered by Kassa's worker (or by a peer queue, given its `enqueue`). */
async function webhookThroughputScenario(
  context: ScenarioContext,
  enqueue?: Enqueue,
): Promise<ScenarioResult> {
  await outboxQuiet(context.webhooks);
  const events = Math.max(2000, 3000 * context.seconds);
  // Counted from the commit: the events (or jobs) are written before it, by the benchmark, each queue
  // in its own way (Kassa's one insert per event, as emitEvent writes them; the peers' one batch), and
  // what a delivery costs is what comes after.
  const meter = await spending(context);
  const result = await webhookThroughput(context.webhooks, events, enqueue, () => meter.cpuFrom());
  const spent = await meter.stop();
  return {
    ...spent,
    unit: 'deliveries/s',
    rate: result.perSecond,
    requestsPerS: null,
    p50Ms: null,
    p99Ms: null,
    total: result.delivered,
    failed: result.events - result.delivered,
    note: `${result.events} events committed at once; ${result.delivered} delivered in ${result.elapsedS} s`,
  };
}

/** Events at WEBHOOK_RATE, commit → receiver. */
async function webhookLatencyScenario(context: ScenarioContext, enqueue?: Enqueue): Promise<ScenarioResult> {
  await outboxQuiet(context.webhooks);
  const [result, spent] = await timed(context, () =>
    webhookLatency(context.webhooks, WEBHOOK_RATE, context.seconds, enqueue, context.warmupSeconds),
  );
  return {
    ...spent,
    unit: 'events/s',
    rate: result.eventsPerSecond,
    requestsPerS: null,
    p50Ms: result.p50Ms,
    p99Ms: result.p99Ms,
    total: result.delivered,
    failed: result.events - result.delivered,
    note: `max ${result.maxMs} ms`,
  };
}

export const SCENARIOS: Scenario[] = [
  {
    // The floor under every API figure: Kassa's own server (its hooks, request ids, headers, metrics)
    // answering a route that does no work. What a request scenario costs above it is its own work.
    name: 'GET /healthz (the service, no work)',
    async run(context) {
      return autocannonScenario(context, { method: 'GET', path: '/healthz', expectStatus: 200 });
    },
  },
  {
    name: 'GET /api/transactions/{id}/',
    async run(context) {
      context.samplePayment ??= await makePayment(context.url, context.access.apiKey);
      return autocannonScenario(context, getTransaction(context));
    },
  },
  {
    name: `${IDEAL_PREFIX}GET /api/transactions/{id}/`,
    async run(context) {
      context.samplePayment ??= await makePayment(context.url, context.access.apiKey);
      return idealScenario(context, getTransaction(context));
    },
  },
  {
    name: 'POST /api/checkout/create/',
    async run(context) {
      return autocannonScenario(context, createCheckout(context));
    },
  },
  {
    name: `${IDEAL_PREFIX}POST /api/checkout/create/`,
    async run(context) {
      return idealScenario(context, createCheckout(context));
    },
  },
  {
    name: 'pay → sync flow (create, pay, sync-status)',
    async run(context) {
      const flows = { mode: 'flows', url: context.url, apiKey: context.access.apiKey } as const;
      const warmup = await drive({
        ...flows,
        connections: context.connections,
        seconds: context.warmupSeconds,
      });
      const [result, spent] = await timed(context, () =>
        drive({ ...flows, connections: context.connections, seconds: context.seconds }),
      );
      context.paid.push(...warmup.paid, ...result.paid);
      return {
        ...spent,
        unit: 'flows/s',
        rate: result.perSecond,
        requestsPerS: Math.round(result.perSecond * 3),
        p50Ms: result.p50Ms,
        p99Ms: result.p99Ms,
        total: result.completed,
        failed: result.failed,
        note: unexpectedNote(result.unexpected),
      };
    },
  },
  {
    name: 'POST /api/transactions/{id}/refund/ (one per payment)',
    async run(context) {
      const transactionIds = context.paid.splice(0);
      const [result, spent] = await timed(context, () =>
        drive({
          mode: 'refunds',
          url: context.url,
          apiKey: context.access.apiKey,
          connections: context.connections,
          seconds: context.seconds,
          transactionIds,
        }),
      );
      const ranOut = result.completed + result.failed >= transactionIds.length;
      const notes = [
        ranOut
          ? `all ${transactionIds.length} paid payments refunded in ${result.elapsedS} s (the flow scenario made them)`
          : undefined,
        unexpectedNote(result.unexpected),
      ].filter((note) => note !== undefined);
      return {
        ...spent,
        unit: 'req/s',
        rate: result.perSecond,
        requestsPerS: result.perSecond,
        p50Ms: result.p50Ms,
        p99Ms: result.p99Ms,
        total: result.completed,
        failed: result.failed,
        note: notes.length ? notes.join('; ') : undefined,
      };
    },
  },
  {
    name: WEBHOOK_THROUGHPUT,
    compared: 'throughput',
    run: (context) => webhookThroughputScenario(context),
  },
  {
    name: WEBHOOK_LATENCY,
    compared: 'latency',
    run: (context) => webhookLatencyScenario(context),
  },
  ...peerScenarios(webhookThroughputScenario, webhookLatencyScenario, {
    throughput: WEBHOOK_THROUGHPUT,
    latency: WEBHOOK_LATENCY,
  }),
];
