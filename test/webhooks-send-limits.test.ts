// The sending limits as docs/webhooks.md states them: "up to 64 sends in flight per process, at most 32
// of them to one endpoint". The numbers are written here from the docs, not read from worker.ts. Three
// receivers hold every request open until released, so the test counts exactly how many are in flight.
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { emitEvent } from '../src/modules/events/emit.ts';
import {
  createTestMerchant,
  DB_KIND,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import { setEndpoint, waitUntil } from './webhooks-helpers.ts';

const IN_FLIGHT_PER_PROCESS = 64;
const IN_FLIGHT_PER_ENDPOINT = 32;

interface HoldingReceiver {
  url: string;
  open: number;
  peak: number;
  received: number;
  release(): void;
  close(): Promise<void>;
}

async function holdingReceiver(): Promise<HoldingReceiver> {
  const held: ServerResponse[] = [];
  let holding = true;
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      receiver.received += 1;
      receiver.open += 1;
      receiver.peak = Math.max(receiver.peak, receiver.open);
      response.on('close', () => {
        receiver.open -= 1;
      });
      if (holding) held.push(response);
      else response.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const receiver: HoldingReceiver = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    open: 0,
    peak: 0,
    received: 0,
    release() {
      holding = false;
      for (const response of held.splice(0)) response.end('ok');
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return receiver;
}

describe(`webhook sending limits (${DB_KIND})`, () => {
  let server: TestServer;
  const receivers: HoldingReceiver[] = [];
  before(async () => {
    // Attempts may be held for seconds here: a long timeout, and no retry within the test.
    server = await startTestServer({
      env: { KASSA_WEBHOOK_TIMEOUT_MS: '30000', KASSA_WEBHOOK_RETRY_SCHEDULE_MS: '600000' },
    });
  });
  after(async () => {
    for (const receiver of receivers) {
      receiver.release();
      await receiver.close();
    }
    await server.close();
  });

  test('at most 64 sends in flight per process and 32 per endpoint, the rest waiting their turn', async () => {
    const merchants: Merchant[] = [];
    for (let i = 0; i < 3; i++) {
      const receiver = await holdingReceiver();
      receivers.push(receiver);
      const merchant = await createTestMerchant(server, `Limits ${i}`);
      await setEndpoint(server, merchant, `${receiver.url}/hooks`);
      merchants.push(merchant);
    }
    const perEndpoint = 40;
    await server.ctx.db.transaction().execute(async (trx) => {
      for (const merchant of merchants) {
        for (let index = 0; index < perEndpoint; index++) {
          const subject = `RF${String(index).padStart(16, '0')}`;
          await emitEvent(trx, {
            organizationId: merchant.organizationId,
            environment: 'sandbox',
            type: 'refund.status_changed',
            subject,
            payload: { refund_id: subject, status: 'processing' },
            now: new Date().toISOString(),
          });
        }
      }
    });
    const inFlight = () => receivers.reduce((sum, receiver) => sum + receiver.open, 0);
    await waitUntil(async () => inFlight() === IN_FLIGHT_PER_PROCESS, 20_000, '64 sends in flight');
    // Held for a while: nothing more is sent while all 64 slots are taken.
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(inFlight(), IN_FLIGHT_PER_PROCESS);
    for (const receiver of receivers) {
      assert.ok(receiver.peak <= IN_FLIGHT_PER_ENDPOINT, `one endpoint had ${receiver.peak} at once`);
    }
    assert.equal(Math.max(...receivers.map((receiver) => receiver.peak)), IN_FLIGHT_PER_ENDPOINT);
    for (const receiver of receivers) receiver.release();
    await waitUntil(
      async () => receivers.every((receiver) => receiver.received === perEndpoint),
      30_000,
      'every delivery to arrive',
    );
    for (const receiver of receivers) assert.ok(receiver.peak <= IN_FLIGHT_PER_ENDPOINT);
  });
});
