import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ValidationError } from '../src/http/errors.ts';
import { createMerchant } from '../src/modules/organizations/service.ts';
import { addMember } from './helpers/accounts.ts';
import {
  call,
  createTestMerchant,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import { createPaidPayment } from './helpers/wallet-fixtures.ts';

type Organization = Record<string, unknown>;

const ORGANIZATION_FIELDS = [
  'contact_email',
  'created_at',
  'fee_percent',
  'id',
  'max_active_api_keys',
  'max_payment',
  'min_payment',
  'name',
  'price_mode',
  'redirect_origins',
  'rolling_reserve_days',
  'rolling_reserve_percent',
  'slug',
  'status',
  'tax_rate_percent',
  'telegram',
  'test_mode_default',
  'time_zone',
  'updated_at',
  'website',
].sort();

const READ_ONLY: [string, unknown][] = [
  ['id', 5],
  ['slug', 'other'],
  ['fee_percent', '0.00'],
  ['fees', 0],
  ['tax_rate_percent', '20.00'],
  ['min_payment', '0.01'],
  ['max_payment', '999999.00'],
  ['max_active_api_keys', 5],
  ['status', 'suspended'],
  ['rolling_reserve_days', 0],
  ['rolling_reserve_percent', '0.00'],
  ['rolling_reserve_release', true],
  ['test_mode_default', true],
  ['created_at', '2020-01-01T00:00:00.000Z'],
  ['updated_at', '2020-01-01T00:00:00.000Z'],
];

function detail(body: unknown): string {
  return (body as { detail: string }).detail;
}

describe('the organization profile', () => {
  let server: TestServer;
  let merchant: Merchant;
  before(async () => {
    server = await startTestServer();
    merchant = await createTestMerchant(server, 'Profile Shop');
  });
  after(() => server.close());

  const get = () => call<Organization>(server, 'GET', '/api/organization/', { token: merchant.token });
  const patch = (body: unknown) =>
    call<Organization>(server, 'PATCH', '/api/organization/', { token: merchant.token, body });

  test('GET returns the profile with the operator-set defaults', async () => {
    const response = await get();
    assert.equal(response.status, 200);
    assert.deepEqual(Object.keys(response.body).sort(), ORGANIZATION_FIELDS);
    assert.equal(response.body.id, merchant.organizationId);
    assert.equal(response.body.slug, merchant.slug);
    assert.equal(response.body.name, 'Profile Shop');
    assert.equal(response.body.contact_email, merchant.email);
    assert.equal(response.body.website, '');
    assert.equal(response.body.telegram, '');
    assert.equal(response.body.price_mode, 'TTC');
    assert.equal(response.body.fee_percent, '2.90');
    assert.equal(response.body.tax_rate_percent, '0.00');
    assert.equal(response.body.rolling_reserve_percent, '10.00');
    assert.equal(response.body.rolling_reserve_days, 90);
    assert.equal(response.body.min_payment, '0.50');
    assert.equal(response.body.max_payment, '100000.00');
    assert.equal(response.body.max_active_api_keys, 1);
    assert.equal(response.body.status, 'active');
    assert.ok(Date.parse(response.body.created_at as string) > 0);
  });

  test('PATCH changes the editable fields, trims them, and the change persists', async () => {
    const before = await get();
    const changes = {
      name: '  Renamed Shop ',
      website: 'https://shop.example.com/about',
      contact_email: 'billing@shop.example.com',
      telegram: '@renamed',
      price_mode: 'HT',
    };
    const response = await patch(changes);
    assert.equal(response.status, 200, response.text);
    assert.equal(response.body.name, 'Renamed Shop');
    assert.equal(response.body.website, changes.website);
    assert.equal(response.body.contact_email, changes.contact_email);
    assert.equal(response.body.telegram, '@renamed');
    assert.equal(response.body.price_mode, 'HT');
    assert.ok((response.body.updated_at as string) >= (before.body.updated_at as string));
    assert.deepEqual((await get()).body, response.body);
    assert.equal((await patch({ price_mode: 'TTC' })).body.price_mode, 'TTC');
  });

  test('PATCH with one field leaves the others as they were', async () => {
    const before = await get();
    const response = await patch({ telegram: '@only' });
    assert.equal(response.status, 200);
    const { telegram, updated_at: _u, ...rest } = response.body;
    const { telegram: _t, updated_at: _v, ...restBefore } = before.body;
    assert.equal(telegram, '@only');
    assert.deepEqual(rest, restBefore);
  });

  test('website, contact_email and telegram may be cleared with an empty string; name may not', async () => {
    const cleared = await patch({ website: '', contact_email: '', telegram: '' });
    assert.equal(cleared.status, 200);
    assert.equal(cleared.body.website, '');
    assert.equal(cleared.body.contact_email, '');
    assert.equal(cleared.body.telegram, '');
    const blank = await patch({ name: '   ' });
    assert.equal(blank.status, 400);
    assert.match(detail(blank.body), /^name: /);
  });

  test('an empty PATCH changes nothing and returns the profile', async () => {
    const before = await get();
    const response = await patch({});
    assert.equal(response.status, 200);
    assert.deepEqual(response.body, before.body);
  });

  for (const [field, value] of READ_ONLY) {
    test(`PATCH of the read-only field ${field} is a 400 naming it`, async () => {
      const response = await patch({ [field]: value });
      assert.equal(response.status, 400);
      assert.match(detail(response.body), new RegExp(`^${field}: `));
      assert.match(detail(response.body), /read-only/);
    });
  }

  test('a PATCH mixing editable and read-only fields changes nothing', async () => {
    const before = await get();
    const response = await patch({ name: 'Sneaky', fee_percent: '0.00' });
    assert.equal(response.status, 400);
    assert.match(detail(response.body), /^fee_percent: /);
    assert.deepEqual((await get()).body, before.body);
  });

  test('an unknown field is a 400 naming it', async () => {
    const response = await patch({ colour: 'blue' });
    assert.equal(response.status, 400);
    assert.deepEqual(response.body, { detail: 'colour: unknown field.' });
  });

  test('a bad email, URL, price mode or type is a 400 naming the field', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ contact_email: 'not-an-email' }, 'contact_email'],
      [{ contact_email: 'a@b' }, 'contact_email'],
      [{ website: 'shop.example.com' }, 'website'],
      [{ website: 'ftp://shop.example.com' }, 'website'],
      [{ website: 'javascript:alert(1)' }, 'website'],
      [{ website: 'http://' }, 'website'],
      [{ website: 'https://exa mple.com' }, 'website'],
      [{ price_mode: 'GROSS' }, 'price_mode'],
      [{ price_mode: 'ht' }, 'price_mode'],
      [{ name: 42 }, 'name'],
      [{ telegram: null }, 'telegram'],
      [{ name: 'x'.repeat(201) }, 'name'],
    ];
    for (const [body, field] of cases) {
      const response = await patch(body);
      assert.equal(response.status, 400, JSON.stringify(body));
      assert.match(detail(response.body), new RegExp(`^${field}: `), JSON.stringify(body));
    }
  });

  test('a body that is not a JSON object is a 400', async () => {
    for (const body of ['[1, 2]', '"name"', 'null', '{"name":']) {
      const response = await patch(body);
      assert.equal(response.status, 400, body);
      assert.match(detail(response.body), /^body: /);
    }
    const empty = await call(server, 'PATCH', '/api/organization/', { token: merchant.token });
    assert.equal(empty.status, 400);
  });

  test('the profile needs a dashboard session', async () => {
    assert.equal((await call(server, 'GET', '/api/organization/')).status, 401);
    const response = await call(server, 'PATCH', '/api/organization/', { body: { name: 'Anonymous' } });
    assert.equal(response.status, 401);
    assert.equal(typeof detail(response.body), 'string');
  });

  test('the dashboard snapshot has the organization, the wallet summary, the stats and recent activity', async () => {
    const response = await call<Record<string, unknown>>(server, 'GET', '/api/organization/dashboard/', {
      token: merchant.token,
    });
    assert.equal(response.status, 200);
    for (const part of ['organization', 'wallet', 'stats', 'recent_activity']) {
      assert.ok(part in response.body, `missing ${part}`);
    }
    assert.deepEqual(response.body.organization, (await get()).body);
    const wallet = response.body.wallet as Record<string, unknown>;
    for (const bucket of ['balance', 'reserve', 'held', 'available']) {
      assert.equal(wallet[bucket], '0.00', bucket);
    }
    const stats = response.body.stats as Record<string, unknown>;
    assert.equal(stats.user_count, 1);
    assert.equal(stats.transaction_count, 0);
    assert.deepEqual(response.body.recent_activity, []);
    assert.equal((await call(server, 'GET', '/api/organization/dashboard/')).status, 401);
  });

  test('the snapshot leaves the wallet and its activity out (null) for a role that may not read the wallet', async () => {
    const owner = await createTestMerchant(server, 'Wallet Roles');
    await createPaidPayment(server.ctx, { organizationId: owner.organizationId, gross: 10_000n });
    const members = new Map<string, string>([['owner', owner.token]]);
    for (const role of ['admin', 'developer', 'support', 'viewer'])
      members.set(role, (await addMember(server, owner, role)).token);
    for (const [role, token] of members) {
      const snapshot = await call<Record<string, unknown>>(server, 'GET', '/api/organization/dashboard/', {
        token,
      });
      assert.equal(snapshot.status, 200, `${role}: ${snapshot.text}`);
      const wallet = await call(server, 'GET', '/api/wallet/', { token });
      const stats = snapshot.body.stats as Record<string, unknown>;
      assert.equal(stats.transaction_count, 1, role);
      if (role === 'developer') {
        assert.equal(wallet.status, 403, 'GET /api/wallet/ refuses the developer');
        assert.equal(snapshot.body.wallet, null, role);
        assert.equal(snapshot.body.recent_activity, null, role);
      } else {
        assert.equal(wallet.status, 200, role);
        assert.equal((snapshot.body.wallet as Record<string, unknown>).balance, wallet.body.balance, role);
        assert.ok((snapshot.body.recent_activity as unknown[]).length > 0, role);
      }
    }
  });

  test('user_count counts the current members: not removed ones, not pending invitations', async () => {
    const owner = await createTestMerchant(server, 'Headcount');
    const userCount = async () => {
      const snapshot = await call<{ stats: { user_count: number } }>(
        server,
        'GET',
        '/api/organization/dashboard/',
        { token: owner.token },
      );
      assert.equal(snapshot.status, 200, snapshot.text);
      return snapshot.body.stats.user_count;
    };
    const support = await addMember(server, owner, 'support');
    await addMember(server, owner, 'viewer');
    const invited = await call(server, 'POST', '/api/organization/members/', {
      token: owner.token,
      body: { email: 'pending@headcount.test', role: 'viewer' },
    });
    assert.equal(invited.status, 201, invited.text);
    assert.equal(await userCount(), 3);
    const removed = await call(server, 'DELETE', `/api/organization/members/${support.id}/`, {
      token: owner.token,
    });
    assert.equal(removed.status, 204, removed.text);
    assert.equal(await userCount(), 2);
  });
});

describe('creating merchants concurrently', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ worker: false });
  });
  after(() => server.close());

  test('with one email: exactly one is created, the others get the email message (never a unique-index error)', async () => {
    for (let round = 0; round < 5; round++) {
      const email = `race-${round}@acme.test`;
      const results = await Promise.allSettled(
        Array.from({ length: 6 }, () =>
          createMerchant(server.ctx, { organization: 'Race', email, password: 'password-race' }),
        ),
      );
      const created = results.filter((result) => result.status === 'fulfilled');
      assert.equal(created.length, 1);
      for (const result of results) {
        if (result.status === 'fulfilled') continue;
        assert.ok(result.reason instanceof ValidationError, String(result.reason));
        assert.equal(result.reason.message, 'email: a user with this email already exists.');
      }
      const users = await server.ctx.db.selectFrom('users').select('id').where('email', '=', email).execute();
      assert.equal(users.length, 1);
    }
  });
});
