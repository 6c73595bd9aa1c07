// A loopback webhook receiver in a process of its own (forked by the benchmarks, driven over IPC), so
// receiving never competes with the process that measures. It answers 200 at once, and keeps for each
// request the delivery id, a hash of the body, whether the signature verifies (once given the secret),
// and, for benchmark events (a `marker` in the body), the arrival time.
import { fork } from 'node:child_process';
import { createServer } from 'node:http';
import { type ReceivedDelivery, sha256Hex, signatureMatches } from './invariants.ts';

export type ReceiverCommand =
  | { type: 'secret'; secret: string }
  /** Forgets the benchmark markers seen so far (the next measurement starts from none). */
  | { type: 'reset' }
  | { type: 'count' }
  | { type: 'arrivals' }
  | { type: 'deliveries' };

export type ReceiverAnswer =
  | { type: 'listening'; port: number }
  /** marked: distinct benchmark markers since the reset; deliveries: distinct delivery ids since then. */
  | { type: 'count'; requests: number; marked: number; deliveries: number }
  /** Benchmark markers and delivery ids, with their first arrival times (ms since the epoch, sub-ms). */
  | { type: 'arrivals'; arrivals: [string, number][] }
  | { type: 'deliveries'; deliveries: ReceivedDelivery[] }
  | { type: 'ok' };

/** Wall-clock time with sub-millisecond precision, comparable across processes on one machine. */
export function preciseNow(): number {
  return performance.timeOrigin + performance.now();
}

function serve(): void {
  let secret: string | null = null;
  let requests = 0;
  let arrivals = new Map<string, number>();
  let byDelivery = new Map<string, number>();
  const deliveries: ReceivedDelivery[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const at = preciseNow();
      response.end('ok');
      const body = Buffer.concat(chunks);
      requests += 1;
      const deliveryId = request.headers['x-webhook-delivery-id'];
      const signature = request.headers['x-webhook-signature'];
      deliveries.push({
        deliveryId: typeof deliveryId === 'string' ? deliveryId : '',
        bodySha256: sha256Hex(body),
        signatureValid:
          secret !== null && signatureMatches(secret, body, typeof signature === 'string' ? signature : ''),
      });
      // The first arrival of each benchmark event (a `marker` in its body), and of each delivery id.
      if (body.includes('"marker"')) {
        const marker = (JSON.parse(body.toString('utf8')) as { marker?: unknown }).marker;
        if (typeof marker === 'string' && !arrivals.has(marker)) arrivals.set(marker, at);
      }
      if (typeof deliveryId === 'string' && !byDelivery.has(deliveryId)) byDelivery.set(deliveryId, at);
    });
  });
  server.keepAliveTimeout = 60_000;
  const answer = (message: ReceiverAnswer) => process.send?.(message);
  process.on('message', (command: ReceiverCommand) => {
    switch (command.type) {
      case 'secret':
        secret = command.secret;
        return answer({ type: 'ok' });
      case 'reset':
        // Only the benchmark's own markers: the delivery log is kept for the invariant checks.
        arrivals = new Map();
        byDelivery = new Map();
        return answer({ type: 'ok' });
      case 'count':
        return answer({ type: 'count', requests, marked: arrivals.size, deliveries: byDelivery.size });
      case 'arrivals':
        return answer({ type: 'arrivals', arrivals: [...arrivals, ...byDelivery] });
      case 'deliveries':
        return answer({ type: 'deliveries', deliveries });
    }
  });
  process.on('disconnect', () => process.exit(0));
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    answer({ type: 'listening', port: typeof address === 'object' && address ? address.port : 0 });
  });
}

export interface ReceiverProcess {
  url: string;
  pid: number | undefined;
  ask<T extends ReceiverAnswer['type']>(
    command: ReceiverCommand,
    expect: T,
  ): Promise<Extract<ReceiverAnswer, { type: T }>>;
  close(): void;
}

/** Forks the receiver and resolves once it listens. Commands are answered one at a time, in order. */
export async function startReceiverProcess(): Promise<ReceiverProcess> {
  const child = fork(import.meta.filename, ['receiver'], {
    execArgv: ['--disable-warning=ExperimentalWarning'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const next = <T extends ReceiverAnswer['type']>(expect: T) =>
    new Promise<Extract<ReceiverAnswer, { type: T }>>((resolve, reject) => {
      const onMessage = (message: ReceiverAnswer) => {
        child.off('exit', onExit);
        if (message.type === expect) resolve(message as Extract<ReceiverAnswer, { type: T }>);
        else reject(new Error(`receiver answered ${message.type}, expected ${expect}`));
      };
      const onExit = (code: number | null) => reject(new Error(`the receiver exited (${code})`));
      child.once('message', onMessage);
      child.once('exit', onExit);
    });
  const { port } = await next('listening');
  let queue: Promise<unknown> = Promise.resolve();
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid,
    ask(command, expect) {
      const asked = queue.then(() => {
        const answered = next(expect);
        child.send(command);
        return answered;
      });
      queue = asked.catch(() => {});
      return asked;
    },
    close() {
      child.disconnect();
    },
  };
}

if (process.argv[2] === 'receiver') serve();
