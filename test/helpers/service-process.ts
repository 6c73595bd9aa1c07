// The real service as a child process (`kassa serve`): started, killed with SIGKILL at any moment, and
// restarted on the same data, for the crash tests.
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

const NODE = join(import.meta.dirname, '..', '..', 'node_modules', '.bin', 'node');

/** The service child: started, killed and restarted on the same database. */
export class ServiceUnderTest {
  child: ChildProcess | null = null;
  kills = 0;
  readonly startMs: number[] = [];
  private log = '';
  private up: Promise<void> = Promise.resolve();
  private markUp: () => void = () => {};

  private readonly env: Record<string, string>;
  readonly url: string;

  constructor(env: Record<string, string>, url: string) {
    this.env = env;
    this.url = url;
  }

  async start(): Promise<void> {
    const startedAt = Date.now();
    const child = spawn(NODE, ['--disable-warning=ExperimentalWarning', 'src/cli/main.ts', 'serve'], {
      env: { ...process.env, ...this.env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    this.child = child;
    await new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        this.log = (this.log + chunk.toString('utf8')).slice(-20_000);
        if (this.log.includes('kassa: listening on')) {
          this.log = '';
          child.stderr?.off('data', onData);
          child.off('exit', onExit);
          resolve();
        }
      };
      const onExit = (code: number | null) =>
        reject(new Error(`the service exited (${code}) before listening:\n${this.log}`));
      child.stderr?.on('data', onData);
      child.once('exit', onExit);
    });
    // Keep reading stderr so the pipe never fills; keep its tail for a failure message.
    child.stderr?.on('data', (chunk: Buffer) => {
      this.log = (this.log + chunk.toString('utf8')).slice(-20_000);
    });
    this.startMs.push(Date.now() - startedAt);
    this.markUp();
  }

  async kill(): Promise<void> {
    const child = this.child;
    this.up = new Promise((resolve) => {
      this.markUp = resolve;
    });
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    this.kills += 1;
  }

  whenUp(): Promise<void> {
    return this.up;
  }

  output(): string {
    return this.log;
  }
}
