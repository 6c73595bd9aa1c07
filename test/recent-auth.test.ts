// Recent authentication: a stolen session (valid, but its last login or confirmation is over 10 minutes
// old) cannot create or rotate a key, change the webhook endpoint or its secret, request a payout, change
// members or two-factor; it gets 403 "Confirm your identity to continue." with reauth_required, and
// POST /api/auth/confirm/ with the password (or a second-factor code) makes the session recent again.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { totpCode } from '../src/modules/auth/totp.ts';
import { addMember, enableTwoFactor } from './helpers/accounts.ts';
import {
  call,
  createTestMerchant,
  DB_KIND,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import { createPaidPayment } from './helpers/wallet-fixtures.ts';

const ELEVEN_MINUTES = 11 * 60 * 1000;

describe(`recent authentication (${DB_KIND})`, () => {
  let server: TestServer;
  let now = Date.now();
  let owner: Merchant;
  let memberId: number;

  before(async () => {
    server = await startTestServer({ worker: false, clock: () => new Date(now) });
    owner = await createTestMerchant(server, 'Stolen Session Shop');
    memberId = (await addMember(server, owner, 'viewer')).id;
    await createPaidPayment(server.ctx, { organizationId: owner.organizationId, gross: 10_000n });
    const key = await call(server, 'POST', '/api/organization/api-keys/', {
      token: owner.token,
      body: { name: 'k', allowed_scopes: '' },
    });
    assert.equal(key.status, 201);
    const endpoint = await call(server, 'PUT', '/api/organization/webhook/', {
      token: owner.token,
      body: { endpoint_url: 'https://example.com/hook' },
    });
    assert.equal(endpoint.status, 200, endpoint.text);
  });
  after(() => server.close());

  const sensitive: [string, string, unknown][] = [
    ['POST', '/api/organization/api-keys/', { name: 'another', allowed_scopes: '', environment: 'sandbox' }],
    ['POST', '/api/organization/api-keys/rotate/', {}],
    ['PUT', '/api/organization/webhook/', { endpoint_url: 'https://attacker.example/hook' }],
    ['POST', '/api/organization/webhook/rotate/', undefined],
    ['POST', '/api/payouts/', { amount: '10.00' }],
    ['POST', '/api/organization/members/', { email: 'accomplice@evil.test', role: 'owner' }],
    ['PATCH', '/api/organization/members/:member/', { role: 'admin' }],
    ['DELETE', '/api/organization/members/:member/', undefined],
    ['PUT', '/api/organization/security/', { require_two_factor: false }],
    ['POST', '/api/auth/2fa/enable/', { code: '123456' }],
    ['POST', '/api/auth/2fa/disable/', { code: '123456' }],
  ];

  test('a session whose login is 11 minutes old gets 403 reauth_required on every sensitive action, and nothing changes', async () => {
    now += ELEVEN_MINUTES;
    const keysBefore = await call(server, 'GET', '/api/organization/api-keys/', { token: owner.token });
    for (const [method, path, body] of sensitive) {
      const response = await call(server, method, path.replace(':member', String(memberId)), {
        token: owner.token,
        body,
      });
      assert.equal(response.status, 403, `${method} ${path}: ${response.text}`);
      assert.deepEqual(response.body, {
        detail: 'Confirm your identity to continue.',
        reauth_required: true,
      });
    }
    // Reading and everyday changes still work.
    assert.equal((await call(server, 'GET', '/api/organization/', { token: owner.token })).status, 200);
    const product = await call(server, 'POST', '/api/products/', {
      token: owner.token,
      body: { name: 'Mug', unit_price: '9.00' },
    });
    assert.equal(product.status, 201);
    assert.deepEqual(
      (await call(server, 'GET', '/api/organization/api-keys/', { token: owner.token })).body,
      keysBefore.body,
    );
    const hook = await call(server, 'GET', '/api/organization/webhook/', { token: owner.token });
    assert.equal(hook.body.endpoint_url, 'https://example.com/hook');
    const payouts = await call<{ count: number }>(server, 'GET', '/api/payouts/', { token: owner.token });
    assert.equal(payouts.body.count, 0);
  });

  test('a wrong password does not confirm; the right one does, for 10 minutes', async () => {
    now += ELEVEN_MINUTES;
    const wrong = await call(server, 'POST', '/api/auth/confirm/', {
      token: owner.token,
      body: { password: 'not my password' },
    });
    assert.equal(wrong.status, 400);
    const stillStale = await call(server, 'POST', '/api/organization/webhook/rotate/', {
      token: owner.token,
    });
    assert.equal(stillStale.status, 403);
    const confirmed = await call(server, 'POST', '/api/auth/confirm/', {
      token: owner.token,
      body: { password: owner.password },
    });
    assert.equal(confirmed.status, 200, confirmed.text);
    const rotated = await call(server, 'POST', '/api/organization/webhook/rotate/', { token: owner.token });
    assert.equal(rotated.status, 200, rotated.text);
    now += 9 * 60 * 1000;
    assert.equal(
      (await call(server, 'POST', '/api/organization/webhook/rotate/', { token: owner.token })).status,
      200,
    );
    now += 2 * 60 * 1000;
    assert.equal(
      (await call(server, 'POST', '/api/organization/webhook/rotate/', { token: owner.token })).status,
      403,
    );
  });

  test('a fresh login counts as recent authentication', async () => {
    now += ELEVEN_MINUTES;
    const login = await call<{ token: string }>(server, 'POST', '/api/auth/login/', {
      body: { email: owner.email, password: owner.password },
    });
    const payout = await call(server, 'POST', '/api/payouts/', {
      token: login.body.token,
      body: { amount: '10.00' },
    });
    assert.equal(payout.status, 201, payout.text);
  });

  test('a user with two-factor confirms with a code', async () => {
    const other = await createTestMerchant(server, 'Code Confirm Shop');
    const { secret } = await enableTwoFactor(server, other.token);
    now += ELEVEN_MINUTES;
    const stale = await call(server, 'POST', '/api/organization/api-keys/', {
      token: other.token,
      body: { name: 'k', allowed_scopes: '' },
    });
    assert.equal(stale.status, 403);
    const confirmed = await call(server, 'POST', '/api/auth/confirm/', {
      token: other.token,
      body: { code: totpCode(secret, new Date(now)) },
    });
    assert.equal(confirmed.status, 200, confirmed.text);
    const created = await call(server, 'POST', '/api/organization/api-keys/', {
      token: other.token,
      body: { name: 'k', allowed_scopes: '' },
    });
    assert.equal(created.status, 201, created.text);
  });
});
