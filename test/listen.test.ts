// `kassa listen`: a child process follows the organization's events and forwards each one, signed
// with the secret it printed, to a receiver on loopback; history from before it started is skipped.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { after, before, describe, test } from 'node:test';
import { verifyWebhook } from '../sdk/src/index.ts';
import { createCheckout } from './helpers/checkout.ts';
import { kassa } from './helpers/cli.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  DB_KIND,
  freePort,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import { header, type Receiver, startReceiver } from './webhooks-helpers.ts';

/** Starts `kassa listen` and resolves with the signing secret once it says it is ready. */
async function startListen(
  args: string[],
): Promise<{ child: ChildProcess; secret: string; output: () => string }> {
  const child = spawn(
    'node_modules/.bin/node',
    ['--disable-warning=ExperimentalWarning', 'src/cli/main.ts', 'listen', ...args],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  const deadline = Date.now() + 15_000;
  for (;;) {
    const match = /Signing secret for this session: (whsec_\S+)/.exec(output);
    if (match) return { child, secret: match[1], output: () => output };
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`kassa listen did not get ready:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe(`kassa listen (${DB_KIND})`, () => {
  let server: TestServer;
  let receiver: Receiver;
  let merchant: Merchant;
  let key: string;

  before(async () => {
    server = await startTestServer();
    receiver = await startReceiver();
    merchant = await createTestMerchant(server, 'Laptop Shop');
    key = await createTestKey(server, merchant);
  });
  after(async () => {
    await receiver.close();
    await server.close();
  });

  const cancelCheckout = async () => {
    const checkout = await createCheckout(server, key);
    const canceled = await call(server, 'POST', `/api/checkout/${checkout.token}/cancel/`);
    assert.equal(canceled.status, 200, canceled.text);
    return checkout.checkout_id;
  };

  test('a session token that begins with a dash is read as the token (one in 64 does)', async () => {
    // parseArgs alone refused `--token -…` as ambiguous: this test's flake in CI (src/cli/args.ts).
    const result = await kassa(
      [
        'listen',
        '--forward-to',
        `${receiver.url}/webhooks`,
        '--api',
        server.url,
        '--token',
        '-NotASessionToken',
      ],
      {},
    );
    assert.equal(result.code, 1);
    assert.doesNotMatch(result.stderr, /ambiguous/);
    assert.match(result.stderr, /cannot read events: 401/);
  });

  test('without --api it finds the server where the server itself would listen: KASSA_PORT, else PORT', async () => {
    // It used to take KASSA_PUBLIC_URL or http://localhost:3000, whatever port the service was given.
    // A refused token (401 from the feed) shows the request reached this server.
    const port = new URL(server.url).port;
    const forwardTo = ['listen', '--forward-to', `${receiver.url}/webhooks`, '--token', 'not-a-session'];
    const byPort = await kassa(forwardTo, { PORT: port });
    assert.equal(byPort.code, 1);
    assert.match(byPort.stderr, /cannot read events: 401/);
    const elsewhere = String(await freePort());
    const byKassaPort = await kassa(forwardTo, { KASSA_PORT: port, PORT: elsewhere });
    assert.equal(byKassaPort.code, 1);
    assert.match(byKassaPort.stderr, /cannot read events: 401/);
    const byPublicUrl = await kassa(forwardTo, { KASSA_PUBLIC_URL: server.url, KASSA_PORT: elsewhere });
    assert.match(byPublicUrl.stderr, /cannot read events: 401/);
  });

  test('forwards new events signed with the secret it printed, then stops on SIGTERM', async () => {
    const earlier = await cancelCheckout();
    const listen = await startListen([
      '--forward-to',
      `${receiver.url}/webhooks`,
      '--api',
      server.url,
      '--token',
      merchant.token,
    ]);
    try {
      const orderId = await cancelCheckout();
      const [delivery] = await receiver.waitFor(1, 15_000);
      assert.equal(delivery.path, '/webhooks');
      assert.equal(header(delivery, 'x-webhook-event'), 'transaction.status_changed');
      assert.match(header(delivery, 'x-webhook-delivery-id'), /^[0-9a-f-]{36}$/);
      assert.match(header(delivery, 'x-webhook-timestamp'), /^\d+$/);
      const event = verifyWebhook(delivery.body, header(delivery, 'x-webhook-signature'), listen.secret);
      assert.ok(event.event === 'transaction.status_changed');
      assert.equal(event.order_id, orderId);
      assert.equal(event.status, 'canceled');
      assert.notEqual(orderId, earlier);
      assert.equal(receiver.requests.length, 1, 'the event from before listen started was not forwarded');
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.match(listen.output(), /transaction\.status_changed {2}→ 200/);
    } finally {
      const exited = once(listen.child, 'exit');
      listen.child.kill('SIGTERM');
      const timer = setTimeout(() => listen.child.kill('SIGKILL'), 5_000);
      const [code] = await exited;
      clearTimeout(timer);
      assert.equal(code, 0, `kassa listen exited with ${code}:\n${listen.output()}`);
    }
  });
});
