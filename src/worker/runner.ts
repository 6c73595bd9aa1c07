// The background worker: named loops, each run on its own interval until stopped.
// A loop that reports work done runs again at once, so bursts drain without waiting.
import type { AppContext } from '../context.ts';

export interface WorkerLoop {
  name: string;
  intervalMs: (ctx: AppContext) => number;
  /** Does one batch of work; returns how many items it handled. */
  run: (ctx: AppContext) => Promise<number>;
  /** Optional: finishes work the loop started in the background, once the loop has stopped. */
  stop?: (ctx: AppContext) => Promise<void>;
}

export interface WorkerHandle {
  stop(): Promise<void>;
}

export function startWorker(
  ctx: AppContext,
  loops: WorkerLoop[],
  onError: (loop: string, error: unknown) => void,
): WorkerHandle {
  let stopped = false;
  const running: Promise<void>[] = [];
  // Each sleeping loop's timer and wake-up, so stop() can end the sleeps at once.
  const sleepers = new Map<NodeJS.Timeout, () => void>();

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        sleepers.delete(timer);
        resolve();
      }, ms);
      sleepers.set(timer, resolve);
    });

  for (const loop of loops) {
    running.push(
      (async () => {
        while (!stopped) {
          let handled = 0;
          try {
            handled = await loop.run(ctx);
          } catch (error) {
            onError(loop.name, error);
          }
          if (!stopped && handled === 0) await sleep(loop.intervalMs(ctx));
        }
      })(),
    );
  }

  return {
    async stop() {
      stopped = true;
      for (const [timer, wake] of sleepers) {
        clearTimeout(timer);
        wake();
      }
      sleepers.clear();
      await Promise.all(running);
      await Promise.all(loops.map((loop) => loop.stop?.(ctx)));
    },
  };
}
