// autocannon in a child process of its own, so the load generator never shares an event loop (or a CPU
// queue, as far as the OS allows) with what it measures.
import { join } from 'node:path';
import { ROOT, runNode } from './processes.ts';

export interface BenchRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  path: string;
  headers?: Record<string, string>;
  body?: string;
  /** The status every response should have; others are counted as unexpected. */
  expectStatus: number;
}

export interface AutocannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  errors: number;
  timeouts: number;
  statusCodeStats?: Record<string, { count: number }>;
}

export interface LoadResult {
  requestsPerS: number;
  p50Ms: number;
  p99Ms: number;
  total: number;
  /** Responses with another status than expected, plus connection errors and timeouts. */
  failed: number;
}

export async function autocannon(
  url: string,
  request: BenchRequest,
  seconds: number,
  connections: number,
): Promise<AutocannonResult> {
  const args = [
    join(ROOT, 'node_modules', 'autocannon', 'autocannon.js'),
    '-j',
    '-n',
    '-c',
    String(connections),
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

/** A short warm-up (JIT, caches, pools), then the measured run. */
export async function load(
  url: string,
  request: BenchRequest,
  options: { seconds: number; connections: number; warmupSeconds: number },
): Promise<LoadResult> {
  if (options.warmupSeconds > 0) await autocannon(url, request, options.warmupSeconds, options.connections);
  return summarize(await autocannon(url, request, options.seconds, options.connections), request);
}

export function summarize(result: AutocannonResult, request: BenchRequest): LoadResult {
  const expected = result.statusCodeStats?.[String(request.expectStatus)]?.count ?? result.requests.total;
  return {
    requestsPerS: Math.round(result.requests.average),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    total: result.requests.total,
    failed: result.requests.total - expected + result.errors + result.timeouts,
  };
}
