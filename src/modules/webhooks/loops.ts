// The webhook worker loop: outbox → deliveries → HTTP, with its in-flight sends drained on stop.
import type { WorkerLoop } from '../../worker/runner.ts';
import { deliveryWorker, stopDeliveryWorker } from './worker.ts';

/** The delivery loop polls at least this often: an event reaches the receiver well within 100 ms. */
const MAX_POLL_MS = 10;

export const webhookLoops: WorkerLoop[] = [
  {
    name: 'webhook-deliveries',
    intervalMs: (ctx) => Math.min(ctx.config.workerPollMs, MAX_POLL_MS),
    run: (ctx) => deliveryWorker(ctx).tick(),
    stop: (ctx) => stopDeliveryWorker(ctx),
  },
];
