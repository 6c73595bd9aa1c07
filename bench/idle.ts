// Idle cost: the CPU a `kassa serve` (API + worker) uses with no traffic at all, in ms of CPU per second,
// on SQLite and on PostgreSQL. With nothing to do this is mostly the worker's polling; `npm run bench`
// prints it for each database, and this file runs it alone:
//
//   node --disable-warning=ExperimentalWarning bench/idle.ts
//   KASSA_BENCH_IDLE_SECONDS (default 20)   length of the measurement (after 2 s of settling)
//   KASSA_BENCH_DATABASE_URL / KASSA_BENCH_DATABASES as for bench/run.ts
import { type Child, cpuSeconds, sleep, stop } from './processes.ts';
import {
  createBenchDatabase,
  type DatabaseKind,
  DEFAULT_PG_URL,
  postgresProblem,
  startServe,
} from './service.ts';

export const IDLE_SECONDS = Number(process.env.KASSA_BENCH_IDLE_SECONDS) || 20;

/** The service's CPU over `seconds` of no traffic, in ms per second (null if /proc cannot be read). */
export async function idleCpuMsPerS(service: Child, seconds = IDLE_SECONDS): Promise<number | null> {
  const before = cpuSeconds(service.process.pid);
  await sleep(seconds * 1000);
  const after = cpuSeconds(service.process.pid);
  if (before === null || after === null) return null;
  return Math.round(((after - before) * 1000 * 10) / seconds) / 10;
}

/** A fresh database, a fresh `kassa serve` on it, left alone: its idle CPU. */
export async function measureIdle(kind: DatabaseKind, pgUrl: string): Promise<number | null> {
  const database = createBenchDatabase(kind, pgUrl);
  let service: Child | null = null;
  try {
    service = (await startServe(database.env)).child;
    await sleep(2000);
    return await idleCpuMsPerS(service);
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
    const cpu = await measureIdle(kind, pgUrl);
    console.log(`${kind}: idle CPU ${cpu ?? 'n/a'} ms/s over ${IDLE_SECONDS} s`);
  }
}
