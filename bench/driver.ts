// Load that autocannon cannot make: requests that depend on the previous answer. Runs in a child
// process of its own (`node bench/driver.ts <config.json>`), prints one JSON line of results.
//
//   flows:   N concurrent customers, each looping create checkout (API key) → pay with 4242… (hosted
//            step) → sync-status; a flow counts when all three answered as expected. Latency is per flow.
//   refunds: N concurrent clients refunding the given paid payments in full, one refund each, until the
//            list or the time runs out.
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { CHECKOUT_BODY } from './service.ts';

export interface DriverConfig {
  mode: 'flows' | 'refunds';
  url: string;
  apiKey: string;
  connections: number;
  seconds: number;
  /** refunds: the payments to refund, public TX ids. */
  transactionIds?: string[];
}

export interface DriverResult {
  completed: number;
  failed: number;
  elapsedS: number;
  perSecond: number;
  p50Ms: number | null;
  p99Ms: number | null;
  /** Answers that were not the expected ones, by "step status". */
  unexpected: Record<string, number>;
  /** flows: the payments made (paid). */
  paid: string[];
}

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

function client(base: string, connections: number) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const target = new URL(base);
  return (method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const request = http.request(
        {
          host: target.hostname,
          port: target.port,
          method,
          path,
          agent,
          headers: {
            ...headers,
            ...(payload === undefined
              ? {}
              : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
          },
        },
        (response) => {
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => {
            text += chunk;
          });
          response.on('end', () => {
            try {
              resolve({ status: response.statusCode ?? 0, body: text ? JSON.parse(text) : {} });
            } catch (error) {
              reject(error);
            }
          });
        },
      );
      request.on('error', reject);
      request.end(payload);
    });
}

export function percentile(sorted: number[], q: number): number | null {
  if (sorted.length === 0) return null;
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] * 10) / 10;
}

/** The median of sorted figures (the mean of the two middle ones for an even count), unrounded. */
export function median(sorted: number[]): number | null {
  if (sorted.length === 0) return null;
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

class Tally {
  completed = 0;
  failed = 0;
  readonly latencies: number[] = [];
  readonly unexpected: Record<string, number> = {};
  miss(step: string, status: number) {
    this.failed += 1;
    const key = `${step} ${status}`;
    this.unexpected[key] = (this.unexpected[key] ?? 0) + 1;
  }
  result(elapsedMs: number, paid: string[]): DriverResult {
    const sorted = [...this.latencies].sort((a, b) => a - b);
    return {
      completed: this.completed,
      failed: this.failed,
      elapsedS: Math.round(elapsedMs) / 1000,
      perSecond: Math.round((this.completed / elapsedMs) * 1000 * 10) / 10,
      p50Ms: percentile(sorted, 0.5),
      p99Ms: percentile(sorted, 0.99),
      unexpected: this.unexpected,
      paid,
    };
  }
}

const CARD = {
  card_number: '4242424242424242',
  exp_month: 12,
  exp_year: 2099,
  cvc: '123',
  cardholder_name: 'Ada Lovelace',
};

async function flows(config: DriverConfig): Promise<DriverResult> {
  const send = client(config.url, config.connections);
  const auth = { authorization: `Api-Key ${config.apiKey}` };
  const paid: string[] = [];
  const tally = new Tally();
  const started = performance.now();
  const ends = started + config.seconds * 1000;

  async function flow(): Promise<void> {
    const began = performance.now();
    const created = await send('POST', '/api/checkout/create/', auth, CHECKOUT_BODY);
    if (created.status !== 201) return tally.miss('create', created.status);
    const token = String(created.body.token);
    const payment = await send('POST', `/api/checkout/${token}/pay/`, {}, CARD);
    if (payment.status !== 200 || payment.body.payment_status !== 'paid')
      return tally.miss('pay', payment.status);
    const synced = await send('POST', '/api/checkout/sync-status/', {}, { token });
    if (synced.status !== 200 || synced.body.status !== 'SUCCESS') return tally.miss('sync', synced.status);
    paid.push(String(synced.body.transaction_id));
    tally.completed += 1;
    tally.latencies.push(performance.now() - began);
  }

  await Promise.all(
    Array.from({ length: config.connections }, async () => {
      while (performance.now() < ends) await flow();
    }),
  );
  return tally.result(performance.now() - started, paid);
}

async function refunds(config: DriverConfig): Promise<DriverResult> {
  const send = client(config.url, config.connections);
  const auth = { authorization: `Api-Key ${config.apiKey}` };
  const queue = [...(config.transactionIds ?? [])];
  const tally = new Tally();
  const started = performance.now();
  const ends = started + config.seconds * 1000;
  await Promise.all(
    Array.from({ length: config.connections }, async () => {
      for (let id = queue.pop(); id !== undefined && performance.now() < ends; id = queue.pop()) {
        const began = performance.now();
        const refund = await send('POST', `/api/transactions/${id}/refund/`, auth, { reason: 'benchmark' });
        if (refund.status !== 200) {
          tally.miss('refund', refund.status);
          continue;
        }
        tally.completed += 1;
        tally.latencies.push(performance.now() - began);
      }
    }),
  );
  return tally.result(performance.now() - started, []);
}

if (process.argv[2]) {
  const config = JSON.parse(readFileSync(process.argv[2], 'utf8')) as DriverConfig;
  const result = config.mode === 'flows' ? await flows(config) : await refunds(config);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
