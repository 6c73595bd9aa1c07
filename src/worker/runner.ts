// The background worker: named loops, each run on its own interval until stopped.
// A loop that reports work done runs again at once, so bursts drain without waiting. A loop can also be
// woken early (`subscribe`): a sleeping loop runs at once, and a wake-up that arrives while it runs
// makes it run again right after, so no signal is lost between a run's last read and its sleep.
import type { AppContext } from '../context.ts';

/** Asks the loop to run in `inMs` milliseconds at the latest (now, by default). */
export type Wake = (inMs?: number) => void;

export interface WorkerLoop {
  name: string;
  /** How long the loop sleeps after a run that found nothing, unless woken earlier. */
  intervalMs: (ctx: AppContext) => number;
  /** Does one batch of work; returns how many items it handled. */
  run: (ctx: AppContext) => Promise<number>;
  /**
   * Optional: connects the loop's wake-up signals once at start; returns what undoes that. `onError`
   * reports what fails in the background meanwhile (a LISTEN connection lost), as a failed run is.
   */
  subscribe?: (ctx: AppContext, wake: Wake, onError: (error: unknown) => void) => () => void | Promise<void>;
  /** Optional: finishes work the loop started in the background, once the loop has stopped. */
  stop?: (ctx: AppContext) => Promise<void>;
}

export interface WorkerHandle {
  stop(): Promise<void>;
}

/** One loop's sleep: when it ends, and how to end it sooner. */
interface Sleep {
  until: number;
  timer: NodeJS.Timeout;
  end: () => void;
}

export function startWorker(
  ctx: AppContext,
  loops: WorkerLoop[],
  onError: (loop: string, error: unknown) => void,
): WorkerHandle {
  let stopped = false;
  const running: Promise<void>[] = [];
  const sleeping = new Set<Sleep>();
  const unsubscribes: (() => void | Promise<void>)[] = [];

  for (const loop of loops) {
    let current: Sleep | null = null;
    /** The earliest time a wake-up asked for while the loop was running (Infinity: none). */
    let wakeAt = Number.POSITIVE_INFINITY;

    const sleepUntil = (until: number) =>
      new Promise<void>((resolve) => {
        const entry: Sleep = {
          until,
          timer: setTimeout(() => entry.end(), Math.max(0, until - Date.now())),
          end: () => {
            clearTimeout(entry.timer);
            sleeping.delete(entry);
            if (current === entry) current = null;
            resolve();
          },
        };
        current = entry;
        sleeping.add(entry);
      });

    const wake: Wake = (inMs = 0) => {
      if (stopped) return;
      const at = Date.now() + Math.max(0, inMs);
      const sleep = current;
      if (sleep === null) {
        wakeAt = Math.min(wakeAt, at);
        return;
      }
      if (at >= sleep.until) return;
      if (inMs <= 0) sleep.end();
      else {
        // Sleep less: the same sleep, ending at the earlier time.
        clearTimeout(sleep.timer);
        sleep.until = at;
        sleep.timer = setTimeout(() => sleep.end(), at - Date.now());
      }
    };
    if (loop.subscribe) unsubscribes.push(loop.subscribe(ctx, wake, (error) => onError(loop.name, error)));

    running.push(
      (async () => {
        while (!stopped) {
          // Wake-ups from here on are for this run or the next: none can fall between a run and its sleep.
          wakeAt = Number.POSITIVE_INFINITY;
          let handled = 0;
          try {
            handled = await loop.run(ctx);
          } catch (error) {
            onError(loop.name, error);
          }
          if (stopped || handled > 0) continue;
          const until = Math.min(Date.now() + loop.intervalMs(ctx), wakeAt);
          if (until > Date.now()) await sleepUntil(until);
        }
      })(),
    );
  }

  return {
    async stop() {
      stopped = true;
      for (const sleep of sleeping) sleep.end();
      await Promise.all(running);
      await Promise.all(unsubscribes.map((unsubscribe) => unsubscribe()));
      await Promise.all(loops.map((loop) => loop.stop?.(ctx)));
    },
  };
}
