// Runs the `kassa` command as an operator would: a child process with only the configuration given.
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

export const ROOT = join(import.meta.dirname, '..', '..');
/** The pinned Node 24 (the `node` dev dependency), whatever Node runs the tests. */
export const NODE = join(ROOT, 'node_modules', '.bin', 'node');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment minus any KASSA_* or DATABASE_URL of the test runner, plus `env`. */
function childEnv(env: Record<string, string>): Record<string, string> {
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(
      (entry): entry is [string, string] =>
        !entry[0].startsWith('KASSA_') && !['DATABASE_URL', 'PORT', 'HOST'].includes(entry[0]) && !!entry[1],
    ),
  );
  return { ...inherited, KASSA_SCRYPT_LOG_N: '14', ...env };
}

export function spawnKassa(args: string[], env: Record<string, string>): ChildProcess {
  return spawn(NODE, ['--disable-warning=ExperimentalWarning', 'src/cli/main.ts', ...args], {
    cwd: ROOT,
    env: childEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Runs `kassa <args>` to its end (killed after 60 s). */
export function kassa(args: string[], env: Record<string, string>): Promise<CliResult> {
  const child = spawnKassa(args, env);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

export interface RunningKassa {
  child: ChildProcess;
  /** What the process wrote to stderr so far. */
  stderr(): string;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

/** Starts a long-running command (serve) and resolves once stderr shows `ready` (killed after 60 s). */
export function startKassa(
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
): Promise<RunningKassa> {
  const child = spawnKassa(args, env);
  let stderr = '';
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  const running: RunningKassa = {
    child,
    stderr: () => stderr,
    stop() {
      child.kill('SIGTERM');
      return exited;
    },
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`kassa ${args.join(' ')} did not become ready: ${stderr}`));
    }, 60_000);
    child.stdout?.resume();
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      if (ready.test(stderr)) {
        clearTimeout(timer);
        resolve(running);
      }
    });
    exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`kassa ${args.join(' ')} exited with ${code}: ${stderr}`));
    });
  });
}
