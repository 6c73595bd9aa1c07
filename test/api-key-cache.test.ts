// The API-key cache of GET /transactions/{id}/ (src/modules/api-keys/cache.ts) keeps revocation
// immediate across processes. Process A is the test's own service; process B is a `kassa serve` child on
// the same database. B serves a key it knows from its cache (one statement per request, counted by its
// /metrics), and the first request to B after A revoked or rotated the key is refused.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Child, startNode, stop, waitFor } from '../bench/processes.ts';
import { createCheckout, pay } from './helpers/checkout.ts';
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
