// Child processes of the benchmark: the real service, the bare Fastify server, the CLI and autocannon.
// Each runs in its own process so the load generator never shares a CPU queue with what it measures.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';

export const ROOT = join(import.meta.dirname, '..');
const NODE = join(ROOT, 'node_modules', '.bin', 'node');

export interface Child {
  process: ChildProcessWithoutNullStreams;
  output(): string;
}

/** Starts `node <args>` from the repository root with exactly the given KASSA_* configuration. */
export function startNode(args: string[], env: Record<string, string>): Child {
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('KASSA_') && name !== 'DATABASE_URL'),
  );
  const child = spawn(NODE, ['--disable-warning=ExperimentalWarning', ...args], {
    cwd: ROOT,
    env: { ...inherited, ...env },
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  return { process: child, output: () => output };
}

/** Waits for a line matching `pattern` on stdout or stderr; fails if the process exits first. */
export function waitFor(child: Child, pattern: RegExp, timeoutMs = 60_000): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => finish(new Error(`timed out waiting for ${pattern}:\n${child.output()}`)),
      timeoutMs,
    );
    const check = () => {
      const match = pattern.exec(child.output());
      if (match) finish(null, match);
    };
    const exited = (code: number | null) =>
      finish(new Error(`exited with ${code} before ${pattern}:\n${child.output()}`));
    function finish(error: Error | null, match?: RegExpExecArray) {
      clearTimeout(timer);
      child.process.stdout.off('data', check);
      child.process.stderr.off('data', check);
      child.process.off('exit', exited);
      if (error || !match) reject(error ?? new Error('no match'));
      else resolve(match);
    }
    child.process.stdout.on('data', check);
    child.process.stderr.on('data', check);
    child.process.on('exit', exited);
    check();
  });
}

/** Runs a node script to completion and returns its exit code and output. */
export async function runNode(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; output: string }> {
  const child = startNode(args, env);
  const code = await new Promise<number | null>((resolve) => child.process.on('close', resolve));
  return { code, output: child.output() };
}

/** A field of /proc/<pid>/status in MB (10^6 bytes), e.g. VmRSS (resident now) or VmHWM (peak). */
export function procMemoryMB(pid: number | undefined, field: 'VmRSS' | 'VmHWM'): number | null {
  if (pid === undefined) return null;
  try {
    const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Math.round((Number(match[1]) * 1024) / 1e5) / 10 : null;
  } catch {
    return null;
  }
}

/** Samples a process's VmRSS every `intervalMs` until stopped; returns the highest value seen (MB). */
export function sampleRss(pid: number | undefined, intervalMs = 100): { stop(): number | null } {
  let peak: number | null = procMemoryMB(pid, 'VmRSS');
  const timer = setInterval(() => {
    const now = procMemoryMB(pid, 'VmRSS');
    if (now !== null && (peak === null || now > peak)) peak = now;
  }, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      const now = procMemoryMB(pid, 'VmRSS');
      if (now !== null && (peak === null || now > peak)) peak = now;
      return peak;
    },
  };
}

/**
 * Resets a process's peak resident size (VmHWM) to its current size (Linux: clear_refs 5), so the next
 * VmHWM read is the peak since now. Returns false where that is not allowed.
 */
export function resetPeakRss(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ): 100 on every Linux this runs on. */
const USER_HZ = 100;

/**
 * CPU seconds (user + system) a process has used so far. On a shared machine this is the figure that
 * holds: wall-clock rates drop when other processes take the CPUs, CPU time per operation does not.
 */
export function cpuSeconds(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces) start at state, field 3.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / USER_HZ;
  } catch {
    return null;
  }
}

/**
 * Nanoseconds of CPU the live threads of a process have run so far (the first field of each thread's
 * /proc/<pid>/task/<tid>/schedstat): to the nanosecond where /proc/<pid>/stat counts 10 ms ticks, which
 * an idle service's few ms per second need. A thread that exits takes its time with it: for idle only.
 */
export function cpuNanoseconds(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    let total = 0;
    for (const thread of readdirSync(`/proc/${pid}/task`)) {
      try {
        total += Number(readFileSync(`/proc/${pid}/task/${thread}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        // The thread ended between the listing and the read.
      }
    }
    return total;
  } catch {
    return null;
  }
}

/**
 * CPU seconds used so far by the local PostgreSQL server: every process named `postgres` (the backends
 * serving the connections, and in the postmaster's children fields the backends that have exited).
 * Null when /proc cannot be read or no such process runs here.
 */
export function postgresCpuSeconds(): number | null {
  let total = 0;
  let found = false;
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return null;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) !== 'postgres') continue;
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      total += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
      found = true;
    } catch {
      // the process ended meanwhile
    }
  }
  return found ? total / USER_HZ : null;
}

/** The 1-minute load average, rounded: printed beside every figure, since a busy machine lowers them all. */
export function load1(): number {
  return Math.round(loadavg()[0] * 100) / 100;
}

/** SIGTERM, then SIGKILL after a grace period; resolves when the process is gone. */
export async function stop(child: Child, graceMs = 10_000): Promise<void> {
  if (child.process.exitCode !== null || child.process.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.process.once('exit', () => resolve()));
  child.process.kill('SIGTERM');
  const timer = setTimeout(() => child.process.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
