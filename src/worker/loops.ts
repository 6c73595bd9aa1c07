// Every background loop of the service. `kassa serve` runs them beside the API; `kassa worker` alone.
import { pruneIdempotencyKeys } from '../modules/idempotency/service.ts';
import { paymentOperationHandlers } from '../modules/payments/reconcile.ts';
import {
  expireCheckouts,
  nextCheckoutExpiryDue,
  nextPaymentSyncDue,
  syncDuePayments,
} from '../modules/payments/sync.ts';
import { nextRefundSyncDue, refundOperationHandlers, syncRefunds } from '../modules/refunds/sync.ts';
import { pruneExpiredRecords } from '../modules/retention/prune.ts';
import { runRenewals } from '../modules/subscriptions/renew.ts';
import { nextRenewalDue } from '../modules/subscriptions/renewal-clock.ts';
import { renewalOperationHandlers } from '../modules/subscriptions/renewal-readback.ts';
import { signupOperationHandlers } from '../modules/subscriptions/signup.ts';
import { releaseDueReserves } from '../modules/wallet/reserve.ts';
import { webhookLoops } from '../modules/webhooks/loops.ts';
import { type OperationHandlers, reconcileDue } from '../provider/operations/reconciler.ts';
import { nextOperationReadDue } from '../provider/operations/store.ts';
import { dueLoop } from './due.ts';
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
  // The provider loops sleep until their work is due and wake on commits (src/worker/due.ts).
  dueLoop('provider-sync', syncDuePayments, nextPaymentSyncDue),
  dueLoop('checkout-expiry', expireCheckouts, nextCheckoutExpiryDue),
  dueLoop(
    'reconciler',
    (ctx) => reconcileDue(ctx, operationHandlers),
    (ctx) => nextOperationReadDue(ctx.db),
  ),
  dueLoop('refund-sync', syncRefunds, nextRefundSyncDue),
  dueLoop('renewals', (ctx) => runRenewals(ctx), nextRenewalDue),
  { name: 'reserve-release', intervalMs: (ctx) => ctx.config.syncIntervalMs * 10, run: releaseDueReserves },
  ...webhookLoops,
];
