import { createHmac } from 'node:crypto';
// A real webhook receiver on loopback for the webhook tests: records every request with its raw
// bytes, and answers as each test scripts it.
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DatabaseSync } from 'node:sqlite';
import { Worker } from 'node:worker_threads';
import { call, type Merchant, type TestServer } from './helpers/server.ts';

export interface ReceivedRequest {
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  text: string;
  at: number;
}

export interface Reply {
  status: number;
  headers?: Record<string, string>;
  body?: string;
  /** Wait this long before answering. */
  delayMs?: number;
}

export interface Receiver {
  url: string;
  requests: ReceivedRequest[];
  respond: (request: ReceivedRequest, index: number) => Reply;
  /** Requests open at once right now (arrived, response not yet written), and the most ever seen. */
  open: number;
  maxOpen: number;
  waitFor(
    count: number,
    timeoutMs?: number,
    filter?: (request: ReceivedRequest) => boolean,
  ): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const receiver: Receiver = {
    url: '',
    requests: [],
    respond: () => ({ status: 200, body: 'ok' }),
    open: 0,
    maxOpen: 0,
    async waitFor(count, timeoutMs = 10_000, filter = () => true) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const matching = receiver.requests.filter(filter);
        if (matching.length >= count) return matching;
        if (Date.now() > deadline) {
          throw new Error(
            `expected ${count} webhook requests, got ${matching.length} within ${timeoutMs} ms`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    },
    close: async () => {},
  };
  const server = createServer((request, response) => {
    // Counted from the request's arrival to the end of its response (a sender cannot start its next
    // request on that connection before), so maxOpen is the real concurrency, not an estimate from times.
    receiver.open++;
    receiver.maxOpen = Math.max(receiver.maxOpen, receiver.open);
    response.once('close', () => receiver.open--);
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      const received: ReceivedRequest = {
        path: request.url ?? '/',
        headers: request.headers,
        body,
        text: body.toString('utf8'),
        at: Date.now(),
      };
      receiver.requests.push(received);
      const reply = receiver.respond(received, receiver.requests.length - 1);
      const send = () => {
        if (response.destroyed) return;
        response.writeHead(reply.status, reply.headers ?? {});
        response.end(reply.body ?? '');
      };
      if (reply.delayMs) setTimeout(send, reply.delayMs);
      else send();
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  receiver.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return receiver;
}

export function header(request: ReceivedRequest, name: string): string {
  const value = request.headers[name];
  return typeof value === 'string' ? value : '';
}

/** The Standard Webhooks headers of a request, as a receiver hands them to `standardwebhooks`. */
export function standardHeaders(request: ReceivedRequest): Record<string, string> {
  return {
    'webhook-id': header(request, 'webhook-id'),
    'webhook-timestamp': header(request, 'webhook-timestamp'),
    'webhook-signature': header(request, 'webhook-signature'),
  };
}

/** Points the merchant's endpoint at `url`; returns the raw secret when the endpoint is new. */
export async function setEndpoint(
  server: TestServer,
  merchant: Merchant,
  url: string,
): Promise<string | null> {
  const response = await call<{ raw_secret?: string }>(server, 'PUT', '/api/organization/webhook/', {
    token: merchant.token,
    body: { endpoint_url: url },
  });
  if (response.status !== 200) throw new Error(`PUT webhook failed: ${response.status} ${response.text}`);
  return response.body.raw_secret ?? null;
}

/**
 * Deletes an event and leaves its deliveries, a state PostgreSQL allows since migration 025 dropped the
 * key. SQLite's foreign key would refuse it: there it goes through a connection of its own without the
 * key, as an operator's shell could.
 */
export async function deleteEventUnderItsDeliveries(server: TestServer, eventId: number) {
  const database = server.ctx.config.database;
  if (database.kind === 'postgres') {
    await server.ctx.db.deleteFrom('events').where('id', '=', eventId).execute();
    return;
  }
  const other = new DatabaseSync(database.file, { enableForeignKeyConstraints: false });
  try {
    other.prepare('delete from events where id = ?').run(eventId);
  } finally {
    other.close();
  }
}

/**
 * Another writer of the SQLite file, as another process would be: takes the write lock (`held` resolves
 * once it has), keeps it `holdMs`, then runs `statements` and commits (`done`). It runs in a thread of its
 * own because a transaction of the service that waits for the lock blocks the test's thread: node:sqlite's
 * busy handler waits synchronously (up to the busy timeout, 5 s).
 */
export function holdSqliteWriteLock(server: TestServer, statements: string[], holdMs = 1_000) {
  const database = server.ctx.config.database;
  if (database.kind !== 'sqlite') throw new Error('holdSqliteWriteLock is for SQLite');
  const worker = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
    const { DatabaseSync } = require('node:sqlite');
    const db = new DatabaseSync(workerData.file);
    db.exec('begin immediate');
    parentPort.postMessage('held');
    setTimeout(() => {
      for (const statement of workerData.statements) db.exec(statement);
      db.exec('commit');
      db.close();
      parentPort.postMessage('done');
    }, workerData.holdMs);`,
    { eval: true, workerData: { file: database.file, statements, holdMs } },
  );
  const held = Promise.withResolvers<void>();
  const done = Promise.withResolvers<void>();
  worker.on('message', (message) => (message === 'held' ? held.resolve() : done.resolve()));
  worker.on('error', (error) => {
    held.reject(error);
    done.reject(error);
  });
  done.promise.catch(() => {});
  return { held: held.promise, done: done.promise.finally(() => worker.terminate()) };
}

export async function waitUntil(check: () => Promise<boolean>, timeoutMs = 10_000, what = 'condition') {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** The signature header Kassa should send for `body`, computed independently of its code. */
export function hmac(secret: string, body: Buffer | string) {
  return `sha256=${createHmac('sha256', Buffer.from(secret, 'utf8')).update(body).digest('hex')}`;
}

export interface Delivery {
  id: string;
  event: string;
  status: string;
  attempt_count: number;
  redelivery_of: string | null;
  attempts: { attempt: number; response_status: number | null; duration_ms: number; error: string | null }[];
}
