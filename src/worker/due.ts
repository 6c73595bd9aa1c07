// Loops that sleep until their work falls due instead of polling every KASSA_SYNC_INTERVAL_MS (#20's
// idle goal). After a run that handled nothing, a loop asks when its next work is due (the earliest
// checkout expiry, provider read, renewal, …; "now" while something is still undecided at the provider)
// and sleeps until then: at least KASSA_SYNC_INTERVAL_MS, at most the safety poll. A commit that wrote
// events, in this process or (through the webhook loop's LISTEN / SQLite watch) in another, wakes it
// within KASSA_SYNC_INTERVAL_MS: new payments, refunds and renewals all write events, so work is never
// left waiting for the safety poll except what no event announces (a trial's subscription, whose first
// charge is days away).
import type { AppContext } from '../context.ts';
import type { WorkerLoop } from './runner.ts';

/** The longest a due-driven loop sleeps without a wake-up: what it catches is work no commit announced. */
export const SAFETY_POLL_MS = 30_000;

/** When the loop's next work is due (epoch ms), `'now'` while something must be polled, or null for nothing. */
export type NextDue = (ctx: AppContext) => Promise<number | 'now' | null>;

export function dueLoop(
  name: string,
  run: (ctx: AppContext) => Promise<number>,
  nextDue: NextDue,
): WorkerLoop {
  // Per service instance: tests run several in one process.
  const sleeps = new WeakMap<AppContext, number>();
  return {
    name,
    intervalMs: (ctx) => sleeps.get(ctx) ?? ctx.config.syncIntervalMs,
    async run(ctx) {
      const handled = await run(ctx);
      if (handled === 0) {
        const due = await nextDue(ctx);
        const poll = ctx.config.syncIntervalMs;
        const safety = Math.max(poll, SAFETY_POLL_MS);
        const wait = due === null ? safety : due === 'now' ? poll : due - Date.now();
        sleeps.set(ctx, Math.min(safety, Math.max(poll, wait)));
      }
      return handled;
    },
    subscribe: (ctx, wake) => ctx.outbox.subscribe(() => wake(ctx.config.syncIntervalMs)),
  };
}
