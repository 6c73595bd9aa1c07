// Webhook delivery figures against a running service (its worker sends, the receiver process counts):
//   throughput: a backlog of events committed in one transaction; deliveries per second from that
//               commit to the arrival of the last one.
//   latency:    events committed at a steady rate (a small transaction every 10 ms); commit → arrival.
// The events are written from the benchmark's own connection to the service's database, exactly as
// emitEvent writes them inside a business transaction, and go through the real outbox dispatch. On
// SQLite that makes a second writing process, whose locks the service's worker sometimes waits on: a
// one-process deployment does not have that wait, so the SQLite latency here errs on the high side.
import type { Kysely } from 'kysely';
import type { Database } from '../src/db/database.ts';
import { emitEvent } from '../src/modules/events/emit.ts';
import { percentile } from './driver.ts';
import { sleep } from './processes.ts';
import { preciseNow, type ReceiverProcess } from './receiver.ts';

export interface WebhookBench {
  db: Kysely<Database>;
  organizationId: number;
  receiver: ReceiverProcess;
  /** Give up waiting for deliveries after this long. */
  timeoutMs: number;
}

export interface ThroughputResult {
  events: number;
  delivered: number;
  elapsedS: number;
  perSecond: number;
}

export interface LatencyResult {
  events: number;
  delivered: number;
  /** The rate the events were actually committed at. */
  eventsPerSecond: number;
  p50Ms: number | null;
  p99Ms: number | null;
  maxMs: number | null;
}

let runs = 0;

function event(bench: WebhookBench, marker: string, now: string) {
  return {
    organizationId: bench.organizationId,
    environment: 'production' as const,
    type: 'webhook.test' as const,
    subject: null,
    payload: { message: 'bench', marker },
    now,
  };
}

/** Waits until the receiver has `count` benchmark events, or the timeout; returns the arrivals. */
async function arrivals(bench: WebhookBench, count: number): Promise<Map<string, number>> {
  const deadline = Date.now() + bench.timeoutMs;
  while (Date.now() < deadline) {
    const { marked } = await bench.receiver.ask({ type: 'count' }, 'count');
    if (marked >= count) break;
    await sleep(50);
  }
  return new Map((await bench.receiver.ask({ type: 'arrivals' }, 'arrivals')).arrivals);
}

/** Commits one event per marker in one transaction (the service's outbox, or a peer queue's jobs). */
export type Enqueue = (markers: string[]) => Promise<void>;

/** Kassa's way: events written as emitEvent writes them inside a business transaction. */
export function kassaEnqueue(bench: WebhookBench): Enqueue {
  return async (markers) => {
    const now = new Date().toISOString();
    await bench.db.transaction().execute(async (trx) => {
      for (const marker of markers) await emitEvent(trx, event(bench, marker, now));
    });
  };
}

/** The body Kassa sends for a benchmark event (what the peers send too). */
export function benchEventBody(marker: string): string {
  return JSON.stringify({ event: 'webhook.test', message: 'bench', marker, livemode: true });
}

export async function webhookThroughput(
  bench: WebhookBench,
  events: number,
  enqueue: Enqueue = kassaEnqueue(bench),
  committed: () => void = () => {},
): Promise<ThroughputResult> {
  runs += 1;
  const prefix = `throughput-${runs}-`;
  await bench.receiver.ask({ type: 'reset' }, 'ok');
  await enqueue(Array.from({ length: events }, (_, i) => `${prefix}${i}`));
  const committedAt = preciseNow();
  committed();
  const arrived = await arrivals(bench, events);
  const times = [...arrived].filter(([marker]) => marker.startsWith(prefix)).map(([, at]) => at);
  const elapsedMs = times.length ? Math.max(...times) - committedAt : bench.timeoutMs;
  return {
    events,
    delivered: times.length,
    elapsedS: Math.round(elapsedMs) / 1000,
    perSecond: Math.round((times.length / elapsedMs) * 1000),
  };
}

/**
 * Events at a steady rate: every 10 ms one transaction commits the events due by then (5 at 500/s), as
 * the API's transactions would; latency runs from each commit to the event's arrival at the receiver.
 * The first `warmupSeconds` of events are sent and received like the rest but not counted, as the
 * request scenarios' warm-up is not: each queue's first second (its code compiled, its connections and
 * plans made) weighed more on its p99 than the rest of the run (Kassa's first second after an idle
 * spell: 21 ms against 8.7 after it, 2026-11-28).
 */
export async function webhookLatency(
  bench: WebhookBench,
  rate: number,
  seconds: number,
  enqueue: Enqueue = kassaEnqueue(bench),
  warmupSeconds = 0,
): Promise<LatencyResult> {
  runs += 1;
  const prefix = `latency-${runs}-`;
  await bench.receiver.ask({ type: 'reset' }, 'ok');
  const warmup = Math.round(rate * warmupSeconds);
  const total = warmup + Math.round(rate * seconds);
  const committed = new Map<string, number>();
  const tickMs = 10;
  const begin = performance.now();
  for (let sent = 0; sent < total; ) {
    const due = Math.min(total, Math.floor(((performance.now() - begin) / 1000) * rate) + 1);
    const markers: string[] = [];
    for (; sent < due; sent += 1) markers.push(`${prefix}${sent}`);
    await enqueue(markers);
    const at = preciseNow();
    for (const marker of markers)
      if (Number(marker.slice(prefix.length)) >= warmup) committed.set(marker, at);
    await sleep(tickMs);
  }
  const emittedS = (performance.now() - begin) / 1000;
  const arrived = await arrivals(bench, total);
  const latencies: number[] = [];
  for (const [marker, at] of committed) {
    const arrival = arrived.get(marker);
    if (arrival !== undefined) latencies.push(arrival - at);
  }
  latencies.sort((a, b) => a - b);
  return {
    events: total - warmup,
    delivered: latencies.length,
    eventsPerSecond: Math.round(total / emittedS),
    p50Ms: percentile(latencies, 0.5),
    p99Ms: percentile(latencies, 0.99),
    maxMs: percentile(latencies, 1),
  };
}
