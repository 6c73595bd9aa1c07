// The peers beside Kassa's webhook worker (PostgreSQL only): graphile-worker and pg-boss, each in its best
// configuration (bench/peers/worker.ts), each in a fresh schema of the bench's PostgreSQL, delivering the
// same signed bodies to the same receiver, measured by the same two procedures as Kassa (a backlog
// committed at once; events at a steady rate, commit → arrival). The jobs are added from the bench's own
// process through each queue's own API, in one transaction per batch, as Kassa's events are committed.
import { randomBytes } from 'node:crypto';
import { makeWorkerUtils, type WorkerUtils } from 'graphile-worker';
import { PgBoss } from 'pg-boss';
import { type Child, cpuSeconds, startNode, stop, waitFor } from '../processes.ts';
import type { Scenario, ScenarioContext, ScenarioResult } from '../scenarios.ts';
import { dropSchema } from '../service.ts';
import { benchEventBody, type Enqueue } from '../webhooks.ts';
import type { PeerJob } from './worker.ts';

export type PeerName = 'graphile-worker' | 'pg-boss';
export const PEER_PREFIX = 'peer ';
export const PEERS: PeerName[] = ['graphile-worker', 'pg-boss'];
const QUEUE = 'deliver';

/** Where the peers run: the bench's PostgreSQL, the receiver, and the secret it verifies signatures with. */
export interface PeerSetting {
  databaseUrl: string;
  receiverUrl: string;
  secret: string;
}

interface RunningPeer {
  child: Child;
  enqueue: Enqueue;
  close(): Promise<void>;
}

async function producer(peer: PeerName, url: string, schema: string): Promise<Omit<RunningPeer, 'child'>> {
  const job = (marker: string): PeerJob => ({ body: benchEventBody(marker) });
  if (peer === 'graphile-worker') {
    const utils: WorkerUtils = await makeWorkerUtils({ connectionString: url, schema });
    return {
      enqueue: async (markers) => {
        await utils.addJobs(markers.map((marker) => ({ identifier: QUEUE, payload: job(marker) })));
      },
      close: async () => {
        await utils.release();
      },
    };
  }
  const boss = new PgBoss({ connectionString: url, schema, supervise: false, schedule: false, max: 2 });
  boss.on('error', (error) => console.error(error));
  await boss.start();
  return {
    enqueue: async (markers) => {
      await boss.insert(
        QUEUE,
        markers.map((marker) => ({ data: job(marker) })),
      );
    },
    close: () => boss.stop({ graceful: false, timeout: 1000 }),
  };
}

async function startPeer(peer: PeerName, setting: PeerSetting, schema: string): Promise<RunningPeer> {
  if (peer === 'pg-boss') {
    // The queue exists before its worker and producer: a notify queue (LISTEN/NOTIFY wakes the workers).
    const boss = new PgBoss({
      connectionString: setting.databaseUrl,
      schema,
      supervise: false,
      schedule: false,
    });
    await boss.start();
    await boss.createQueue(QUEUE, { notify: true, retryLimit: 5 });
    await boss.stop({ graceful: false, timeout: 1000 });
  }
  const child = startNode(['bench/peers/worker.ts', peer], {
    PEER_DATABASE_URL: setting.databaseUrl,
    PEER_SCHEMA: schema,
    PEER_TARGET_URL: `${setting.receiverUrl}/hooks`,
    PEER_SECRET: setting.secret,
  });
  try {
    await waitFor(child, /peer ready/);
    return { child, ...(await producer(peer, setting.databaseUrl, schema)) };
  } catch (error) {
    await stop(child);
    throw error;
  }
}

/** Runs `measure` against a freshly started peer, with the peer's CPU in place of the service's. */
async function withPeer(
  peer: PeerName,
  context: ScenarioContext,
  measure: (context: ScenarioContext, enqueue: Enqueue) => Promise<ScenarioResult>,
): Promise<ScenarioResult> {
  const setting = context.peers;
  if (!setting) throw new Error('the peers run on PostgreSQL only');
  const schema = `kassa_peer_${peer.replace('-', '_')}_${randomBytes(3).toString('hex')}`;
  let running: RunningPeer | null = null;
  try {
    running = await startPeer(peer, setting, schema);
    const pid = running.child.process.pid;
    return await measure(
      { ...context, serviceCpu: () => cpuSeconds(pid), serviceStatements: async () => null },
      running.enqueue,
    );
  } finally {
    await running?.close();
    if (running) await stop(running.child);
    await dropSchema(setting.databaseUrl, schema);
  }
}

/** The peers' rows, named `peer <name>: <Kassa's scenario>` so that run.ts can set them side by side. */
export function peerScenarios(
  throughput: (context: ScenarioContext, enqueue: Enqueue) => Promise<ScenarioResult>,
  latency: (context: ScenarioContext, enqueue: Enqueue) => Promise<ScenarioResult>,
  names: { throughput: string; latency: string },
): Scenario[] {
  return PEERS.flatMap((peer) => [
    {
      name: `${PEER_PREFIX}${peer}: ${names.throughput}`,
      databases: ['postgres'],
      compared: 'throughput' as const,
      run: (context: ScenarioContext) => withPeer(peer, context, throughput),
    },
    {
      name: `${PEER_PREFIX}${peer}: ${names.latency}`,
      databases: ['postgres'],
      compared: 'latency' as const,
      run: (context: ScenarioContext) => withPeer(peer, context, latency),
    },
  ]);
}
