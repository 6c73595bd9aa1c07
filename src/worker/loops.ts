// Every background loop of the service. `kassa serve` runs them beside the API; `kassa worker` alone.
import { pruneIdempotencyKeys } from '../modules/idempotency/service.ts';
import { paymentOperationHandlers } from '../modules/payments/reconcile.ts';
import { expireCheckouts, syncDuePayments } from '../modules/payments/sync.ts';
import { refundOperationHandlers, syncRefunds } from '../modules/refunds/sync.ts';
import { pruneExpiredRecords } from '../modules/retention/prune.ts';
import { renewalOperationHandlers, runRenewals } from '../modules/subscriptions/renew.ts';
import { signupOperationHandlers } from '../modules/subscriptions/signup.ts';
import { releaseDueReserves } from '../modules/wallet/reserve.ts';
import { webhookLoops } from '../modules/webhooks/loops.ts';
import { type OperationHandlers, reconcileDue } from '../provider/operations/reconciler.ts';
import type { WorkerLoop } from './runner.ts';

/** How the reconciler reads back each kind of provider call (a module adds its own kinds here). */
export const operationHandlers: OperationHandlers = {
  ...paymentOperationHandlers,
  ...refundOperationHandlers,
  ...renewalOperationHandlers,
  ...signupOperationHandlers,
};

export const workerLoops: WorkerLoop[] = [
  { name: 'idempotency-prune', intervalMs: () => 60_000, run: pruneIdempotencyKeys },
  { name: 'retention', intervalMs: () => 60_000, run: pruneExpiredRecords },
  { name: 'provider-sync', intervalMs: (ctx) => ctx.config.syncIntervalMs, run: syncDuePayments },
  { name: 'checkout-expiry', intervalMs: (ctx) => ctx.config.syncIntervalMs, run: expireCheckouts },
  {
    name: 'reconciler',
    intervalMs: (ctx) => ctx.config.syncIntervalMs,
    run: (ctx) => reconcileDue(ctx, operationHandlers),
  },
  { name: 'refund-sync', intervalMs: (ctx) => ctx.config.syncIntervalMs, run: syncRefunds },
  // Periods start at whole seconds of a schedule; a few seconds late is on time for a renewal.
  { name: 'renewals', intervalMs: (ctx) => ctx.config.syncIntervalMs * 5, run: (ctx) => runRenewals(ctx) },
  { name: 'reserve-release', intervalMs: (ctx) => ctx.config.syncIntervalMs * 10, run: releaseDueReserves },
  ...webhookLoops,
];
