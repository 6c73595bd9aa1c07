// Two-factor end to end: setup and enable, the two-step login with a TOTP code or a recovery code, replay
// of a code within its step refused, recovery codes single use and stored hashed, disable, and the
// owner's "require two-factor for every member". The service's clock is the test's, moved by whole steps.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sha256Hex } from '../src/lib/ids.ts';
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

describe(`two-factor (${DB_KIND})`, () => {
  let server: TestServer;
  let now = Date.now();
  const step = () => {
    now += 30_000;
  };

  before(async () => {
    server = await startTestServer({ worker: false, clock: () => new Date(now) });
  });
  after(() => server.close());

  const login = (email: string, password: string) =>
    call<Record<string, unknown>>(server, 'POST', '/api/auth/login/', { body: { email, password } });
  const secondStep = (challenge: unknown, code: string) =>
    call<Record<string, unknown>>(server, 'POST', '/api/auth/login/2fa/', { body: { challenge, code } });

  async function withTwoFactor(
    name: string,
  ): Promise<Merchant & { secret: string; recoveryCodes: string[] }> {
    const owner = await createTestMerchant(server, name);
    const { secret, recoveryCodes } = await enableTwoFactor(server, owner.token);
    step();
    return { ...owner, secret, recoveryCodes };
  }

  test('setup gives a base32 secret and an otpauth URL; enable with a code returns 10 recovery codes; the secret is stored encrypted and the codes hashed', async () => {
    const owner = await createTestMerchant(server, 'Setup Shop');
    const setup = await call<{ secret: string; otpauth_url: string }>(
      server,
      'POST',
      '/api/auth/2fa/setup/',
      {
        token: owner.token,
      },
    );
    assert.equal(setup.status, 200, setup.text);
    assert.match(setup.body.secret, /^[A-Z2-7]{32}$/);
    assert.match(setup.body.otpauth_url, /^otpauth:\/\/totp\/.*secret=/);
    const wrong = await call(server, 'POST', '/api/auth/2fa/enable/', {
      token: owner.token,
      body: { code: '000000' },
    });
    assert.equal(wrong.status, 400);
    const enabled = await call<{ recovery_codes: string[] }>(server, 'POST', '/api/auth/2fa/enable/', {
      token: owner.token,
      body: { code: totpCode(setup.body.secret, new Date(now)) },
    });
    assert.equal(enabled.status, 200, enabled.text);
    assert.equal(enabled.body.recovery_codes.length, 10);
    assert.equal(new Set(enabled.body.recovery_codes).size, 10);
    const user = await server.ctx.db
      .selectFrom('users')
      .select(['id', 'totp_secret', 'totp_enabled_at'])
      .where('email', '=', owner.email)
      .executeTakeFirstOrThrow();
    assert.ok(user.totp_enabled_at);
    assert.ok(
      user.totp_secret && !user.totp_secret.includes(setup.body.secret),
      'the secret is not stored in clear',
    );
    const stored = await server.ctx.db
      .selectFrom('recovery_codes')
      .select('code_hash')
      .where('user_id', '=', user.id)
      .execute();
    assert.equal(stored.length, 10);
    const plain = new Set(enabled.body.recovery_codes);
    for (const row of stored) assert.ok(!plain.has(row.code_hash), 'a recovery code stored in clear');
    assert.ok(
      stored.some((row) => row.code_hash === sha256Hex(enabled.body.recovery_codes[0].replace('-', ''))),
    );
    const me = await call(server, 'GET', '/api/auth/me/', { token: owner.token });
    assert.equal(me.body.two_factor_enabled, true);
  });

  test('a user with two-factor logs in in two steps: the password gives a challenge, the code gives the session', async () => {
    const owner = await withTwoFactor('Two Step Shop');
    const first = await login(owner.email, owner.password);
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(Object.keys(first.body).sort(), ['challenge', 'expires_at', 'two_factor_required']);
    assert.equal(first.body.two_factor_required, true);
    assert.equal(first.headers.get('set-cookie'), null, 'no session before the second step');
    const wrong = await secondStep(first.body.challenge, '000000');
    assert.equal(wrong.status, 401);
    assert.deepEqual(wrong.body, { detail: 'Invalid two-factor code.' });
    const second = await secondStep(first.body.challenge, totpCode(owner.secret, new Date(now)));
    assert.equal(second.status, 200, second.text);
    assert.equal(typeof second.body.token, 'string');
    assert.equal(second.body.two_factor_enabled, true);
    const me = await call(server, 'GET', '/api/auth/me/', { token: second.body.token as string });
    assert.equal(me.status, 200);
    // The challenge is spent.
    step();
    const again = await secondStep(first.body.challenge, totpCode(owner.secret, new Date(now)));
    assert.equal(again.status, 401);
  });

  test('a code is accepted once: the same code again within its step is refused (replay), the next step works', async () => {
    const owner = await withTwoFactor('Replay Shop');
    const code = totpCode(owner.secret, new Date(now));
    const a = await login(owner.email, owner.password);
    assert.equal((await secondStep(a.body.challenge, code)).status, 200);
    const b = await login(owner.email, owner.password);
    const replay = await secondStep(b.body.challenge, code);
    assert.equal(replay.status, 401, 'the same code within its step');
    // Nor an older code of the window (the step before), once a later step was used.
    const older = await secondStep(b.body.challenge, totpCode(owner.secret, new Date(now - 30_000)));
    assert.equal(older.status, 401);
    step();
    const next = await secondStep(b.body.challenge, totpCode(owner.secret, new Date(now)));
    assert.equal(next.status, 200, next.text);
  });

  test('parallel second steps with the same code: exactly one gets a session', async () => {
    const owner = await withTwoFactor('Race Shop');
    const code = totpCode(owner.secret, new Date(now));
    const challenges = await Promise.all(Array.from({ length: 4 }, () => login(owner.email, owner.password)));
    const answers = await Promise.all(challenges.map((c) => secondStep(c.body.challenge, code)));
    assert.deepEqual(answers.map((a) => a.status).sort(), [200, 401, 401, 401]);
  });

  test('a recovery code logs in once; used again it is refused', async () => {
    const owner = await withTwoFactor('Recovery Shop');
    const [code] = owner.recoveryCodes;
    const a = await login(owner.email, owner.password);
    const used = await secondStep(a.body.challenge, code.toUpperCase().replace('-', ' '));
    assert.equal(used.status, 200, 'case and separators do not matter');
    const b = await login(owner.email, owner.password);
    assert.equal((await secondStep(b.body.challenge, code)).status, 401);
    assert.equal((await secondStep(b.body.challenge, owner.recoveryCodes[1])).status, 200);
  });

  test('disabling needs a valid code; afterwards the password alone logs in', async () => {
    const owner = await withTwoFactor('Disable Shop');
    const wrong = await call(server, 'POST', '/api/auth/2fa/disable/', {
      token: owner.token,
      body: { code: '123456' },
    });
    assert.equal(wrong.status, 400);
    const off = await call(server, 'POST', '/api/auth/2fa/disable/', {
      token: owner.token,
      body: { code: totpCode(owner.secret, new Date(now)) },
    });
    assert.equal(off.status, 204, off.text);
    const plain = await login(owner.email, owner.password);
    assert.equal(typeof plain.body.token, 'string');
    assert.equal(plain.body.two_factor_enabled, false);
  });

  test('an owner requires two-factor for every member: a member without it can only reach their own account until they turn it on', async () => {
    const owner = await createTestMerchant(server, 'Strict Shop');
    const refused = await call(server, 'PUT', '/api/organization/security/', {
      token: owner.token,
      body: { require_two_factor: true },
    });
    assert.equal(refused.status, 400, 'the owner turns it on for themselves first');
    await enableTwoFactor(server, owner.token);
    step();
    const member = await addMember(server, owner, 'viewer');
    const required = await call(server, 'PUT', '/api/organization/security/', {
      token: owner.token,
      body: { require_two_factor: true },
    });
    assert.equal(required.status, 200, required.text);
    assert.deepEqual(required.body, { require_two_factor: true });

    const me = await call(server, 'GET', '/api/auth/me/', { token: member.token });
    assert.equal(me.body.two_factor_setup_required, true);
    const blocked = await call(server, 'GET', '/api/organization/', { token: member.token });
    assert.equal(blocked.status, 403);
    assert.equal(blocked.body.two_factor_setup_required, true);
    const { secret } = await enableTwoFactor(server, member.token);
    assert.equal((await call(server, 'GET', '/api/organization/', { token: member.token })).status, 200);
    // And it cannot be turned off while required.
    step();
    const off = await call(server, 'POST', '/api/auth/2fa/disable/', {
      token: member.token,
      body: { code: totpCode(secret, new Date(now)) },
    });
    assert.equal(off.status, 400);
    assert.match(String(off.body.detail), /requires two-factor/);
  });
});
