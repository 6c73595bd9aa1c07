// The published shape of @kassa/sdk: `npm pack` of the workspace, installed from the tarball into a
// fresh directory, then a script using every API-key operation and both webhook verifications runs
// against a real server under the oldest Node the SDK supports (18) and the newest the registry has.
// A strict TypeScript consumer compiles against the shipped .d.ts.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createTestKey, createTestMerchant, startTestServer, type TestServer } from '../helpers/server.ts';
import { nodeBinary, ROOT, sh, shOk } from './helpers.ts';

/** Oldest supported (engines >=18: the last 18.x) and the newest release on the registry. */
const NODE_VERSIONS = (process.env.KASSA_SDK_NODE_VERSIONS ?? '18.20.8,26.10.0').split(',');

const CONSUMER = `
import { createHmac, randomBytes } from 'node:crypto';
import {
  Kassa, KassaInvalidRequestError, KassaNotFoundError, KassaSignatureVerificationError,
  signStandardWebhook, signWebhook, verifyWebhook,
} from '@kassa/sdk';

const url = process.env.KASSA_URL;
const kassa = new Kassa(process.env.KASSA_KEY, { host: url });
const out = { node: process.version };

const checkout = await kassa.checkout.create({
  billing_country: 'FR', billing_first_name: 'Ada', billing_last_name: 'Lovelace',
  billing_email: 'ada@example.com', currency: 'EUR',
  products: [{ name: 'T-shirt', unit_price: 25, quantity: 2 }],
  metadata: { cart: 'c-42' }, client_reference_id: 'pkg-' + process.version,
});
out.checkout = checkout.checkout_id;
// The hosted page's step, as the customer's browser would make it.
const paid = await (await fetch(url + '/api/checkout/' + checkout.token + '/pay/', {
  method: 'POST', headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ card_number: '4242 4242 4242 4242', exp_month: 12, exp_year: 2040, cvc: '123', cardholder_name: 'Ada' }),
})).json();
const synced = await kassa.checkout.syncStatus({ checkout_id: checkout.checkout_id });
out.sync = synced.status;
const payment = await kassa.payments.retrieve(paid.transaction_id);
out.payment = { id: payment.id, status: payment.status, amount: payment.amount, metadata: payment.metadata };
const page = await kassa.payments.list({ client_reference_id: 'pkg-' + process.version });
out.listed = page.results.map((p) => p.id);
const all = [];
for await (const p of kassa.payments.listAll({ page_size: 1, client_reference_id: 'pkg-' + process.version })) all.push(p.id);
out.listedAll = all;

// The wallet is credited by the worker a moment after the payment: retry the refund until it is.
let refund;
for (let i = 0; i < 100 && !refund; i++) {
  try {
    refund = await kassa.refunds.create(payment.id, { reason: 'Package test', amount: '5.00' });
  } catch (error) {
    if (!(error instanceof KassaInvalidRequestError)) throw error;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
out.refund = { id: refund.id, transaction: refund.transaction, status: refund.status };
out.refundRetrieved = (await kassa.refunds.retrieve(refund.refund_public_id)).id;
out.refundsListed = (await kassa.refunds.list({ search: payment.id })).results.map((r) => r.id);
try {
  await kassa.payments.retrieve('TX0000000000000000');
} catch (error) {
  out.notFound = error instanceof KassaNotFoundError && error.status === 404;
}

const secret = 'whsec_' + randomBytes(32).toString('base64');
const body = JSON.stringify({ event: 'webhook.test', message: 'hello', livemode: false });
const standard = signStandardWebhook(body, secret, 'msg_1');
out.standard = verifyWebhook(Buffer.from(body), standard, secret).event;
out.standardFetchHeaders = verifyWebhook(body, new Headers(standard), secret).event;
const legacy = 'sha256=' + createHmac('sha256', secret).update(body).digest('hex');
out.legacySame = legacy === signWebhook(body, secret);
out.legacy = verifyWebhook(body, legacy, secret).event;
try {
  // Headers without the Standard Webhooks signature: refused (the body-only one cannot refuse replays).
  verifyWebhook(body, { 'x-webhook-signature': legacy, 'x-webhook-timestamp': String(Math.floor(Date.now() / 1000)) }, secret);
} catch (error) {
  out.legacyHeadersRefused = error instanceof KassaSignatureVerificationError;
}
try {
  verifyWebhook(body.replace('hello', 'HELLO'), standard, secret);
} catch (error) {
  out.tamperedRefused = error instanceof KassaSignatureVerificationError;
}
console.log(JSON.stringify(out));
`;

const TYPED_CONSUMER = `
import { Kassa, type Payment, type WebhookEvent, verifyWebhook } from '@kassa/sdk';
const kassa = new Kassa('kassa_test_x', { host: 'http://localhost:3000' });
export async function total(): Promise<string> {
  const payment: Payment = await kassa.payments.retrieve('TX1');
  const event: WebhookEvent = verifyWebhook('{}', { 'webhook-id': 'a' }, 'whsec_x');
  if (event.event === 'transaction.status_changed') return event.gross_amount + payment.metadata.cart;
  return payment.amount;
}
`;

describe('the packed @kassa/sdk, installed into a fresh directory', () => {
  let server: TestServer;
  let key: string;
  let work: string;
  let tarball: string;

  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'kassa-sdk-pkg-'));
    const packed = await shOk(`npm pack -w @kassa/sdk --pack-destination "${work}" --json`, { cwd: ROOT });
    tarball = join(work, (JSON.parse(packed) as { filename: string }[])[0].filename);
    server = await startTestServer();
    key = await createTestKey(server, await createTestMerchant(server, 'Package Shop'), {
      environment: 'sandbox',
    });
  });
  after(async () => {
    await server?.close();
    rmSync(work, { recursive: true, force: true });
  });

  test('the tarball holds the compiled ESM, the .d.ts files, the README, the CHANGELOG and package.json, nothing else', async () => {
    const listing = await shOk(`tar tzf "${tarball}"`, { cwd: work });
    const files = listing.trim().split('\n').sort();
    assert.ok(files.includes('package/dist/index.js'));
    assert.ok(files.includes('package/dist/index.d.ts'));
    assert.ok(files.includes('package/README.md'));
    assert.ok(files.includes('package/CHANGELOG.md'));
    assert.ok(files.includes('package/package.json'));
    assert.deepEqual(
      files.filter(
        (file) => !/^package\/(dist\/\w+\.(js|d\.ts)|README\.md|CHANGELOG\.md|package\.json)$/.test(file),
      ),
      [],
    );
    const index = await shOk(`tar xzf "${tarball}" -O package/dist/client.js`, { cwd: work });
    assert.doesNotMatch(index, /from '\.\/[\w-]+\.ts'/, 'relative imports point at .js files');
  });

  for (const version of NODE_VERSIONS) {
    test(`on Node ${version}: every API-key operation and both webhook signatures`, {
      timeout: 300_000,
    }, async () => {
      const node = await nodeBinary(version);
      const app = join(work, `app-${version}`);
      await shOk(`mkdir -p "${app}" && cd "${app}" && npm init -y >/dev/null && npm pkg set type=module`, {
        cwd: work,
      });
      await shOk(`npm install --no-audit --no-fund "${tarball}"`, { cwd: app });
      writeFileSync(join(app, 'main.js'), CONSUMER);
      const run = await sh(`"${node}" main.js`, {
        cwd: app,
        env: { KASSA_URL: server.url, KASSA_KEY: key },
        timeoutMs: 120_000,
      });
      assert.equal(run.code, 0, run.stderr);
      const out = JSON.parse(run.stdout) as Record<string, unknown>;
      assert.equal(out.node, `v${version}`);
      assert.equal(out.sync, 'SUCCESS');
      const payment = out.payment as { id: string; status: string; amount: string; metadata: unknown };
      assert.deepEqual(
        [payment.status, payment.amount, payment.metadata],
        ['paid', '50.00', { cart: 'c-42' }],
      );
      assert.deepEqual(out.listed, [payment.id]);
      assert.deepEqual(out.listedAll, [payment.id]);
      const refund = out.refund as { id: string; transaction: string; status: string };
      assert.deepEqual([refund.transaction, refund.status], [payment.id, 'processing']);
      assert.equal(out.refundRetrieved, refund.id);
      assert.deepEqual(out.refundsListed, [refund.id]);
      assert.equal(out.notFound, true);
      assert.deepEqual(
        [
          out.standard,
          out.standardFetchHeaders,
          out.legacy,
          out.legacySame,
          out.legacyHeadersRefused,
          out.tamperedRefused,
        ],
        ['webhook.test', 'webhook.test', 'webhook.test', true, true, true],
      );
    });
  }

  test('a strict TypeScript consumer compiles against the shipped .d.ts', async () => {
    const app = join(work, 'typed');
    await shOk(`mkdir -p "${app}" && cd "${app}" && npm init -y >/dev/null && npm pkg set type=module`, {
      cwd: work,
    });
    await shOk(`npm install --no-audit --no-fund "${tarball}"`, { cwd: app });
    writeFileSync(join(app, 'index.ts'), TYPED_CONSUMER);
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const types = join(ROOT, 'node_modules', '@types');
    await shOk(
      `node "${tsc}" --noEmit --strict --module nodenext --moduleResolution nodenext --target es2022 ` +
        `--typeRoots "${types}" --types node --skipLibCheck false index.ts`,
      { cwd: app },
    );
  });
});
