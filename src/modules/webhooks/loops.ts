// The webhook worker loop: outbox → deliveries → HTTP, with its in-flight sends drained on stop.
// It wakes on work: after this process commits events or deliveries (the database's outbox signal), on
// PostgreSQL at a NOTIFY from any process, and when a retry it scheduled falls due. While idle it polls
// only every KASSA_WORKER_POLL_MS (the safety poll: work it was not told about, such as expired leases).
import { listenForOutbox } from '../../db/listen.ts';
import type { WorkerLoop } from '../../worker/runner.ts';
import { deliveryWorker, stopDeliveryWorker } from './worker.ts';

export const webhookLoops: WorkerLoop[] = [
  {
    name: 'webhook-deliveries',
    intervalMs: (ctx) => deliveryWorker(ctx).idleMs(),
    run: (ctx) => deliveryWorker(ctx).tick(),
    subscribe: (ctx, wake) => {
      deliveryWorker(ctx).wakeLoop = wake;
      const unsubscribe = ctx.outbox.subscribe(() => wake());
      const database = ctx.config.database;
      const listener = database.kind === 'postgres' ? listenForOutbox(database, () => wake()) : null;
      return async () => {
        unsubscribe();
        await listener?.close();
      };
    },
    stop: (ctx) => stopDeliveryWorker(ctx),
  },
];
