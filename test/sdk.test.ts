// The merchant SDK (sdk/) against the real server: base path by key, payments and refunds, typed
// errors, automatic Idempotency-Key on retries, and webhook verification over the raw bytes.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import {
  type CheckoutCreateParams,
  Kassa,
  KassaApiError,
  KassaAuthenticationError,
  KassaInvalidRequestError,
  KassaNotFoundError,
  KassaPermissionError,
  KassaSignatureVerificationError,
  signStandardWebhook,
  signWebhook,
  verifyWebhook,
} from '../sdk/src/index.ts';
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

  test('checkout.create with metadata, checkout.syncStatus, payments.list and listAll', async () => {
    const shop = await createTestMerchant(server, 'SDK Lists');
    const kassa = new Kassa(await createTestKey(server, shop), { host: server.url });
    const checkout = await kassa.checkout.create({
      ...order(),
      metadata: { cart: 'c-1' },
      client_reference_id: 'sdk-order-1',
    });
    const before = await kassa.checkout.syncStatus({ checkout_id: checkout.checkout_id });
    assert.deepEqual([before.checkout_id, before.transaction_id], [checkout.checkout_id, null]);
    const paid = await pay(server, checkout.token);
    const synced = await kassa.checkout.syncStatus({ checkout_id: checkout.checkout_id });
    assert.deepEqual(
      [synced.status, synced.payment_status, synced.transaction_id],
      ['SUCCESS', 'paid', paid.body.transaction_id],
    );
    for (let i = 0; i < 2; i += 1) await pay(server, (await kassa.checkout.create(order())).token);

    const page = await kassa.payments.list({ client_reference_id: 'sdk-order-1' });
    assert.equal(page.count, 1);
    assert.deepEqual(page.results[0]?.metadata, { cart: 'c-1' });
    assert.equal(page.results[0]?.client_reference_id, 'sdk-order-1');
    const all: string[] = [];
    for await (const payment of kassa.payments.listAll({ page_size: 1 })) all.push(payment.id);
    assert.equal(all.length, 3, 'three pages of one, followed through next');
    assert.equal(all[2], paid.body.transaction_id, 'newest first');
  });

  test('refunds.create, refunds.list and refunds.retrieve', async () => {
    const id = await paidPayment();
    const created = await live.refunds.create(id, { reason: 'Customer changed their mind', amount: '10.00' });
    assert.equal(created.status, 'processing');
    assert.equal(created.amount, '10.00');
    assert.equal(created.transaction, id);
    assert.equal(created.id, `RF${created.refund_public_id}`);
    assert.equal((await live.refunds.retrieve(created.refund_public_id)).id, created.id);
    const listed: string[] = [];
    for await (const refund of live.refunds.listAll({ search: id })) listed.push(refund.id);
    assert.deepEqual(listed, [created.id]);
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
    let delivery: Awaited<ReturnType<Receiver['waitFor']>>[number];

    before(async () => {
      receiver = await startReceiver();
      secret = (await setEndpoint(server, merchant, `${receiver.url}/hooks`)) ?? '';
      const sent = await call(server, 'POST', '/api/organization/webhook/test/', { token: merchant.token });
      assert.equal(sent.status, 202, sent.text);
      [delivery] = await receiver.waitFor(1);
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

    test("accepts the delivery given the request's headers (Node's object or fetch Headers), with its timestamp", () => {
      const headers = Object.fromEntries(Object.entries(delivery.headers));
      assert.equal(verifyWebhook(raw, headers, secret).event, 'webhook.test');
      assert.equal(
        verifyWebhook(raw, new Headers(headers as Record<string, string>), secret).event,
        'webhook.test',
      );
      const later = () => Date.now() + 301_000;
      assert.throws(() => verifyWebhook(raw, headers, secret, { now: later }), refused(/replay/));
    });

    test('given headers, a delivery without the Standard Webhooks signature is refused: a captured body replayed with fresh X-Webhook-* headers does not pass', () => {
      // What an attacker who captured this delivery can forge: the body and its body-only signature
      // as they were, an X-Webhook-Timestamp of their choosing (unsigned) and a new delivery id.
      const later = Date.now() + 3_600_000;
      const replayed = {
        'content-type': 'application/json',
        'x-webhook-event': 'webhook.test',
        'x-webhook-signature': signature,
        'x-webhook-timestamp': String(Math.floor(later / 1000)),
        'x-webhook-delivery-id': '6f1c2d4e-0000-4000-8000-00000000beef',
      };
      for (const headers of [replayed, new Headers(replayed)]) {
        assert.throws(
          () => verifyWebhook(raw, headers, secret, { now: () => later }),
          refused(/^Missing webhook-signature header: .*pass its value as the second argument/),
        );
      }
      // The body-only check is still there, asked for explicitly with the signature's value.
      assert.equal(verifyWebhook(raw, replayed['x-webhook-signature'], secret).event, 'webhook.test');
    });

    test('rejects a missing or malformed signature header', () => {
      assert.throws(() => verifyWebhook(raw, undefined, secret), refused(/Missing X-Webhook-Signature/));
      for (const malformed of ['abc', 'sha256=xyz', `sha1=${'0'.repeat(64)}`, `sha256=${'0'.repeat(63)}`]) {
        assert.throws(() => verifyWebhook(raw, malformed, secret), refused(/must look like/));
      }
    });
  });

  describe('Standard Webhooks verification', () => {
    // A secret as Kassa issues it: whsec_ + base64 of 32 random bytes.
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const body = JSON.stringify({ event: 'webhook.test', message: 'hello', livemode: false });
    const id = '6f1c2d4e-0000-4000-8000-000000000001';
    const refused = (message: RegExp) => (error: unknown) => {
      assert.ok(error instanceof KassaSignatureVerificationError, String(error));
      assert.match(error.message, message);
      return true;
    };

    /** The headers the reference library (standardwebhooks) signs for `payload` at `at`. */
    function referenceHeaders(payload: string, at = new Date(), key = secret) {
      return {
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': new Webhook(key).sign(id, at, payload),
      };
    }

    test("accepts what the standardwebhooks library signs, and the library accepts the SDK's signature", () => {
      const headers = referenceHeaders(body);
      assert.equal(verifyWebhook(body, headers, secret).event, 'webhook.test');
      assert.equal(verifyWebhook(Buffer.from(body), new Headers(headers), secret).event, 'webhook.test');
      const ours = signStandardWebhook(body, secret, id);
      assert.deepEqual(new Webhook(secret).verify(body, ours), JSON.parse(body));
      assert.equal(ours['webhook-signature'], headers['webhook-signature']);
    });

    test('any one of several space-separated signatures may match (a secret rotation in flight)', () => {
      const other = `whsec_${randomBytes(32).toString('base64')}`;
      const headers = referenceHeaders(body);
      const mixed = {
        ...headers,
        'webhook-signature': `${referenceHeaders(body, new Date(), other)['webhook-signature']} ${headers['webhook-signature']}`,
      };
      assert.equal(verifyWebhook(body, mixed, secret).event, 'webhook.test');
      assert.throws(
        () => verifyWebhook(body, mixed, `whsec_${randomBytes(32).toString('base64')}`),
        refused(/does not match/),
      );
    });

    test("a wrong secret's refusal says which secrets verify: the newest, and during a rotation's overlap the previous one too, in webhook-signature only", () => {
      const stranger = `whsec_${randomBytes(32).toString('base64')}`;
      assert.throws(
        () => verifyWebhook(body, referenceHeaders(body), stranger),
        refused(
          /^webhook-signature does not match: check the secret \(after a rotation the newest one verifies, and the previous one too until the overlap the rotation asked for ends\)/,
        ),
      );
      assert.throws(
        () => verifyWebhook(body, signWebhook(body, secret), stranger),
        refused(
          /^Signature does not match: check the secret \(X-Webhook-Signature is signed with the newest secret only, also during a rotation's overlap, when only webhook-signature carries the previous secret's\)/,
        ),
      );
    });

    test('refuses a tampered body, a changed id or timestamp, and the wrong secret, as the library does', () => {
      const headers = referenceHeaders(body);
      const cases: [string, Record<string, string>, string][] = [
        ['tampered body', headers, body.replace('hello', 'hellO')],
        ['changed id', { ...headers, 'webhook-id': `${id}x` }, body],
        [
          'changed timestamp',
          { ...headers, 'webhook-timestamp': String(Number(headers['webhook-timestamp']) - 1) },
          body,
        ],
      ];
      for (const [name, changed, payload] of cases) {
        assert.throws(() => verifyWebhook(payload, changed, secret), refused(/does not match/), name);
        assert.throws(() => new Webhook(secret).verify(payload, changed), WebhookVerificationError, name);
      }
      assert.throws(
        () => verifyWebhook(body, headers, `whsec_${randomBytes(32).toString('base64')}`),
        refused(/does not match/),
      );
      // The interface's secret string is not the Standard Webhooks key: the base64 after whsec_ is.
      const wrongKey = new Webhook(Buffer.from(secret, 'utf8'), { format: 'raw' }).sign(id, new Date(), body);
      assert.throws(
        () => verifyWebhook(body, { ...headers, 'webhook-signature': wrongKey }, secret),
        refused(/does not match/),
      );
    });

    test('refuses a timestamp outside the tolerance (a replay), 300 s by default, configurable', () => {
      // 5 s past the tolerance, not 1: the header is in whole seconds, and a second boundary crossed
      // between signing and verifying took one off (CI, 2026-11-28: +301 s read as 300, accepted).
      const old = referenceHeaders(body, new Date(Date.now() - 305_000));
      assert.throws(() => verifyWebhook(body, old, secret), refused(/replay/));
      assert.throws(() => new Webhook(secret).verify(body, old), WebhookVerificationError);
      assert.equal(verifyWebhook(body, old, secret, { toleranceSeconds: 600 }).event, 'webhook.test');
      const future = referenceHeaders(body, new Date(Date.now() + 305_000));
      assert.throws(() => verifyWebhook(body, future, secret), refused(/replay/));
      assert.throws(
        () => verifyWebhook(body, { ...old, 'webhook-timestamp': 'soon' }, secret),
        refused(/Unix time/),
      );
    });

    test('refuses a delivery with a Standard Webhooks signature but no id or timestamp', () => {
      const { 'webhook-id': _id, ...noId } = referenceHeaders(body);
      assert.throws(() => verifyWebhook(body, noId, secret), refused(/Missing webhook-id/));
      assert.throws(() => verifyWebhook(body, {}, secret), refused(/Missing webhook-signature/));
    });

    test('both signatures of one delivery verify with the one secret, each with its own key', () => {
      const headers = { ...referenceHeaders(body), 'x-webhook-signature': signWebhook(body, secret) };
      assert.equal(verifyWebhook(body, headers, secret).event, 'webhook.test');
      assert.equal(verifyWebhook(body, headers['x-webhook-signature'], secret).event, 'webhook.test');
    });
  });
});
