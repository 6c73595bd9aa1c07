// A client generated from the OpenAPI document works: openapi-typescript's types from the running
// server equal the checked-in sdk-samples/openapi-fetch/schema.d.ts (so the sample cannot drift from the
// API; `npm run openapi:types` refreshes it), the sample client compiles against them under --strict
// (it is in tsconfig.json's include, so `npm run typecheck` checks it), and it runs against the server.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import {
  createCheckout,
  getTransaction,
  kassaClient,
  listTransactions,
} from '../sdk-samples/openapi-fetch/client.ts';
import { generateTypes } from '../sdk-samples/openapi-fetch/generate.ts';
import { pay } from './helpers/checkout.ts';
import {
  createTestKey,
  createTestMerchant,
  DB_KIND,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';

describe(`the generated openapi-fetch client (${DB_KIND})`, () => {
  let server: TestServer;

  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  test('the checked-in types are what openapi-typescript generates from the document now', async () => {
    const document = (await (await fetch(`${server.url}/api/openapi.json`)).json()) as Record<
      string,
      unknown
    >;
    const checkedIn = readFileSync(
      new URL('../sdk-samples/openapi-fetch/schema.d.ts', import.meta.url),
      'utf8',
    );
    assert.ok(
      (await generateTypes(document)) === checkedIn,
      'sdk-samples/openapi-fetch/schema.d.ts is stale: run npm run openapi:types',
    );
  });

  test('creates a sandbox checkout, reads its payment once paid, and finds it in the list', async () => {
    const merchant = await createTestMerchant(server, 'Generated Client Shop');
    const client = kassaClient(
      `${server.url}/sandbox`,
      await createTestKey(server, merchant, { environment: 'sandbox' }),
    );
    const created = await createCheckout(client, 'order-42');
    assert.match(created.checkout_url, /^http/);
    // The customer pays on the hosted page.
    const paid = await pay(server, created.token);
    assert.equal(paid.status, 200, paid.text);
    const id = String(paid.body.transaction_id);

    const payment = await getTransaction(client, id);
    assert.equal(payment.id, id);
    assert.equal(payment.status, 'paid');
    assert.equal(payment.client_reference_id, 'order-42');
    const listed = await listTransactions(client);
    assert.deepEqual(
      listed.map((item) => item.id),
      [id],
    );
  });

  test('an error answer comes back typed as {detail}', async () => {
    const client = kassaClient(`${server.url}/sandbox`, 'not-a-key');
    await assert.rejects(getTransaction(client, 'TXnothing'), /transaction TXnothing: .+/);
  });
});
