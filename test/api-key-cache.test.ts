// The API-key cache of GET /transactions/{id}/ and POST /checkout/create/ (src/modules/api-keys/cache.ts)
// keeps revocation immediate across processes. Process A is the test's own service; process B is a
// `kassa serve` child on the same database. B serves a key it knows from its cache (one statement per
// request, counted by its /metrics), and the first request to B after A revoked or rotated the key, or
// changed the organization's terms, is refused or answered on the new terms.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Child, startNode, stop, waitFor } from '../bench/processes.ts';
import { billing, createCheckout, type Json, pay } from './helpers/checkout.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';

describe('the API-key cache across processes', () => {
  let a: TestServer;
  let b: { url: string };
  let child: Child;

  before(async () => {
    a = await startTestServer({ worker: false });
    child = startNode(['src/cli/main.ts', 'serve', '--no-worker'], a.env);
    const [, url] = await waitFor(child, /listening on (http:\/\/\S+)/);
    b = { url };
  });
  after(async () => {
    await stop(child);
    await a.close();
  });

  /** kassa_db_statements_total of process B. */
  async function statementsOfB(): Promise<number> {
    const text = await (await fetch(`${b.url}/metrics`)).text();
    const match = /^kassa_db_statements_total (\d+)/m.exec(text);
    assert.ok(match, 'B reports its statements');
    return Number(match[1]);
  }

  /** The GET on B, with the statements it took. */
  async function getOnB(apiKey: string, id: string) {
    const before = await statementsOfB();
    const response = await call(b, 'GET', `/api/transactions/${id}/`, { apiKey });
    return { response, statements: (await statementsOfB()) - before };
  }

  async function keyId(merchant: Merchant, rawKey: string): Promise<number> {
    const list = await call<{ id: number; prefix: string; status: string }[]>(
      a,
      'GET',
      '/api/organization/api-keys/',
      { token: merchant.token },
    );
    const key = list.body.find((row) => row.status === 'active' && rawKey.startsWith(row.prefix));
    assert.ok(key, 'the key is listed');
    return key.id;
  }

  test('a cached key reads in one statement, and a revocation on A is refused by the next request to B', async () => {
    const merchant = await createTestMerchant(a, 'Cache Shop');
    const apiKey = await createTestKey(a, merchant);
    const checkout = await createCheckout(a, apiKey);
    const paid = await pay(a, checkout.token);
    assert.equal(paid.status, 200, paid.text);
    const id = String(paid.body.transaction_id);

    const first = await getOnB(apiKey, id);
    assert.equal(first.response.status, 200, first.response.text);
    assert.ok(first.statements >= 2, `the first request looks the key up (${first.statements} statements)`);
    const cached = await getOnB(apiKey, id);
    assert.equal(cached.response.status, 200, cached.response.text);
    assert.equal(cached.statements, 1, 'a cached key: the payment and the key status in one statement');
    const onA = await call(a, 'GET', `/api/transactions/${id}/`, { apiKey });
    assert.equal(cached.response.text, onA.text, 'the same bytes from the cache as from the lookup');

    const revoked = await call(
      a,
      'POST',
      `/api/organization/api-keys/${await keyId(merchant, apiKey)}/revoke/`,
      {
        token: merchant.token,
      },
    );
    assert.equal(revoked.status, 200, revoked.text);
    const refused = await getOnB(apiKey, id);
    assert.equal(refused.response.status, 401);
    assert.deepEqual(refused.response.body, { detail: 'Invalid API key.' });
    // Forgotten: the next request looks the key up again, and is refused there as well.
    const again = await getOnB(apiKey, id);
    assert.equal(again.response.status, 401);
    assert.ok(again.statements >= 1);
  });

  test('a rotation on A: the old key is refused on B even for a payment it cannot find, the new one works', async () => {
    const merchant = await createTestMerchant(a, 'Rotate Shop');
    const oldKey = await createTestKey(a, merchant);
    const missing = `TX${'0'.repeat(16)}`;
    for (let n = 0; n < 2; n++) {
      const { response } = await getOnB(oldKey, missing);
      assert.equal(response.status, 404, response.text);
    }
    const rotated = await call<{ raw_key: string }>(a, 'POST', '/api/organization/api-keys/rotate/', {
      token: merchant.token,
      body: {},
    });
    assert.equal(rotated.status, 200, rotated.text);
    const refused = await getOnB(oldKey, missing);
    assert.equal(refused.response.status, 401);
    assert.deepEqual(refused.response.body, { detail: 'Invalid API key.' });
    const fresh = await getOnB(rotated.body.raw_key, missing);
    assert.equal(fresh.response.status, 404, fresh.response.text);
  });

  /** A checkout created on B, with the statements it took. */
  async function createOnB(apiKey: string, body: Json = {}, headers: Record<string, string> = {}) {
    const before = await statementsOfB();
    const response = await call<Json>(b, 'POST', '/api/checkout/create/', {
      apiKey,
      headers,
      body: { products: [{ name: 'Widget', unit_price: '10.00', quantity: 1 }], ...billing(), ...body },
    });
    return { response, statements: (await statementsOfB()) - before };
  }

  async function sessionsOf(merchant: Merchant) {
    return a.ctx.db
      .selectFrom('checkout_sessions')
      .select(['public_id', 'price_mode'])
      .where('organization_id', '=', merchant.organizationId)
      .execute();
  }

  test('checkout: a cached key creates in one statement; a revocation on A is refused by the next create on B', async () => {
    const merchant = await createTestMerchant(a, 'Create Shop');
    const apiKey = await createTestKey(a, merchant);
    const first = await createOnB(apiKey);
    assert.equal(first.response.status, 201, first.response.text);
    assert.ok(first.statements >= 2, `the first create looks the key up (${first.statements} statements)`);
    const cached = await createOnB(apiKey, { client_reference_id: 'order-2' });
    assert.equal(cached.response.status, 201, cached.response.text);
    assert.equal(cached.statements, 1, 'a cached key: the key, the terms and the insert in one statement');
    const detail = await call<Json>(a, 'GET', `/api/checkout/${cached.response.body.token}/`);
    assert.equal(detail.status, 200, detail.text);
    assert.equal(detail.body.total, '10.00');
    assert.equal((await sessionsOf(merchant)).length, 2);

    const revoked = await call(
      a,
      'POST',
      `/api/organization/api-keys/${await keyId(merchant, apiKey)}/revoke/`,
      {
        token: merchant.token,
      },
    );
    assert.equal(revoked.status, 200, revoked.text);
    const refused = await createOnB(apiKey);
    assert.equal(refused.response.status, 401, refused.response.text);
    assert.deepEqual(refused.response.body, { detail: 'Invalid API key.' });
    assert.equal((await sessionsOf(merchant)).length, 2, 'nothing was written for the revoked key');
    // A revoked key gets its 401 even for a body that would be refused, or one refused by the handler.
    const badBody = await createOnB(apiKey, { currency: 'GBP' });
    assert.equal(badBody.response.status, 401, badBody.response.text);
  });

  test('checkout: terms changed on A (price mode, limits, the organization suspended) are applied by B at once', async () => {
    const merchant = await createTestMerchant(a, 'Terms Shop');
    const apiKey = await createTestKey(a, merchant);
    for (let n = 0; n < 2; n++) assert.equal((await createOnB(apiKey)).response.status, 201);
    assert.ok((await sessionsOf(merchant)).every((row) => row.price_mode === 'TTC'));

    const patched = await call(a, 'PATCH', '/api/organization/', {
      token: merchant.token,
      body: { price_mode: 'HT' },
    });
    assert.equal(patched.status, 200, patched.text);
    const after = await createOnB(apiKey);
    assert.equal(after.response.status, 201, after.response.text);
    const made = (await sessionsOf(merchant)).find(
      (row) => row.public_id === after.response.body.checkout_id,
    );
    assert.equal(made?.price_mode, 'HT', 'the session was made on the new terms, not the cached ones');
    assert.equal((await createOnB(apiKey)).statements, 1, 'the new terms are cached in turn');

    // A cached key whose request the handler refuses: the same 400 as on a lookup.
    const tooSmall = await createOnB(apiKey, {
      products: [{ name: 'Pin', unit_price: '0.01', quantity: 1 }],
    });
    assert.equal(tooSmall.response.status, 400, tooSmall.response.text);
    assert.match(
      String(tooSmall.response.body.detail),
      /^products: the total 0\.01 USD is below the minimum/,
    );

    await a.ctx.db
      .updateTable('organizations')
      .set({ status: 'suspended' })
      .where('id', '=', merchant.organizationId)
      .execute();
    const count = (await sessionsOf(merchant)).length;
    const suspended = await createOnB(apiKey);
    assert.equal(suspended.response.status, 403, suspended.response.text);
    assert.deepEqual(suspended.response.body, { detail: 'This organization is not active.' });
    assert.equal((await sessionsOf(merchant)).length, count, 'nothing was written');
  });

  test('checkout: an Idempotency-Key request looks the key up and replays as before', async () => {
    const merchant = await createTestMerchant(a, 'Replay Shop');
    const apiKey = await createTestKey(a, merchant);
    for (let n = 0; n < 2; n++) assert.equal((await createOnB(apiKey)).response.status, 201);
    const headers = { 'idempotency-key': 'order-42' };
    const first = await createOnB(apiKey, {}, headers);
    assert.equal(first.response.status, 201, first.response.text);
    assert.ok(first.statements > 1, 'the claim and the lookup are statements of their own');
    const replay = await createOnB(apiKey, {}, headers);
    assert.equal(replay.response.status, 201, replay.response.text);
    assert.equal(replay.response.body.checkout_id, first.response.body.checkout_id);
  });

  test('the cache keeps every check: the base path, the scope', async () => {
    const merchant = await createTestMerchant(a, 'Checks Shop');
    const apiKey = await createTestKey(a, merchant);
    const missing = `TX${'1'.repeat(16)}`;
    for (let n = 0; n < 2; n++) {
      const { response } = await getOnB(apiKey, missing);
      assert.equal(response.status, 404, response.text);
    }
    const sandboxPath = await call(b, 'GET', `/sandbox/api/transactions/${missing}/`, { apiKey });
    assert.equal(sandboxPath.status, 401, sandboxPath.text);
    assert.deepEqual(sandboxPath.body, {
      detail: 'This is a production API key; use it on the production base path /api/.',
    });
    const other = await createTestMerchant(a, 'Scope Shop');
    const createOnly = await createTestKey(a, other, { scopes: 'checkout:create' });
    for (let n = 0; n < 2; n++) {
      const scoped = await call(b, 'GET', `/api/transactions/${missing}/`, { apiKey: createOnly });
      assert.equal(scoped.status, 403, scoped.text);
    }
  });
});
