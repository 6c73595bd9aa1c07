// Idle cost: the CPU a `kassa serve` (API + worker) uses with no traffic at all, in ms of CPU per second,
// on SQLite and on PostgreSQL. With nothing to do this is mostly the worker's safety polls; `npm run
// bench` prints it for each database, and this file runs it alone:
//
//   node --disable-warning=ExperimentalWarning bench/idle.ts
//   KASSA_BENCH_IDLE_SECONDS (default 30)   length of the measurement (after 2 s of settling), in
//                                           windows of 5 s
//   KASSA_BENCH_DATABASE_URL / KASSA_BENCH_DATABASES as for bench/run.ts
//
// The figure is the median of the 5 s windows, and every window is printed. A fresh process also does
// one-off work while idle: V8's memory reducer compacts the start-up garbage once, 20–35 s after the
// start (`--trace-gc` shows a mark-compact of 40–50 ms on the main thread and as much on the helper
// threads), and the provider loops' 30 s safety polls run together. Either lands in one window and can
// take a 20 s mean from 1 to 8 ms/s; what a service costs every second, idle, is the median window.
import { median } from './driver.ts';
import { type Child, cpuNanoseconds, sleep, stop } from './processes.ts';
import {
  createBenchDatabase,
  type DatabaseKind,
  DEFAULT_PG_URL,
  postgresProblem,
  startServe,
} from './service.ts';

export const IDLE_SECONDS = Number(process.env.KASSA_BENCH_IDLE_SECONDS) || 30;
const WINDOW_SECONDS = 5;

export interface IdleCpu {
  /** The median window, ms of CPU per second. */
  msPerS: number;
  /** Over the whole measurement, one-off work included. */
  meanMsPerS: number;
  /** Each window's ms per second, in order. */
  windows: number[];
}

const round1 = (value: number) => Math.round(value * 10) / 10;

/** The service's CPU over `seconds` of no traffic, window by window (null if /proc cannot be read). */
export async function idleCpu(service: Child, seconds = IDLE_SECONDS): Promise<IdleCpu | null> {
  const pid = service.process.pid;
  const count = Math.max(1, Math.round(seconds / WINDOW_SECONDS));
  const windows: number[] = [];
  let previous = cpuNanoseconds(pid);
  for (let index = 0; index < count; index++) {
    await sleep(WINDOW_SECONDS * 1000);
    const now = cpuNanoseconds(pid);
    if (previous === null || now === null) return null;
    windows.push((now - previous) / 1e6 / WINDOW_SECONDS);
    previous = now;
  }
  const sorted = [...windows].sort((a, b) => a - b);
  const typical = median(sorted) ?? 0;
  const mean = windows.reduce((sum, value) => sum + value, 0) / windows.length;
  return { msPerS: round1(typical), meanMsPerS: round1(mean), windows: windows.map(round1) };
}

export const describeIdle = (idle: IdleCpu | null) =>
  idle === null
    ? 'n/a'
    : `${idle.msPerS} ms/s (median of ${WINDOW_SECONDS} s windows; mean ${idle.meanMsPerS}; windows ${idle.windows.join(' ')})`;

/** A fresh database, a fresh `kassa serve` on it, left alone: its idle CPU. */
export async function measureIdle(kind: DatabaseKind, pgUrl: string): Promise<IdleCpu | null> {
  const database = createBenchDatabase(kind, pgUrl);
  let service: Child | null = null;
  try {
    service = (await startServe(database.env)).child;
    await sleep(2000);
    return await idleCpu(service);
  } finally {
    if (service) await stop(service);
    await database.drop();
  }
}

if (import.meta.main) {
  const pgUrl = process.env.KASSA_BENCH_DATABASE_URL || DEFAULT_PG_URL;
  const kinds = (process.env.KASSA_BENCH_DATABASES || 'sqlite,postgres').split(',') as DatabaseKind[];
  for (const kind of kinds) {
    const problem = kind === 'postgres' ? await postgresProblem(pgUrl) : null;
    if (problem) {
      console.log(`${kind}: skipped (${problem})`);
      continue;
    }
    const idle = await measureIdle(kind, pgUrl);
    console.log(`${kind}: idle CPU over ${IDLE_SECONDS} s: ${describeIdle(idle)}`);
  }
}
