// The team (invitations by mail, roles, the last-owner rule, removal) and the member's own account
// (password change, reset by mail, the session list with revoke).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { newToken, randomBase62, sha256Hex } from '../src/lib/ids.ts';
import { insertSession } from '../src/modules/auth/store.ts';
import { LAST_OWNER } from '../src/modules/members/service.ts';
import { addMember, latestMail, mailedToken } from './helpers/accounts.ts';
import {
  call,
  createTestMerchant,
  DB_KIND,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';

const HOUR = 3600 * 1000;

describe(`members and accounts (${DB_KIND})`, () => {
  let server: TestServer;
  let now = Date.now();

  before(async () => {
    server = await startTestServer({ worker: false, clock: () => new Date(now) });
  });
  after(() => server.close());

  const login = (email: string, password: string) =>
    call<{ token: string; role: string }>(server, 'POST', '/api/auth/login/', { body: { email, password } });

  test("one address accepting two organizations' invitations at once joins one; the other is a 400, never a 500", async () => {
    const email = 'both@race.test';
    const tokens: string[] = [];
    for (const name of ['Race One', 'Race Two']) {
      const owner = await createTestMerchant(server, name);
      const invited = await call(server, 'POST', '/api/organization/members/', {
        token: owner.token,
        body: { email, role: 'viewer' },
      });
      assert.equal(invited.status, 201, invited.text);
      tokens.push(mailedToken(server, email, 'accept-invite'));
    }
    // Through two processes on PostgreSQL (each hashes its password on its own queue, so the two
    // transactions overlap); SQLite has one writer.
    const twin =
      DB_KIND === 'postgres' ? await startTestServer({ worker: false, shareWith: server }) : server;
    let answers: Awaited<ReturnType<typeof call>>[];
    try {
      answers = await Promise.all(
        tokens.map((token, i) =>
          call(i === 0 ? server : twin, 'POST', '/api/auth/accept-invite/', {
            body: { token, password: 'a race password' },
          }),
        ),
      );
    } finally {
      if (twin !== server) await twin.close();
    }
    assert.deepEqual(
      answers.map((answer) => answer.status).sort(),
      [200, 400],
      answers.map((a) => a.text).join(' / '),
    );
    const users = await server.ctx.db.selectFrom('users').select('id').where('email', '=', email).execute();
    assert.equal(users.length, 1);
  });

  test('an invitation is mailed, listed while pending, accepted once with a password, and logs the new member in', async () => {
    const owner = await createTestMerchant(server, 'Team Shop');
    const email = 'dev@team.test';
    const invited = await call(server, 'POST', '/api/organization/members/', {
      token: owner.token,
      body: { email, role: 'developer' },
    });
    assert.equal(invited.status, 201, invited.text);
    assert.equal(invited.body.role, 'developer');
    const mail = latestMail(server, email);
    assert.ok(
      mail?.includes('Team Shop') && mail.includes('as developer'),
      'the mail names the organization and role',
    );
    const list = await call<{ members: { email: string }[]; invitations: { email: string }[] }>(
      server,
      'GET',
      '/api/organization/members/',
      { token: owner.token },
    );
    assert.deepEqual(
      list.body.invitations.map((i) => i.email),
      [email],
    );
    const token = mailedToken(server, email, 'accept-invite');
    const short = await call(server, 'POST', '/api/auth/accept-invite/', {
      body: { token, password: 'short' },
    });
    assert.equal(short.status, 400);
    assert.equal(short.body.detail, 'password: must be at least 10 characters.');
    const accepted = await call<Record<string, unknown>>(server, 'POST', '/api/auth/accept-invite/', {
      body: { token, password: 'developer password', name: 'Dev' },
    });
    assert.equal(accepted.status, 200, accepted.text);
    assert.equal(accepted.body.role, 'developer');
    assert.match(accepted.headers.get('set-cookie') ?? '', /^kassa_session=/);
    const again = await call(server, 'POST', '/api/auth/accept-invite/', {
      body: { token, password: 'developer password' },
    });
    assert.equal(again.status, 400, 'an invitation is single use');
    const after = await call<{ members: { email: string; role: string }[]; invitations: unknown[] }>(
      server,
      'GET',
      '/api/organization/members/',
      { token: owner.token },
    );
    assert.deepEqual(
      after.body.members.map((m) => [m.email, m.role]),
      [
        [owner.email, 'owner'],
        [email, 'developer'],
      ],
    );
    assert.deepEqual(after.body.invitations, []);
    assert.equal((await login(email, 'developer password')).status, 200);
  });

  test('an invitation expires after 7 days; an email already a member, or of another organization, cannot be invited', async () => {
    const owner = await createTestMerchant(server, 'Expiry Shop');
    const other = await createTestMerchant(server, 'Other Shop');
    for (const [email, detail] of [
      [owner.email, 'email: is already a member.'],
      [other.email, 'email: this address already has a Kassa account in another organization.'],
    ]) {
      const refused = await call(server, 'POST', '/api/organization/members/', {
        token: owner.token,
        body: { email, role: 'viewer' },
      });
      assert.equal(refused.status, 400);
      assert.equal(refused.body.detail, detail);
    }
    const email = 'late@team.test';
    await call(server, 'POST', '/api/organization/members/', {
      token: owner.token,
      body: { email, role: 'viewer' },
    });
    const token = mailedToken(server, email, 'accept-invite');
    now += 7 * 24 * HOUR + 1000;
    const late = await call(server, 'POST', '/api/auth/accept-invite/', {
      body: { token, password: 'late password 1' },
    });
    assert.equal(late.status, 400);
  });

  test('a role change takes effect on the next request; removing a member ends their sessions and their login', async () => {
    const owner = await createTestMerchant(server, 'Roles Shop');
    const member = await addMember(server, owner, 'viewer');
    const asViewer = await call(server, 'POST', '/api/products/', {
      token: member.token,
      body: { name: 'Cap', unit_price: '5.00' },
    });
    assert.equal(asViewer.status, 403);
    assert.equal(asViewer.body.detail, 'Your role (viewer) does not allow changing products.');
    const promoted = await call(server, 'PATCH', `/api/organization/members/${member.id}/`, {
      token: owner.token,
      body: { role: 'admin' },
    });
    assert.equal(promoted.status, 200, promoted.text);
    assert.equal(promoted.body.role, 'admin');
    const asAdmin = await call(server, 'POST', '/api/products/', {
      token: member.token,
      body: { name: 'Cap', unit_price: '5.00' },
    });
    assert.equal(asAdmin.status, 201);
    const removed = await call(server, 'DELETE', `/api/organization/members/${member.id}/`, {
      token: owner.token,
    });
    assert.equal(removed.status, 204);
    assert.equal((await call(server, 'GET', '/api/auth/me/', { token: member.token })).status, 401);
    assert.equal((await login(member.email, member.password)).status, 401);
  });

  test('the last owner cannot be removed or demoted, even by two owners demoting each other at once', async () => {
    const owner = await createTestMerchant(server, 'Owners Shop');
    const me = await call<{ user: { id: number } }>(server, 'GET', '/api/auth/me/', { token: owner.token });
    const selfId = me.body.user.id;
    for (const [method, body] of [
      ['PATCH', { role: 'admin' }],
      ['DELETE', undefined],
    ] as const) {
      const refused = await call(server, method, `/api/organization/members/${selfId}/`, {
        token: owner.token,
        body,
      });
      assert.equal(refused.status, 400);
      assert.equal(refused.body.detail, LAST_OWNER);
    }
    const second = await addMember(server, owner, 'owner');
    const answers = await Promise.all([
      call(server, 'PATCH', `/api/organization/members/${second.id}/`, {
        token: owner.token,
        body: { role: 'viewer' },
      }),
      call(server, 'PATCH', `/api/organization/members/${selfId}/`, {
        token: second.token,
        body: { role: 'viewer' },
      }),
    ]);
    // One wins; the other is refused by the last-owner rule, or (when it runs second) by its new role.
    const statuses = answers.map((a) => a.status).sort();
    assert.equal(statuses[0], 200, JSON.stringify(statuses));
    assert.ok([400, 403].includes(statuses[1]), JSON.stringify(statuses));
    const owners = await server.ctx.db
      .selectFrom('users')
      .select('id')
      .where('organization_id', '=', owner.organizationId)
      .where('role', '=', 'owner')
      .where('removed_at', 'is', null)
      .execute();
    assert.equal(owners.length, 1);
  });

  test('a pending invitation can be revoked; its link then fails', async () => {
    const owner = await createTestMerchant(server, 'Revoke Shop');
    const invited = await call<{ id: number }>(server, 'POST', '/api/organization/members/', {
      token: owner.token,
      body: { email: 'maybe@team.test', role: 'support' },
    });
    const token = mailedToken(server, 'maybe@team.test', 'accept-invite');
    const revoked = await call(server, 'DELETE', `/api/organization/invitations/${invited.body.id}/`, {
      token: owner.token,
    });
    assert.equal(revoked.status, 204);
    const late = await call(server, 'POST', '/api/auth/accept-invite/', {
      body: { token, password: 'maybe password' },
    });
    assert.equal(late.status, 400);
  });

  test('removing a member revokes the invitations they sent that are still pending, and so does demoting an owner', async () => {
    const owner = await createTestMerchant(server, 'Inviters Shop');
    const invite = (by: { token: string }, email: string) =>
      call<{ id: number }>(server, 'POST', '/api/organization/members/', {
        token: by.token,
        body: { email, role: 'owner' },
      });
    const pending = async () =>
      (
        await call<{ invitations: { email: string }[] }>(server, 'GET', '/api/organization/members/', {
          token: owner.token,
        })
      ).body.invitations.map((i) => i.email);
    const address = (name: string) => `${name}-${randomBase62(6).toLowerCase()}@team.test`;
    const kept = address('kept');
    assert.equal((await invite(owner, kept)).status, 201);

    for (const [change, reason] of [
      ['removed', 'inviter_removed'],
      ['demoted', 'inviter_demoted'],
    ] as const) {
      const leaving = await addMember(server, owner, 'owner');
      // The owner about to go invites a second address of theirs, as owner.
      const comeback = address(`comeback-${change}`);
      const invited = await invite(leaving, comeback);
      assert.equal(invited.status, 201, invited.text);
      const token = mailedToken(server, comeback, 'accept-invite');
      const done =
        change === 'removed'
          ? await call(server, 'DELETE', `/api/organization/members/${leaving.id}/`, { token: owner.token })
          : await call(server, 'PATCH', `/api/organization/members/${leaving.id}/`, {
              token: owner.token,
              body: { role: 'admin' },
            });
      assert.ok([200, 204].includes(done.status), done.text);
      assert.deepEqual(
        await pending(),
        [kept],
        `the ${change} owner's invitation is revoked, not the others`,
      );
      const back = await call(server, 'POST', '/api/auth/accept-invite/', {
        body: { token, password: 'back door password' },
      });
      assert.equal(back.status, 400, back.text);
      const log = await call<{
        results: { actor: { email: string }; target: { id: string }; details: unknown }[];
      }>(server, 'GET', '/api/organization/audit-log/?action=invitation.revoked', { token: owner.token });
      const entry = log.body.results.find((e) => e.target.id === String(invited.body.id));
      assert.ok(entry, 'the revocation is audited');
      assert.equal(entry.actor.email, owner.email);
      assert.deepEqual(entry.details, { email: comeback, reason });
    }
  });

  test('a session a racing login left behind a removal opens nothing once the account joins another organization', async () => {
    const first = await createTestMerchant(server, 'Old Shop');
    const member = await addMember(server, first, 'admin');
    const removed = await call(server, 'DELETE', `/api/organization/members/${member.id}/`, {
      token: first.token,
    });
    assert.equal(removed.status, 204);
    // A login that read the account before the removal committed inserts its session after it.
    const strayAt = (token: string) =>
      insertSession(server.ctx.db, {
        tokenHash: sha256Hex(token),
        userId: member.id,
        organizationId: first.organizationId,
        now: new Date(now).toISOString(),
        expiresAt: new Date(now + 7 * 24 * HOUR).toISOString(),
        ip: null,
        userAgent: null,
      });
    const stray = newToken();
    await strayAt(stray);
    const me = (token: string) => call(server, 'GET', '/api/auth/me/', { token });
    assert.equal((await me(stray)).status, 401, 'the account is removed');

    const second = await createTestMerchant(server, 'New Shop');
    const invited = await call(server, 'POST', '/api/organization/members/', {
      token: second.token,
      body: { email: member.email, role: 'viewer' },
    });
    assert.equal(invited.status, 201, invited.text);
    const joined = await call<{ token: string; organization: { id: number } }>(
      server,
      'POST',
      '/api/auth/accept-invite/',
      { body: { token: mailedToken(server, member.email, 'accept-invite'), password: 'a new password' } },
    );
    assert.equal(joined.status, 200, joined.text);
    assert.equal(joined.body.organization.id, second.organizationId, 'the same account, now in New Shop');
    assert.equal((await me(stray)).status, 401);
    const row = await server.ctx.db
      .selectFrom('sessions')
      .select('revoked_at')
      .where('token_hash', '=', sha256Hex(stray))
      .executeTakeFirstOrThrow();
    assert.ok(row.revoked_at, 'accepting the invitation ended the sessions of the reused account');
    // Even one inserted after that (a login slower still) does not open Old Shop.
    const later = newToken();
    await strayAt(later);
    assert.equal((await me(later)).status, 401);
    const own = await me(joined.body.token);
    assert.equal(own.status, 200);
    assert.equal((own.body.organization as { id: number }).id, second.organizationId);
  });

  test('changing the password needs the current one and ends every other session', async () => {
    const owner = await createTestMerchant(server, 'Password Shop');
    const other = await login(owner.email, owner.password);
    const wrong = await call(server, 'POST', '/api/auth/password/', {
      token: owner.token,
      body: { current_password: 'not it at all', new_password: 'a brand new password' },
    });
    assert.equal(wrong.status, 400);
    assert.equal(wrong.body.detail, 'current_password: is not correct.');
    const changed = await call(server, 'POST', '/api/auth/password/', {
      token: owner.token,
      body: { current_password: owner.password, new_password: 'a brand new password' },
    });
    assert.equal(changed.status, 204, changed.text);
    assert.equal(
      (await call(server, 'GET', '/api/auth/me/', { token: owner.token })).status,
      200,
      'this session stays',
    );
    assert.equal(
      (await call(server, 'GET', '/api/auth/me/', { token: other.body.token })).status,
      401,
      'others end',
    );
    assert.equal((await login(owner.email, owner.password)).status, 401);
    assert.equal((await login(owner.email, 'a brand new password')).status, 200);
  });

  test('a reset is always 202; a known email gets a one-hour single-use link that sets the password and ends every session', async () => {
    const owner = await createTestMerchant(server, 'Reset Shop');
    const unknown = await call(server, 'POST', '/api/auth/password-reset/', {
      body: { email: 'nobody@reset.test' },
    });
    assert.equal(unknown.status, 202);
    assert.equal(latestMail(server, 'nobody@reset.test'), null);
    const known = await call(server, 'POST', '/api/auth/password-reset/', { body: { email: owner.email } });
    assert.equal(known.status, 202);
    assert.deepEqual(known.body, unknown.body, 'the answer does not tell whether the account exists');
    let token = '';
    for (let i = 0; i < 50 && !token; i++) {
      try {
        token = mailedToken(server, owner.email, 'reset-password');
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
    assert.ok(token, 'the reset link is mailed');
    const confirmed = await call(server, 'POST', '/api/auth/password-reset/confirm/', {
      body: { token, new_password: 'reset to this one' },
    });
    assert.equal(confirmed.status, 204, confirmed.text);
    assert.equal((await call(server, 'GET', '/api/auth/me/', { token: owner.token })).status, 401);
    assert.equal((await login(owner.email, 'reset to this one')).status, 200);
    const reused = await call(server, 'POST', '/api/auth/password-reset/confirm/', {
      body: { token, new_password: 'and again another' },
    });
    assert.equal(reused.status, 400, 'single use');

    await call(server, 'POST', '/api/auth/password-reset/', { body: { email: owner.email } });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const second = mailedToken(server, owner.email, 'reset-password');
    now += HOUR + 1000;
    const expired = await call(server, 'POST', '/api/auth/password-reset/confirm/', {
      body: { token: second, new_password: 'too late for this' },
    });
    assert.equal(expired.status, 400, 'one hour');
  });

  test('the session list marks the current session; another one can be revoked and stops working', async () => {
    const owner: Merchant = await createTestMerchant(server, 'Sessions Shop');
    const other = await call<{ token: string }>(server, 'POST', '/api/auth/login/', {
      body: { email: owner.email, password: owner.password },
      headers: { 'user-agent': 'Other Browser/1.0' },
    });
    const list = await call<{ id: number; current: boolean; user_agent: string | null; ip: string }[]>(
      server,
      'GET',
      '/api/auth/sessions/',
      { token: owner.token },
    );
    assert.equal(list.status, 200);
    assert.equal(list.body.length, 2);
    assert.equal(list.body.filter((s) => s.current).length, 1);
    const foreign = list.body.find((s) => s.user_agent === 'Other Browser/1.0');
    assert.ok(foreign && !foreign.current);
    assert.equal(foreign.ip, '127.0.0.1');
    const revoked = await call(server, 'DELETE', `/api/auth/sessions/${foreign.id}/`, { token: owner.token });
    assert.equal(revoked.status, 204);
    assert.equal((await call(server, 'GET', '/api/auth/me/', { token: other.body.token })).status, 401);
    const again = await call(server, 'DELETE', `/api/auth/sessions/${foreign.id}/`, { token: owner.token });
    assert.equal(again.status, 404);
  });
});
