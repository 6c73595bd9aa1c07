// Payout destinations: the bank account payouts go to, checked (IBAN mod-97, ABA checksum), stored with
// the full number encrypted and shown masked from then on, separate per environment and organization,
// and recorded on each payout as it was when the payout was requested.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { operatorDestination } from '../src/modules/payouts/destinations.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import { createPaidPayment } from './helpers/wallet-fixtures.ts';

interface Destination {
  id: string;
  type: string;
  account_holder: string;
  country: string;
  bic: string | null;
  routing_number: string | null;
  last4: string;
  label: string;
  environment: string;
  created_at: string;
}

interface Payout {
  id: string;
  destination: { id: string; type: string; account_holder: string; label: string } | null;
}

const IBAN = 'DE89 3704 0044 0532 0130 00';
const US = {
  type: 'us_account',
  account_holder: 'Sunny Shop LLC',
  routing_number: '110000000',
  account_number: '000123456789',
};

describe('payout destinations', () => {
  let server: TestServer;
  let merchant: Merchant;
  let other: Merchant;
  before(async () => {
    server = await startTestServer();
    merchant = await createTestMerchant(server, 'Sunny Shop');
    other = await createTestMerchant(server, 'Other Shop');
    for (const environment of ['production', 'sandbox'] as const)
      await createPaidPayment(server.ctx, {
        organizationId: merchant.organizationId,
        gross: 10_000n,
        environment,
      });
  });
  after(() => server.close());

  const get = (who: Merchant, environment = 'production') =>
    call<{ destination: Destination | null; detail?: string }>(
      server,
      'GET',
      `/api/payouts/destination/?environment=${environment}`,
      { token: who.token },
    );
  const put = (body: unknown, environment = 'production', who = merchant) =>
    call<{ destination: Destination; detail?: string }>(
      server,
      'PUT',
      `/api/payouts/destination/?environment=${environment}`,
      { token: who.token, body },
    );
  const payout = (environment = 'production') =>
    call<Payout>(server, 'POST', `/api/payouts/?environment=${environment}`, {
      token: merchant.token,
      body: { amount: '1.00' },
    });

  test('an IBAN is accepted, then shown only masked: the full number is in no answer and encrypted at rest', async () => {
    assert.deepEqual((await get(merchant)).body, { destination: null });
    const saved = await put({
      type: 'iban',
      account_holder: 'Sunny Shop GmbH',
      iban: IBAN,
      bic: 'cobadeffxxx',
    });
    assert.equal(saved.status, 200, saved.text);
    const destination = saved.body.destination;
    assert.match(destination.id, /^ba_[0-9A-Za-z]{16}$/);
    assert.deepEqual(destination, {
      id: destination.id,
      type: 'iban',
      account_holder: 'Sunny Shop GmbH',
      country: 'DE',
      bic: 'COBADEFFXXX',
      routing_number: null,
      last4: '3000',
      label: 'DE IBAN •••• 3000',
      environment: 'production',
      created_at: destination.created_at,
    });
    const read = await get(merchant);
    assert.deepEqual(read.body.destination, destination);
    for (const text of [saved.text, read.text]) {
      assert.ok(!text.includes('DE89370400440532013000') && !text.includes('0532 0130'), text);
    }
    const row = await server.ctx.db
      .selectFrom('payout_destinations')
      .selectAll()
      .where('public_id', '=', destination.id)
      .executeTakeFirstOrThrow();
    assert.ok(!row.number_sealed.includes('0532013000'), 'the IBAN is not stored in the clear');
    // The operator's tools open it to make the transfer.
    const opened = await operatorDestination(server.ctx, row.id);
    assert.ok(opened && 'iban' in opened);
    assert.equal(opened.iban, IBAN);
  });

  test('a mistyped IBAN or routing number is refused with a detail naming the field and the reason', async () => {
    const cases: [unknown, string][] = [
      [
        { type: 'iban', account_holder: 'A', iban: 'DE89 3704 0044 0532 0130 01' },
        'iban: the check digits do not match the number; look for a typo.',
      ],
      [
        { type: 'iban', account_holder: 'A', iban: 'DE89 3704 0044 0532 0130' },
        'iban: an IBAN from DE has 22 characters; this one has 20.',
      ],
      [{ type: 'iban', account_holder: 'A' }, 'iban: this field is required.'],
      [
        { type: 'iban', account_holder: 'A', iban: IBAN, bic: 'nope' },
        'bic: must be a BIC of 8 or 11 letters and digits, such as DEUTDEFF.',
      ],
      [
        { type: 'iban', account_holder: 'A', iban: IBAN, routing_number: '110000000' },
        'routing_number: not used with an IBAN.',
      ],
      [
        { ...US, routing_number: '110000001' },
        'routing_number: is not a valid ABA routing number; look for a typo.',
      ],
      [{ ...US, account_number: '12' }, 'account_number: must be 4 to 17 digits.'],
      [{ ...US, account_holder: '   ' }, 'account_holder: this field is required.'],
      [{ ...US, iban: IBAN }, 'iban: not used with a US account.'],
      [{ type: 'card', account_holder: 'A' }, 'type: must be one of iban, us_account.'],
    ];
    for (const [body, detail] of cases) {
      const refused = await put(body);
      assert.equal(refused.status, 400, JSON.stringify(body));
      assert.equal(refused.body.detail, detail);
    }
    // Nothing changed.
    assert.equal((await get(merchant)).body.destination?.label, 'DE IBAN •••• 3000');
  });

  test('a payout records the account current when it was requested; a change does not rewrite it', async () => {
    const first = await payout();
    assert.equal(first.status, 201, first.text);
    assert.equal(first.body.destination?.label, 'DE IBAN •••• 3000');
    const changed = await put(US);
    assert.equal(changed.status, 200, changed.text);
    assert.equal(changed.body.destination.label, 'Routing 110000000 · Account •••• 6789');
    assert.equal(changed.body.destination.routing_number, '110000000');
    assert.ok(!changed.text.includes('000123456789'));
    const second = await payout();
    assert.equal(second.body.destination?.label, 'Routing 110000000 · Account •••• 6789');
    const list = await call<{ results: Payout[] }>(server, 'GET', '/api/payouts/', { token: merchant.token });
    const labels = new Map(list.body.results.map((p) => [p.id, p.destination?.label]));
    assert.equal(labels.get(first.body.id), 'DE IBAN •••• 3000');
    assert.equal(labels.get(second.body.id), 'Routing 110000000 · Account •••• 6789');
    const rows = await server.ctx.db
      .selectFrom('payout_destinations')
      .select(['replaced_at'])
      .where('organization_id', '=', merchant.organizationId)
      .where('environment', '=', 'production')
      .execute();
    assert.equal(rows.length, 2);
    assert.equal(rows.filter((row) => row.replaced_at === null).length, 1);
  });

  test('sandbox and production accounts are separate, and another organization sees neither', async () => {
    assert.deepEqual((await get(merchant, 'sandbox')).body, { destination: null });
    const sandboxPayout = await payout('sandbox');
    assert.equal(sandboxPayout.status, 201, sandboxPayout.text);
    assert.equal(sandboxPayout.body.destination, null);
    const sandbox = await put(
      { type: 'iban', account_holder: 'Test', iban: 'GB29 NWBK 6016 1331 9268 19' },
      'sandbox',
    );
    assert.equal(sandbox.body.destination.environment, 'sandbox');
    assert.equal((await get(merchant, 'production')).body.destination?.type, 'us_account');
    assert.deepEqual((await get(other)).body, { destination: null });
    assert.deepEqual((await get(other, 'sandbox')).body, { destination: null });
    const removedElsewhere = await call(server, 'DELETE', '/api/payouts/destination/', {
      token: other.token,
    });
    assert.equal(removedElsewhere.status, 404);
    assert.equal((await get(merchant)).body.destination?.type, 'us_account');
  });

  test('parallel changes leave exactly one current account', async () => {
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, index) =>
        put({ ...US, account_number: `99990000${index}` }, 'production', merchant),
      ),
    );
    for (const answer of answers) assert.equal(answer.status, 200, answer.text);
    const current = await server.ctx.db
      .selectFrom('payout_destinations')
      .select('public_id')
      .where('organization_id', '=', merchant.organizationId)
      .where('environment', '=', 'production')
      .where('replaced_at', 'is', null)
      .execute();
    assert.equal(current.length, 1);
    assert.equal((await get(merchant)).body.destination?.id, current[0].public_id);
  });

  test('removing the account: 204, then none; removing again is a 404 with a detail', async () => {
    const removed = await call(server, 'DELETE', '/api/payouts/destination/?environment=sandbox', {
      token: merchant.token,
    });
    assert.equal(removed.status, 204);
    assert.deepEqual((await get(merchant, 'sandbox')).body, { destination: null });
    const again = await call<{ detail: string }>(
      server,
      'DELETE',
      '/api/payouts/destination/?environment=sandbox',
      {
        token: merchant.token,
      },
    );
    assert.equal(again.status, 404);
    assert.equal(again.body.detail, 'No payout destination is set.');
  });

  test('only a dashboard session may read or change it', async () => {
    const anonymous = await call<{ detail: string }>(server, 'GET', '/api/payouts/destination/');
    assert.equal(anonymous.status, 401);
    assert.ok(anonymous.body.detail);
    const key = await createTestKey(server, merchant);
    const withKey = await call<{ detail: string }>(server, 'PUT', '/api/payouts/destination/', {
      apiKey: key,
      body: US,
    });
    assert.equal(withKey.status, 401);
    assert.equal(withKey.body.detail, 'This endpoint needs a dashboard session; API keys are not accepted.');
  });
});
