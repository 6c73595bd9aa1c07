// The webhook worker loop: outbox → deliveries → HTTP, with its in-flight sends drained on stop.
// It wakes on work: after this process commits events or deliveries (the database's outbox signal), on
// PostgreSQL at a NOTIFY from any process, on SQLite when another process changes the database file's
// write-ahead log (watched through the kernel, no polling; all three at once after a quiet moment, else
// at most one round per WAKE_COALESCE_MS, so that a busy moment's commits go in one claim), and when a retry it scheduled falls due. While idle it polls
// only every KASSA_WORKER_POLL_MS (the safety poll: work it was not told about, such as expired leases).
import { listenForOutbox, watchSqliteCommits } from '../../db/listen.ts';
import type { WorkerLoop } from '../../worker/runner.ts';
import { deliveryWorker, stopDeliveryWorker } from './worker.ts';

/**
 * At most one round per this many ms after a round that claimed work, on commits' wake-ups, so that the
 * commits of a busy moment are dispatched in one claim: woken at each commit, the worker dispatched events one by one, one
 * transaction each (4,092 dispatch transactions for 2,150 requests in the bench's pay and refund
 * scenarios, against 480 with a 5 ms delay), which cost the API a third of its throughput on SQLite.
 * The first commit after a quiet moment wakes the loop at once (the window counts from the last round
 * that claimed work, DeliveryWorker.wakeDelayMs):
 * a delay at every commit cost 5 ms of latency to every event.
 */
export const WAKE_COALESCE_MS = 5;

export const webhookLoops: WorkerLoop[] = [
  {
    name: 'webhook-deliveries',
    intervalMs: (ctx) => deliveryWorker(ctx).idleMs(),
    run: (ctx) => deliveryWorker(ctx).tick(),
    subscribe: (ctx, wake, onError) => {
      const worker = deliveryWorker(ctx);
      worker.wakeLoop = wake;
      const unsubscribe = ctx.outbox.subscribe((wrote) => {
        worker.announce(wrote);
        wake(worker.wakeDelayMs(WAKE_COALESCE_MS));
      });
      const database = ctx.config.database;
      // Another process's commit is announced to this process's listeners as its own commits are: this
      // loop, and the due-driven loops (src/worker/due.ts), wake on it. This process's own commits were
      // announced at the commit already: their NOTIFY, a moment later, woke the worker into a second
      // claim that found nothing (two claims per commit of a steady stream).
      const listener =
        database.kind === 'postgres'
          ? listenForOutbox(
              database,
              (wrote, backend) => {
                if (!ctx.outbox.ownCommit(backend)) ctx.outbox.notify(wrote);
              },
              onError,
            )
          : watchSqliteCommits(
              database.file,
              () => ctx.outbox.committedElsewhere?.() ?? true,
              () => ctx.outbox.notify('unknown'),
            );
      worker.hearsEveryCommit = () => listener.hearsEveryCommit();
      return async () => {
        worker.hearsEveryCommit = () => false;
        unsubscribe();
        await listener?.close();
      };
    },
    stop: (ctx) => stopDeliveryWorker(ctx),
  },
];
