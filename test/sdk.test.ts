// The merchant SDK (sdk/) against the real server: base path by key, payments and refunds, typed
// errors, automatic Idempotency-Key on retries, and webhook verification over the raw bytes.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  type CheckoutCreateParams,
  Kassa,
  KassaApiError,
  KassaAuthenticationError,
  KassaInvalidRequestError,
  KassaNotFoundError,
  KassaPermissionError,
  KassaSignatureVerificationError,
  verifyWebhook,
} from '../sdk/index.ts';
import { pay } from './helpers/checkout.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  DB_KIND,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import { eventually } from './helpers/wallet-fixtures.ts';
import { header, type Receiver, setEndpoint, startReceiver } from './webhooks-helpers.ts';

const order = (): CheckoutCreateParams => ({
  billing_country: 'FR',
  billing_first_name: 'Ada',
  billing_last_name: 'Lovelace',
  billing_email: 'ada@example.com',
  products: [{ name: 'Widget', unit_price: 25, quantity: 2 }],
});

describe(`the SDK against a real server (${DB_KIND})`, () => {
  let server: TestServer;
  let merchant: Merchant;
  let live: Kassa;
  let sandbox: Kassa;

  before(async () => {
    server = await startTestServer();
    merchant = await createTestMerchant(server, 'SDK Shop');
    live = new Kassa(await createTestKey(server, merchant), { host: server.url });
    sandbox = new Kassa(await createTestKey(server, merchant, { environment: 'sandbox' }), {
      host: server.url,
    });
  });
  after(() => server.close());

  /** A checkout made with the SDK, paid on the hosted step, and settled into the wallet. */
  async function paidPayment(): Promise<string> {
    const checkout = await live.checkout.create(order());
    const paid = await pay(server, checkout.token);
    assert.equal(paid.status, 200, paid.text);
    const id = String(paid.body.transaction_id);
    await eventually(async () => {
      const row = await server.ctx.db
        .selectFrom('payments')
        .selectAll()
        .where('public_id', '=', id)
        .executeTakeFirst();
      return row?.settled_at ? row : undefined;
    });
    return id;
  }

  test('a sandbox key sends checkout.create to /sandbox/api by itself', async () => {
    assert.equal(sandbox.basePath, '/sandbox/api');
    assert.equal(live.basePath, '/api');
    const checkout = await sandbox.checkout.create(order());
    assert.match(checkout.checkout_id, /^CO[0-9A-Za-z]{20}$/);
    assert.equal(checkout.order_id, checkout.checkout_id);
    assert.ok(checkout.checkout_url.startsWith(`${server.url}/checkout/`));
    const row = await server.ctx.db
      .selectFrom('checkout_sessions')
      .select('environment')
      .where('public_id', '=', checkout.checkout_id)
      .executeTakeFirstOrThrow();
    assert.equal(row.environment, 'sandbox');
  });

  test('payments.retrieve returns the paid payment with its card attempts', async () => {
    const id = await paidPayment();
    const payment = await live.payments.retrieve(id);
    assert.equal(payment.id, id);
    assert.equal(payment.status, 'paid');
    assert.equal(payment.amount, '50.00');
    assert.equal(payment.depositAttempts[0]?.status, 'succeeded');
    await assert.rejects(
      sandbox.payments.retrieve(id),
      KassaNotFoundError,
      'sandbox keys never see production',
    );
  });

  test('refunds.create, refunds.list and refunds.retrieve', async () => {
    const id = await paidPayment();
    const created = await live.refunds.create(id, { reason: 'Customer changed their mind', amount: '10.00' });
    assert.equal(created.status, 'processing');
    assert.equal(created.amount, '10.00');
    const refundId = `RF${created.refund_public_id}`;
    const page = await live.refunds.list({ search: id, page_size: 5 });
    assert.equal(page.count, 1);
    assert.equal(page.results[0]?.id, refundId);
    const refund = await live.refunds.retrieve(refundId);
    assert.equal(refund.transaction_id, id);
    assert.equal(refund.reason, 'Customer changed their mind');
  });

  test('API errors are typed and carry the status and the detail', async () => {
    const unknownKey = new Kassa(`kassa_live_${'A'.repeat(40)}`, { host: server.url });
    await assert.rejects(unknownKey.payments.retrieve('TX0000000000000000'), (error) => {
      assert.ok(error instanceof KassaAuthenticationError);
      assert.equal(error.status, 401);
      assert.equal(error.detail, 'Invalid API key.');
      return true;
    });
    const other = await createTestMerchant(server, 'Read Only');
    const readOnly = new Kassa(await createTestKey(server, other, { scopes: 'payments:read' }), {
      host: server.url,
    });
    await assert.rejects(readOnly.checkout.create(order()), (error) => {
      assert.ok(error instanceof KassaPermissionError);
      assert.equal(error.status, 403);
      assert.match(error.detail, /checkout:create/);
      return true;
    });
    await assert.rejects(live.payments.retrieve('TX0000000000000000'), (error) => {
      assert.ok(error instanceof KassaNotFoundError && error instanceof KassaApiError);
      assert.deepEqual([error.status, error.detail], [404, 'Payment not found.']);
      assert.ok(error.requestId);
      return true;
    });
    await assert.rejects(live.checkout.create({ ...order(), billing_country: 'FRA' }), (error) => {
      assert.ok(error instanceof KassaInvalidRequestError);
      assert.equal(error.status, 400);
      assert.match(error.detail, /^billing_country: /);
      return true;
    });
  });

  test('a POST retried after a lost answer replays the same checkout (automatic Idempotency-Key)', async () => {
    const keys: (string | null)[] = [];
    const losesFirstAnswer: typeof fetch = async (input, init) => {
      keys.push(new Headers(init?.headers).get('idempotency-key'));
      const response = await fetch(input, init);
      if (keys.length === 1) {
        await response.text();
        throw new TypeError('fetch failed: the connection was reset');
      }
      return response;
    };
    const shop = await createTestMerchant(server, 'Flaky Network');
    const flaky = new Kassa(await createTestKey(server, shop), { host: server.url, fetch: losesFirstAnswer });
    const checkout = await flaky.checkout.create(order());
    assert.equal(keys.length, 2);
    assert.ok(keys[0] && keys[0] === keys[1], 'the retry reuses the Idempotency-Key');
    const sessions = await server.ctx.db
      .selectFrom('checkout_sessions')
      .select('public_id')
      .where('organization_id', '=', shop.organizationId)
      .execute();
    assert.deepEqual(
      sessions.map((row) => row.public_id),
      [checkout.checkout_id],
    );
  });

  describe('verifyWebhook', () => {
    let receiver: Receiver;
    let secret: string;
    let raw: Buffer;
    let signature: string;

    before(async () => {
      receiver = await startReceiver();
      secret = (await setEndpoint(server, merchant, `${receiver.url}/hooks`)) ?? '';
      const sent = await call(server, 'POST', '/api/organization/webhook/test/', { token: merchant.token });
      assert.equal(sent.status, 202, sent.text);
      const [delivery] = await receiver.waitFor(1);
      raw = delivery.body;
      signature = header(delivery, 'x-webhook-signature');
    });
    after(() => receiver.close());

    const refused = (message: RegExp) => (error: unknown) => {
      assert.ok(error instanceof KassaSignatureVerificationError);
      assert.match(error.message, message);
      return true;
    };

    test('accepts a delivery signed with the secret, over the raw bytes', () => {
      const event = verifyWebhook(raw, signature, secret);
      assert.equal(event.event, 'webhook.test');
      assert.equal(verifyWebhook(raw.toString('utf8'), signature, secret).event, 'webhook.test');
    });

    test('rejects a wrong secret, a tampered body and a re-serialized body', () => {
      assert.throws(() => verifyWebhook(raw, signature, `${secret}x`), refused(/does not match/));
      const tampered = Buffer.from(raw.toString('utf8').replace('webhook.test', 'webhook.tost'));
      assert.throws(() => verifyWebhook(tampered, signature, secret), refused(/does not match/));
      const reserialized = JSON.stringify(JSON.parse(raw.toString('utf8')), null, 2);
      assert.throws(() => verifyWebhook(reserialized, signature, secret), refused(/does not match/));
    });

    test('rejects a parsed object with a message that asks for the raw body', () => {
      const parsed = JSON.parse(raw.toString('utf8')) as unknown as string;
      assert.throws(() => verifyWebhook(parsed, signature, secret), refused(/raw request body/));
    });

    test('rejects a missing or malformed signature header', () => {
      assert.throws(() => verifyWebhook(raw, undefined, secret), refused(/Missing X-Webhook-Signature/));
      for (const malformed of ['abc', 'sha256=xyz', `sha1=${'0'.repeat(64)}`, `sha256=${'0'.repeat(63)}`]) {
        assert.throws(() => verifyWebhook(raw, malformed, secret), refused(/must look like/));
      }
    });
  });
});
