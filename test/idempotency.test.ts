// Idempotency-Key on API-key POSTs: concurrent duplicates (across two server processes on PostgreSQL)
// create one resource and all get its answer; another body is a 422; keys are scoped to organization and
// environment; a 5xx frees the key; a first request still running after the wait is a 409; keys are
// pruned after 24 h.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { pruneIdempotencyKeys, RETENTION_MS } from '../src/modules/idempotency/service.ts';
import { billing } from './helpers/checkout.ts';
import { useProvider, wrapProvider } from './helpers/providers.ts';
import {
  type ApiResponse,
  call,
  createTestKey,
  createTestMerchant,
  DB_KIND,
  type Merchant,
  PG_URL,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import { payThroughCheckout } from './helpers/wallet-fixtures.ts';

type Json = Record<string, unknown>;
const order = (name = 'Widget') => ({ ...billing(), products: [{ name, unit_price: 12.5, quantity: 1 }] });
const replayed = (response: ApiResponse) => response.headers.get('idempotent-replayed') === 'true';

describe(`Idempotency-Key (${DB_KIND})`, () => {
  let server: TestServer;
  /** A second instance on the same database on PostgreSQL (another process, as far as the data knows). */
  let twin: TestServer;
  let shop: Merchant;
  let key: string;

  before(async () => {
    server = await startTestServer();
    twin = PG_URL ? await startTestServer({ shareWith: server, worker: false }) : server;
    shop = await createTestMerchant(server, 'Idempotent Shop');
    key = await createTestKey(server, shop);
  });
  after(async () => {
    if (twin !== server) await twin.close();
    await server.close();
  });

  const create = (idempotencyKey: string, body: Json = order(), apiKey = key, base = '/api', on = server) =>
    call<Json>(on, 'POST', `${base}/checkout/create/`, {
      apiKey,
      body,
      headers: { 'idempotency-key': idempotencyKey },
    });

  const sessionsOf = async (organizationId: number) =>
    (
      await server.ctx.db
        .selectFrom('checkout_sessions')
        .select('public_id')
        .where('organization_id', '=', organizationId)
        .execute()
    ).map((row) => row.public_id);

  test('50 concurrent duplicates create one checkout, and every answer is the same', async () => {
    const before = await sessionsOf(shop.organizationId);
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        create('concurrent-1', order(), key, '/api', i % 2 ? twin : server),
      ),
    );
    const created = (await sessionsOf(shop.organizationId)).filter((id) => !before.includes(id));
    assert.equal(created.length, 1);
    for (const answer of answers) {
      assert.equal(answer.status, 201, answer.text);
      assert.equal(answer.text, answers[0].text);
    }
    assert.equal(answers[0].body.checkout_id, created[0]);
    assert.equal(answers.filter((answer) => !replayed(answer)).length, 1, 'one original, 49 replays');
  });

  test('the same key with another body is a 422; with the same body it replays', async () => {
    const first = await create('body-check');
    assert.equal(first.status, 201);
    const other = await create('body-check', order('Gadget'));
    assert.equal(other.status, 422);
    assert.equal(other.body.detail, 'Idempotency-Key was already used with a different request.');
    const again = await create('body-check');
    assert.ok(replayed(again));
    assert.deepEqual(again.body, first.body);
  });

  test('a key longer than 255 characters is a 400; 255 is accepted', async () => {
    const long = await create('k'.repeat(256));
    assert.equal(long.status, 400);
    assert.equal(long.body.detail, 'Idempotency-Key: must be 1 to 255 characters.');
    assert.equal((await create('k'.repeat(255))).status, 201);
  });

  test('a refund creation is replayed, not repeated', async () => {
    const payment = await payThroughCheckout(server, key, { unitPrice: 40 });
    const refund = (headers: Record<string, string>, amount = '5.00') =>
      call<Json>(server, 'POST', `/api/transactions/${payment.public_id}/refund/`, {
        apiKey: key,
        body: { reason: 'Damaged in transit', amount },
        headers,
      });
    const first = await refund({ 'idempotency-key': 'refund-1' });
    assert.equal(first.status, 200, first.text);
    const second = await refund({ 'idempotency-key': 'refund-1' });
    assert.ok(replayed(second));
    assert.deepEqual(second.body, first.body);
    assert.equal((await refund({ 'idempotency-key': 'refund-1' }, '6.00')).status, 422);
    const rows = await server.ctx.db
      .selectFrom('refunds')
      .select('id')
      .where('payment_id', '=', payment.id)
      .execute();
    assert.equal(rows.length, 1);
  });

  test('a duplicate of a refund still waiting on the provider waits, and gets the same answer', async () => {
    const payment = await payThroughCheckout(server, key, { unitPrice: 40 });
    const refund = (on: TestServer) =>
      call<Json>(on, 'POST', `/api/transactions/${payment.public_id}/refund/`, {
        apiKey: key,
        body: { reason: 'Slow provider', amount: '5.00' },
        headers: { 'idempotency-key': 'refund-slow' },
      });
    // The refund is recorded (with its answer, in its transaction) before the provider is asked; the
    // provider is slow to answer.
    const real = server.ctx.providers.forEnvironment('production');
    const { promise: gate, resolve: answer } = Promise.withResolvers<void>();
    const { promise: asked, resolve: reached } = Promise.withResolvers<void>();
    const undo = useProvider(
      server.ctx,
      wrapProvider(real, {
        async createRefund(input) {
          reached();
          await gate;
          return real.createRefund(input);
        },
      }),
    );
    try {
      const first = refund(server);
      await asked;
      // The duplicate (through the other process on PostgreSQL) arrives while the provider is asked.
      const second = refund(twin);
      await new Promise((resolve) => setTimeout(resolve, 300));
      answer();
      const [original, duplicate] = await Promise.all([first, second]);
      assert.equal(original.status, 200, original.text);
      assert.equal(original.body.status, 'processing');
      assert.ok(replayed(duplicate));
      assert.deepEqual([duplicate.status, duplicate.body], [200, original.body]);
      // Later retries replay the same.
      assert.deepEqual((await refund(server)).body, original.body);
    } finally {
      answer();
      undo();
    }
  });

  test('keys belong to one organization and one environment', async () => {
    const first = await create('shared-key');
    const other = await createTestMerchant(server, 'Other Shop');
    const inOther = await create('shared-key', order(), await createTestKey(server, other));
    assert.equal(inOther.status, 201);
    assert.ok(!replayed(inOther));
    assert.notEqual(inOther.body.checkout_id, first.body.checkout_id);
    assert.equal((await sessionsOf(other.organizationId)).length, 1);
    const sandboxKey = await createTestKey(server, shop, { environment: 'sandbox' });
    const inSandbox = await create('shared-key', order(), sandboxKey, '/sandbox/api');
    assert.equal(inSandbox.status, 201);
    assert.ok(!replayed(inSandbox));
    assert.notEqual(inSandbox.body.checkout_id, first.body.checkout_id);
  });

  test('a request that failed with a 5xx frees its key: the retry runs again', async () => {
    const ttl = server.ctx.config.checkoutTtlS;
    server.ctx.config.checkoutTtlS = Number.NaN; // an invalid expiry makes the creation throw
    let failed: ApiResponse<Json>;
    try {
      failed = await create('after-crash');
    } finally {
      server.ctx.config.checkoutTtlS = ttl;
    }
    assert.equal(failed.status, 500);
    assert.deepEqual(failed.body, { detail: 'Internal server error.' });
    const retried = await create('after-crash');
    assert.equal(retried.status, 201);
    assert.ok(!replayed(retried));
    assert.ok(replayed(await create('after-crash')));
  });

  test('a duplicate of a request still running after the wait is a 409; once it is done it replays', async () => {
    const body = JSON.stringify(order());
    // A claim as the first request leaves it while running (request hash: method, path, raw body).
    const hash = createHash('sha256').update(`POST /api/checkout/create\n${body}`).digest('hex');
    const now = Date.now();
    const row = await server.ctx.db
      .insertInto('idempotency_keys')
      .values({
        organization_id: shop.organizationId,
        environment: 'production',
        key: 'still-running',
        request_hash: hash,
        status: 'in_progress',
        created_at: new Date(now).toISOString(),
        locked_until: new Date(now + 60_000).toISOString(),
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const started = Date.now();
    const busy = await call<Json>(server, 'POST', '/api/checkout/create/', {
      apiKey: key,
      body,
      headers: { 'idempotency-key': 'still-running' },
    });
    assert.equal(busy.status, 409);
    assert.equal(busy.body.detail, 'A request with this Idempotency-Key is still being processed.');
    assert.ok(Date.now() - started >= 4500, 'the duplicate waited for the first request');
    const answer = (await create('for-the-stored-answer')).text;
    await server.ctx.db
      .updateTable('idempotency_keys')
      .set({ status: 'done', response_status: 201, response_body: answer })
      .where('id', '=', row.id)
      .execute();
    const retry = await call(server, 'POST', '/api/checkout/create/', {
      apiKey: key,
      body,
      headers: { 'idempotency-key': 'still-running' },
    });
    assert.deepEqual([retry.status, retry.text, replayed(retry)], [201, answer, true]);
  });

  test('a request whose process died after its change committed is replayed, not run again', async () => {
    const body = JSON.stringify(order('Committed'));
    const hash = createHash('sha256').update(`POST /api/checkout/create\n${body}`).digest('hex');
    const answer = await create('answer-to-store', JSON.parse(body));
    const before = await sessionsOf(shop.organizationId);
    const now = Date.now();
    // The claim as a request leaves it when its change committed with its answer and its process then
    // died: committed (its own reply never came), an answer stored, the lock run out.
    await server.ctx.db
      .insertInto('idempotency_keys')
      .values({
        organization_id: shop.organizationId,
        environment: 'production',
        key: 'died-after-commit',
        request_hash: hash,
        status: 'committed',
        response_status: 201,
        response_body: answer.text,
        created_at: new Date(now - 120_000).toISOString(),
        locked_until: new Date(now - 60_000).toISOString(),
      })
      .execute();
    const retry = await call(server, 'POST', '/api/checkout/create/', {
      apiKey: key,
      body,
      headers: { 'idempotency-key': 'died-after-commit' },
    });
    assert.deepEqual([retry.status, retry.text, replayed(retry)], [201, answer.text, true]);
    assert.deepEqual(await sessionsOf(shop.organizationId), before);
  });

  test('keys are pruned after 24 hours; the same key then creates a new checkout', async () => {
    const first = await create('day-old');
    const count = () =>
      server.ctx.db.selectFrom('idempotency_keys').select('id').where('key', '=', 'day-old').execute();
    await pruneIdempotencyKeys(server.ctx);
    assert.equal((await count()).length, 1, 'a fresh key is kept');
    const tomorrow = { ...server.ctx, clock: () => new Date(Date.now() + RETENTION_MS + 60_000) };
    assert.ok((await pruneIdempotencyKeys(tomorrow)) >= 1);
    assert.equal((await count()).length, 0);
    const again = await create('day-old');
    assert.equal(again.status, 201);
    assert.ok(!replayed(again));
    assert.notEqual(again.body.checkout_id, first.body.checkout_id);
  });
});
