// A peer job queue as a webhook worker, in a process of its own: graphile-worker or pg-boss consumes jobs
// from the bench's PostgreSQL and sends each as Kassa sends a delivery (the same body, the same signature
// headers, Kassa's own HTTP sender and its keep-alive agent), to the same loopback receiver. Unlike
// Kassa's worker it keeps no delivery or attempt record: a job is done when the receiver answered 2xx.
//
//   node bench/peers/worker.ts graphile-worker|pg-boss   (settings in PEER_* environment variables)
// Prints "peer ready" once it consumes.
import { randomUUID } from 'node:crypto';
import { run } from 'graphile-worker';
import { PgBoss } from 'pg-boss';
import { sign, standardWebhookHeaders } from '../../src/modules/webhooks/secret.ts';
import { isSuccess, WebhookSender } from '../../src/modules/webhooks/sender.ts';

export interface PeerJob {
  /** The delivery's exact body (Kassa's payload of a webhook.test event). */
  body: string;
}

const [peer] = process.argv.slice(2);
const url = process.env.PEER_DATABASE_URL ?? '';
const schema = process.env.PEER_SCHEMA ?? '';
const target = process.env.PEER_TARGET_URL ?? '';
const secret = process.env.PEER_SECRET ?? '';
export const QUEUE = 'deliver';

const sender = new WebhookSender({ guarded: false, timeoutMs: 10_000 });

async function deliver(job: PeerJob): Promise<void> {
  const id = randomUUID();
  const timestamp = Math.floor(Date.now() / 1000);
  const outcome = await sender.send(target, job.body, {
    'content-type': 'application/json',
    'user-agent': 'Kassa-Webhooks/1.0',
    'x-webhook-event': 'webhook.test',
    'x-webhook-delivery-id': id,
    'x-webhook-timestamp': String(timestamp),
    'x-webhook-signature': sign(secret, job.body),
    ...standardWebhookHeaders(secret, id, timestamp, job.body),
  });
  // A failed job is retried by the queue, as a failed delivery is by Kassa.
  if (!isSuccess(outcome)) throw new Error(`receiver answered ${outcome.status ?? outcome.error}`);
}

let stop: () => Promise<void>;
if (peer === 'graphile-worker') {
  // Its best configuration here (graphile-worker's own tuning advice): 64 jobs at once, a local queue of
  // 256 locked jobs refilled in batches, completions batched over 10 ms; woken by its LISTEN/NOTIFY.
  const runner = await run({
    connectionString: url,
    concurrency: 64,
    noHandleSignals: true,
    taskList: { [QUEUE]: async (payload) => deliver(payload as PeerJob) },
    preset: {
      worker: {
        schema,
        maxPoolSize: 10,
        localQueue: { size: 256 },
        completeJobBatchDelay: 10,
        failJobBatchDelay: 10,
      },
    },
  });
  stop = () => runner.stop();
} else if (peer === 'pg-boss') {
  // Woken by LISTEN/NOTIFY (a notify queue), 4 workers fetching 16 jobs each, fetching again at once
  // while batches come back full; the slow poll is only the backstop.
  const boss = new PgBoss({ connectionString: url, schema, useListenNotify: true, max: 10 });
  boss.on('error', (error) => console.error(error));
  await boss.start();
  await boss.work<PeerJob>(
    QUEUE,
    { localConcurrency: 4, batchSize: 16, burstWhenBatchFull: true, pollingIntervalSeconds: 0.5 },
    async (jobs) => {
      await Promise.all(jobs.map((job) => deliver(job.data)));
    },
  );
  stop = () => boss.stop({ graceful: false, timeout: 1000 });
} else {
  throw new Error(`unknown peer ${peer}: graphile-worker or pg-boss`);
}

console.log('peer ready');
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    stop()
      .then(() => sender.close())
      .finally(() => process.exit(0));
  });
}
