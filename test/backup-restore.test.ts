// docs/deploy.md's SQLite backup and restore, done as written: `kassa backup` of a running service,
// the copy restored as kassa.sqlite in a fresh data directory, and `kassa serve` from it with the same
// secret key: the same payments, refunds, logins and webhook secret. (PostgreSQL uses pg_dump.)
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { kassa, type RunningKassa, startKassa } from './helpers/cli.ts';
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
import { eventually, payThroughCheckout } from './helpers/wallet-fixtures.ts';
import { setEndpoint } from './webhooks-helpers.ts';

type Json = Record<string, unknown>;

describe('backup and restore into a fresh data directory (SQLite)', { skip: DB_KIND === 'postgres' }, () => {
  let original: TestServer;
  let merchant: Merchant;
  let key: string;
  let secret: string;
  let paymentId: string;
  let paymentBefore: Json;
  let refundsBefore: Json;
  let restoredDir: string;
  let restored: RunningKassa;
  let restoredUrl: string;

  before(async () => {
    original = await startTestServer({ env: { KASSA_SIM_REFUND_DELAY_MS: '50' } });
    merchant = await createTestMerchant(original, 'Backup Shop');
    key = await createTestKey(original, merchant);
    secret =
      (await setEndpoint(original, merchant, `${original.url}/api/v1/webhooks/${merchant.slug}/`)) ?? '';
    const payment = await payThroughCheckout(original, key, { unitPrice: 40 });
    paymentId = payment.public_id;
    const refund = await call(original, 'POST', `/api/transactions/${paymentId}/refund/`, {
      apiKey: key,
      body: { reason: 'Backup test', amount: '10.00' },
    });
    assert.equal(refund.status, 200, refund.text);
    // Settled first, so nothing moves between the backup and the comparison.
    await eventually(async () => {
      const refunds = await call<{ results: Json[] }>(original, 'GET', `/api/refunds/?search=${paymentId}`, {
        apiKey: key,
      });
      return refunds.body.results[0]?.status === 'completed' ? true : undefined;
    });
    paymentBefore = (await call<Json>(original, 'GET', `/api/transactions/${paymentId}/`, { apiKey: key }))
      .body;
    refundsBefore = (await call<Json>(original, 'GET', `/api/refunds/?search=${paymentId}`, { apiKey: key }))
      .body;

    // 1. The backup, taken while the original service runs.
    restoredDir = mkdtempSync(join(tmpdir(), 'kassa-restore-'));
    const backupFile = join(restoredDir, 'backup.sqlite');
    const backup = await kassa(['backup', '--to', backupFile], original.env);
    assert.equal(backup.code, 0, backup.stderr);
    // 2. Restored into a fresh data directory, with the same secret key.
    const dataDir = join(restoredDir, 'data');
    mkdirSync(dataDir, { mode: 0o700 });
    copyFileSync(backupFile, join(dataDir, 'kassa.sqlite'));
    // 3. Served from there.
    const port = await freePort();
    restoredUrl = `http://127.0.0.1:${port}`;
    restored = await startKassa(
      ['serve'],
      {
        KASSA_DATA_DIR: dataDir,
        KASSA_SECRET_KEY: original.env.KASSA_SECRET_KEY,
        KASSA_HOST: '127.0.0.1',
        KASSA_PORT: String(port),
        KASSA_PUBLIC_URL: restoredUrl,
        KASSA_ENV: 'test',
        KASSA_LOG_LEVEL: 'silent',
      },
      /listening on/,
    );
  });
  after(async () => {
    await restored?.stop();
    await original?.close();
    if (restoredDir) rmSync(restoredDir, { recursive: true, force: true });
  });

  const server = () => ({ url: restoredUrl });

  test('the restored service answers with the same payment and refunds for the same API key', async () => {
    assert.equal((await fetch(`${restoredUrl}/readyz`)).status, 200);
    const payment = await call<Json>(server(), 'GET', `/api/transactions/${paymentId}/`, { apiKey: key });
    assert.equal(payment.status, 200, payment.text);
    assert.deepEqual(payment.body, paymentBefore);
    const refunds = await call<Json>(server(), 'GET', `/api/refunds/?search=${paymentId}`, { apiKey: key });
    assert.deepEqual(
      (refunds.body.results as Json[]).map((refund) => [refund.id, refund.amount]),
      (refundsBefore.results as Json[]).map((refund) => [refund.id, refund.amount]),
    );
  });

  test('the owner logs in with the same password, and the webhook secret still signs (the key decrypts it)', async () => {
    const login = await call<{ token: string }>(server(), 'POST', '/api/auth/login/', {
      body: { email: merchant.email, password: merchant.password },
    });
    assert.equal(login.status, 200, login.text);
    const token = login.body.token;
    const moved = await call(server(), 'PUT', '/api/organization/webhook/', {
      token,
      body: { endpoint_url: `${restoredUrl}/api/v1/webhooks/${merchant.slug}/` },
    });
    assert.equal(moved.status, 200, moved.text);
    assert.equal((await call(server(), 'POST', '/api/organization/webhook/test/', { token })).status, 202);
    let received: Json[] = [];
    for (let i = 0; i < 100 && received.length === 0; i += 1) {
      const page = await call<{ results: Json[] }>(server(), 'GET', '/api/organization/webhook/received/', {
        token,
      });
      received = page.body.results.filter((entry) => entry.event === 'webhook.test');
      if (received.length === 0) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(received.length, 1);
    assert.equal(received[0].signature_valid, true);
    const headers = received[0].headers as Record<string, string>;
    const expected = `sha256=${createHmac('sha256', secret).update(String(received[0].body)).digest('hex')}`;
    assert.equal(headers['x-webhook-signature'], expected, 'signed with the secret issued before the backup');
  });

  test('the restored database needs no migration', async () => {
    const migrate = await kassa(['migrate'], {
      KASSA_DATA_DIR: join(restoredDir, 'data'),
      KASSA_SECRET_KEY: original.env.KASSA_SECRET_KEY,
    });
    assert.equal(migrate.code, 0, migrate.stderr);
    assert.equal(migrate.stdout.trim(), 'database is up to date');
  });
});
