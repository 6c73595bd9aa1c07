// Helpers of the packaging tests: shell commands with a time limit, and Node.js versions from the
// npm registry's `node` package, installed once into test-artifacts/node/<version>.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';

export const ROOT = join(import.meta.dirname, '..', '..');
/** The Node the suite runs on (the pinned 24), whose npm runs the installs. */
export const NODE_24_BIN = dirname(process.execPath);

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `command` in bash in `cwd`; resolves with its output, killed after `timeoutMs`. */
export function sh(
  command: string,
  options: { cwd: string; env?: Record<string, string>; timeoutMs?: number },
): Promise<Run> {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(
      (entry): entry is [string, string] =>
        !entry[0].startsWith('KASSA_') &&
        entry[0] !== 'DATABASE_URL' &&
        !entry[0].startsWith('npm_') &&
        !!entry[1],
    ),
  );
  const child = spawn('bash', ['-c', command], {
    cwd: options.cwd,
    env: { ...env, PATH: `${NODE_24_BIN}${delimiter}${process.env.PATH ?? ''}`, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const timer = setTimeout(() => {
    if (child.pid) process.kill(-child.pid, 'SIGKILL');
  }, options.timeoutMs ?? 300_000);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Like sh(), but a non-zero exit is an error showing the command's output. */
export async function shOk(command: string, options: Parameters<typeof sh>[1]): Promise<string> {
  const result = await sh(command, options);
  if (result.code !== 0) {
    throw new Error(
      `${command} exited with ${result.code}\n${result.stdout.slice(-4000)}\n${result.stderr.slice(-4000)}`,
    );
  }
  return result.stdout;
}

/** The path of the `node` binary of `version`, installed from the registry's `node` package once. */
export async function nodeBinary(version: string): Promise<string> {
  const prefix = join(ROOT, 'test-artifacts', 'node', version);
  const binary = join(prefix, 'node_modules', 'node', 'bin', 'node');
  if (!existsSync(binary)) {
    mkdirSync(prefix, { recursive: true });
    await shOk(`npm install --prefix . --no-save --no-package-lock --no-audit --no-fund node@${version}`, {
      cwd: prefix,
    });
  }
  const reported = (await shOk(`"${binary}" --version`, { cwd: prefix })).trim();
  if (reported !== `v${version}`) throw new Error(`node@${version} reports ${reported}`);
  return binary;
}

/** Polls `url` until it answers 200, or fails after `timeoutMs`. */
export async function waitFor(url: string, timeoutMs: number, child?: ChildProcess): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child && child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode}`);
    try {
      if ((await fetch(url)).status === 200) return;
    } catch {}
    if (Date.now() > deadline) throw new Error(`${url} did not answer in time`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
