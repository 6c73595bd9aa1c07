// Kills the service with SIGKILL in the middle of a burst of events, starts it again, and checks that
// every event still reaches the receiver (at least once) with a valid signature.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { after, before, test } from 'node:test';
import { verify } from '@octokit/webhooks-methods';
import { loadConfig } from '../src/config.ts';
import { createContext } from '../src/context.ts';
import { type DbHandle, openAndMigrate } from '../src/db/connection.ts';
import { emitEvent } from '../src/modules/events/emit.ts';
import { createMerchant } from '../src/modules/organizations/service.ts';
import { call, freePort, testEnv } from './helpers/server.ts';
import { header, type Receiver, startReceiver, UUID, waitUntil } from './webhooks-helpers.ts';

let env: Record<string, string>;
let cleanup: () => Promise<void>;
let receiver: Receiver;
let handle: DbHandle | null = null;
let child: ChildProcess | null = null;
let baseUrl = '';
let childLog = '';
/** Set by the first test: the merchant, a second connection's context, the endpoint's secret. */
let shared: { ctx: ReturnType<typeof createContext>; organizationId: number; secret: string } | null = null;

function startService(): ChildProcess {
  const started = spawn(
    process.execPath,
    ['--disable-warning=ExperimentalWarning', 'src/cli/main.ts', 'serve'],
    { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  started.stderr?.on('data', (chunk: Buffer) => {
    childLog += chunk.toString('utf8');
  });
  return started;
}

async function waitForHealth() {
  await waitUntil(
    async () => {
      try {
        return (await fetch(`${baseUrl}/healthz`)).ok;
      } catch {
        return false;
      }
    },
    20_000,
    'the service to answer',
  ).catch((error: unknown) => {
    throw new Error(`${String(error)}; service output:\n${childLog}`);
  });
}

async function kill(process_: ChildProcess | null) {
  if (!process_ || process_.exitCode !== null || process_.signalCode !== null) return;
  const exited = new Promise((resolve) => process_.once('exit', resolve));
  process_.kill('SIGKILL');
  await exited;
}

before(async () => {
  receiver = await startReceiver();
  const port = await freePort();
  ({ env, cleanup } = await testEnv({
    KASSA_PORT: String(port),
    KASSA_WEBHOOK_TIMEOUT_MS: '2000',
    KASSA_WEBHOOK_RETRY_SCHEDULE_MS: '200,200,200,200,200',
  }));
  baseUrl = `http://127.0.0.1:${port}`;
});

after(async () => {
  await kill(child);
  await handle?.close();
  await receiver.close();
  await cleanup();
});

test('every event of a burst is delivered, signed, across a SIGKILL of the service', {
  timeout: 120_000,
}, async () => {
  child = startService();
  await waitForHealth();
  // A second connection to the same database, as another process writing events would have.
  const config = loadConfig(env);
  handle = await openAndMigrate(config.database);
  const ctx = createContext(config, handle);
  const email = 'crash-owner@acme.test';
  const password = 'correct horse battery';
  const { organization } = await createMerchant(ctx, { organization: 'Crash', email, password });
  const login = await call<{ token: string }>({ url: baseUrl }, 'POST', '/api/auth/login/', {
    body: { email, password },
  });
  const token = login.body.token;
  const put = await call<{ raw_secret: string }>({ url: baseUrl }, 'PUT', '/api/organization/webhook/', {
    token,
    body: { endpoint_url: `${receiver.url}/crash` },
  });
  assert.equal(put.status, 200);
  const secret = put.body.raw_secret;
  shared = { ctx, organizationId: organization.id, secret };
  receiver.respond = () => ({ status: 200, delayMs: 15 });

  const TOTAL = 400;
  const markers = new Set<string>();
  const deliveryIds = new Set<string>();
  let killed = false;

  // Test events through the API while the service is up, then events written straight into the outbox.
  const viaApi = (async () => {
    for (let i = 0; i < 60 && !killed; i += 1) {
      try {
        const sent = await call<{ delivery_id: string }>(
          { url: baseUrl },
          'POST',
          '/api/organization/webhook/test/',
          {
            token,
          },
        );
        if (sent.status === 202) deliveryIds.add(sent.body.delivery_id);
      } catch {
        // the service died mid-request: whether it committed is unknown, so it is not counted
      }
    }
  })();
  const viaOutbox = (async () => {
    for (let i = 0; i < TOTAL; i += 1) {
      const marker = `burst-${i}`;
      await emitEvent(ctx.db, {
        organizationId: organization.id,
        environment: i % 2 ? 'production' : 'sandbox',
        type: 'webhook.test',
        subject: null,
        payload: { message: marker },
        now: new Date().toISOString(),
      });
      markers.add(marker);
      if (i % 20 === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    }
  })();

  await receiver.waitFor(80, 30_000);
  killed = true;
  await kill(child);
  await viaApi;
  const receivedBeforeRestart = receiver.requests.length;
  await viaOutbox;
  child = startService();
  await waitForHealth();

  const seen = new Map<string, boolean>();
  const valid = (request: { text: string; headers: Record<string, unknown> }) =>
    verify(secret, request.text, String(request.headers['x-webhook-signature']));
  await waitUntil(
    async () => {
      for (const request of receiver.requests) {
        const message = (JSON.parse(request.text) as { message: string }).message;
        const key = message.startsWith('burst-') ? message : header(request, 'x-webhook-delivery-id');
        if (!seen.get(key)) seen.set(key, await valid(request));
      }
      return [...markers, ...deliveryIds].every((key) => seen.get(key) === true);
    },
    60_000,
    'every event to arrive signed',
  );
  assert.ok(receivedBeforeRestart < markers.size + deliveryIds.size, 'the kill happened mid-burst');
  assert.ok(deliveryIds.size > 0);
});

test('a send the service died in is sent again once its lease lapses, under the same webhook id, and written once', {
  timeout: 60_000,
}, async () => {
  assert.ok(shared, 'the first test set up the merchant');
  const { ctx, organizationId, secret } = shared;
  // The receiver holds the first send: the service is killed with it in flight, before any outcome.
  receiver.respond = () => ({ status: 200, delayMs: 15_000 });
  const eventId = await emitEvent(ctx.db, {
    organizationId,
    environment: 'production',
    type: 'webhook.test',
    subject: null,
    payload: { message: 'lapsed' },
    now: new Date().toISOString(),
  });
  const lapsed = (request: { text: string }) => request.text.includes('"lapsed"');
  await receiver.waitFor(1, 20_000, lapsed);
  await kill(child);
  // Dispatched by its claim, named by the claim's lease, and no delivery row yet: the row is written
  // after the send.
  const event = await ctx.db
    .selectFrom('events')
    .select('dispatched_at')
    .where('id', '=', eventId)
    .executeTakeFirstOrThrow();
  assert.ok(event.dispatched_at !== null);
  const leases = (
    await ctx.db.selectFrom('webhook_leases').select(['event_ids', 'locked_until']).execute()
  ).filter((lease) => (JSON.parse(lease.event_ids) as number[]).includes(eventId));
  assert.equal(leases.length, 1);
  assert.deepEqual(JSON.parse(leases[0].event_ids), [eventId]);
  assert.ok(Date.parse(leases[0].locked_until) > Date.now());
  const rowsBefore = await ctx.db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('event_id', '=', eventId)
    .execute();
  assert.deepEqual(rowsBefore, []);

  receiver.respond = () => ({ status: 200 });
  child = startService();
  await waitForHealth();
  // The lease (timeout 2 s + 5 s) lapses, the restarted worker claims the event and sends it again.
  const again = await receiver.waitFor(2, 30_000, lapsed);
  assert.equal(again.length, 2);
  for (const name of ['webhook-id', 'x-webhook-delivery-id'])
    assert.equal(header(again[1], name), header(again[0], name), `${name} is the same at both sends`);
  assert.match(header(again[1], 'webhook-id'), UUID);
  assert.ok(await verify(secret, again[1].text, header(again[1], 'x-webhook-signature')));
  // Written, and the lease of the claim that sent it again released with it; the lapsed one is gone.
  await waitUntil(async () =>
    (await ctx.db.selectFrom('webhook_leases').select('event_ids').execute()).every(
      (lease) => !(JSON.parse(lease.event_ids) as number[]).includes(eventId),
    ),
  );
  const rows = await ctx.db
    .selectFrom('webhook_deliveries')
    .select(['id', 'delivery_id', 'status', 'attempt_count', 'delivered_at'])
    .where('event_id', '=', eventId)
    .execute();
  assert.equal(rows.length, 1);
  assert.equal(rows[0].delivery_id, header(again[1], 'x-webhook-delivery-id'));
  assert.equal(rows[0].status, 'delivered');
  assert.equal(rows[0].attempt_count, 1);
  assert.ok(rows[0].delivered_at !== null);
  const attempts = await ctx.db
    .selectFrom('webhook_attempts')
    .select('attempt')
    .where('delivery_id', '=', rows[0].id)
    .execute();
  assert.deepEqual(
    attempts.map((row) => row.attempt),
    [1],
  );
});
