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

  /** A six-digit code the user's authenticator does not show now (nor a step either side). */
  function wrongCode(secret: string): string {
    const valid = new Set([-1, 0, 1].map((k) => totpCode(secret, new Date(now + k * 30_000))));
    for (let n = 100_000; ; n++) if (!valid.has(String(n))) return String(n);
  }

  const CHALLENGE_SPENT = 'Invalid two-factor code. After 5 wrong codes this login is spent: log in again.';
  const CHALLENGE_INVALID = 'This login challenge is invalid or has expired. Log in again.';

  async function failedCodes(email: string): Promise<number> {
    const rows = await server.ctx.db
      .selectFrom('audit_log')
      .select('details')
      .where('action', '=', 'login.failed')
      .where('actor_email', '=', email)
      .execute();
    return rows.filter((row) => JSON.parse(row.details).reason === 'two_factor_code').length;
  }

  test('a login challenge takes five wrong codes, then it is spent: even the right code needs the password again', async () => {
    const owner = await withTwoFactor('Guess Shop');
    const first = await login(owner.email, owner.password);
    for (let i = 1; i <= 4; i++) {
      const wrong = await secondStep(first.body.challenge, wrongCode(owner.secret));
      assert.equal(wrong.status, 401);
      assert.deepEqual(wrong.body, { detail: 'Invalid two-factor code.' }, `wrong code ${i}`);
    }
    const fifth = await secondStep(first.body.challenge, wrongCode(owner.secret));
    assert.equal(fifth.status, 401);
    assert.deepEqual(fifth.body, { detail: CHALLENGE_SPENT });
    const right = await secondStep(first.body.challenge, totpCode(owner.secret, new Date(now)));
    assert.equal(right.status, 401);
    assert.deepEqual(right.body, { detail: CHALLENGE_INVALID });
    const row = await server.ctx.db
      .selectFrom('login_challenges')
      .select(['attempts', 'used_at'])
      .where('token_hash', '=', sha256Hex(String(first.body.challenge)))
      .executeTakeFirstOrThrow();
    assert.deepEqual(
      { attempts: Number(row.attempts), used_at: row.used_at },
      { attempts: 5, used_at: null },
    );
    // The code was not spent by the refused try: a new login takes it.
    const again = await login(owner.email, owner.password);
    const session = await secondStep(again.body.challenge, totpCode(owner.secret, new Date(now)));
    assert.equal(session.status, 200, session.text);
  });

  test("a challenge's tries are counted in the database: parallel guesses through two processes get five evaluated", async () => {
    const owner = await withTwoFactor('Parallel Guess Shop');
    const twin = await startTestServer({ shareWith: server, worker: false, clock: () => new Date(now) });
    try {
      const { challenge } = (await login(owner.email, owner.password)).body;
      const guesses = await Promise.all(
        Array.from({ length: 16 }, (_, i) =>
          call(i % 2 ? twin : server, 'POST', '/api/auth/login/2fa/', {
            body: { challenge, code: wrongCode(owner.secret) },
          }),
        ),
      );
      for (const guess of guesses) assert.equal(guess.status, 401, guess.text);
      const details = guesses.map((guess) => guess.body.detail);
      assert.equal(details.filter((d) => d === 'Invalid two-factor code.').length, 4, details.join('\n'));
      assert.equal(details.filter((d) => d === CHALLENGE_SPENT).length, 1, details.join('\n'));
      assert.equal(await failedCodes(owner.email), 5, 'five codes evaluated, each audited');
      const right = await call(twin, 'POST', '/api/auth/login/2fa/', {
        body: { challenge, code: totpCode(owner.secret, new Date(now)) },
      });
      assert.deepEqual(right.body, { detail: CHALLENGE_INVALID });
    } finally {
      await twin.close();
    }
  });

  test('recovery codes take the same path: wrong ones spend the challenge, and a right one after that is refused without being used up', async () => {
    const owner = await withTwoFactor('Recovery Guess Shop');
    const { challenge } = (await login(owner.email, owner.password)).body;
    for (let i = 0; i < 5; i++) {
      const wrong = await secondStep(challenge, `wrong-${i}abcd`);
      assert.equal(wrong.status, 401);
    }
    const [code] = owner.recoveryCodes;
    const refused = await secondStep(challenge, code);
    assert.deepEqual(refused.body, { detail: CHALLENGE_INVALID });
    const again = await login(owner.email, owner.password);
    const used = await secondStep(again.body.challenge, code);
    assert.equal(used.status, 200, 'the recovery code was still unused');
  });

  test('wrong codes are limited per account, whatever the process, the address or the challenge: past ten in 15 minutes the right one is a 429 too', async () => {
    const owner = await withTwoFactor('Account Limit Shop');
    const twin = await startTestServer({ shareWith: server, worker: false, clock: () => new Date(now) });
    try {
      // Five wrong codes on a challenge from each process: each process's own (account, address) count
      // stays under 10, and each challenge is spent.
      for (const proc of [server, twin]) {
        const { body } = await call(proc, 'POST', '/api/auth/login/', {
          body: { email: owner.email, password: owner.password },
        });
        for (let i = 0; i < 5; i++) {
          const wrong = await call(proc, 'POST', '/api/auth/login/2fa/', {
            body: { challenge: body.challenge, code: wrongCode(owner.secret) },
          });
          assert.equal(wrong.status, 401, wrong.text);
        }
      }
      const third = await login(owner.email, owner.password);
      assert.equal(third.status, 200, 'the password step still answers with a challenge');
      step();
      const limited = await secondStep(third.body.challenge, totpCode(owner.secret, new Date(now)));
      assert.equal(limited.status, 429, limited.text);
      assert.deepEqual(limited.body, { detail: 'Too many failed login attempts. Try again later.' });
      assert.ok(Number(limited.headers.get('retry-after')) > 0);
      assert.equal(limited.headers.get('ratelimit-remaining'), '0');
      // Identity confirmation with a code counts against the same account.
      const confirm = await call(twin, 'POST', '/api/auth/confirm/', {
        token: owner.token,
        body: { code: totpCode(owner.secret, new Date(now)) },
      });
      assert.equal(confirm.status, 429, confirm.text);
      // The refused try was not counted against the challenge; the window ends 15 minutes after it began.
      now += 15 * 60_000;
      const later = await login(owner.email, owner.password);
      const session = await secondStep(later.body.challenge, totpCode(owner.secret, new Date(now)));
      assert.equal(session.status, 200, session.text);
    } finally {
      await twin.close();
    }
  });

  test('a right code does not count against the account: ten logins with a code in a row all succeed', async () => {
    const owner = await withTwoFactor('Right Code Shop');
    for (let i = 0; i < 11; i++) {
      step();
      const { body } = await login(owner.email, owner.password);
      const session = await secondStep(body.challenge, totpCode(owner.secret, new Date(now)));
      assert.equal(session.status, 200, `login ${i + 1}: ${session.text}`);
    }
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
