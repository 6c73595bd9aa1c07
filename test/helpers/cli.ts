// Runs the `kassa` command as an operator would: a child process with only the configuration given.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import type { Command, CommandInput } from '../../src/cli/commands.ts';

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

/**
 * The environment of a `kassa` process whose password-hash queue is full from the start (a preload takes
 * every place, test/helpers/full-hash-queue.ts): a command's hash is refused at once.
 */
export const fullHashQueueEnv = (env: Record<string, string>): Record<string, string> => ({
  ...env,
  NODE_OPTIONS: `--import=${join(ROOT, 'test', 'helpers', 'full-hash-queue.ts')}`,
});

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

/**
 * Runs `kassa <command> <args>` for every case side by side (independent commands, each its own
 * process) and checks that each is refused: exit code 1 and the case's message on stderr.
 */
export async function assertRefused(
  command: string[],
  cases: [args: string[], message: string][],
  env: Record<string, string>,
): Promise<void> {
  const results = await Promise.all(cases.map(([args]) => kassa([...command, ...args], env)));
  assert.deepEqual(
    results.map((result) => [result.code, result.stderr.trim()]),
    cases.map(([, message]) => [1, message]),
  );
}

/**
 * Runs a command in this process, as main.ts runs it, once for each of `inputs`, whose arguments it must
 * refuse before the configuration is read (it is not given one): the exit codes, and its stderr lines.
 */
export async function refusedArguments(
  command: Command,
  inputs: Pick<CommandInput, 'values' | 'positionals'>[],
): Promise<{ codes: number[]; errors: string[] }> {
  const codes: number[] = [];
  const errors: string[] = [];
  const original = console.error;
  console.error = (...parts: unknown[]) => errors.push(parts.join(' '));
  try {
    const config = () => assert.fail('the configuration is not read');
    for (const input of inputs) codes.push(await command.run({ ...input, config }));
  } finally {
    console.error = original;
  }
  return { codes, errors };
}
