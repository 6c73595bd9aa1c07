// The development mailbox: with KASSA_ENV=development and no SMTP server, the messages Kassa writes to
// <data dir>/mail/ can be listed and read from the dashboard (only those addressed to the caller's
// organization), and every "we sent you a code" answer says where the code went. Anywhere else (test,
// production, or an SMTP server configured) the endpoints do not exist.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { addMember, latestMail, mailedToken } from './helpers/accounts.ts';
import {
  call,
  createTestMerchant,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';

interface Summary {
  id: string;
  to: string;
  subject: string;
  date: string;
  preview: string;
}

describe('development mailbox', () => {
  let server: TestServer;
  let merchant: Merchant;
  let other: Merchant;
  before(async () => {
    server = await startTestServer({ env: { KASSA_ENV: 'development' } });
    merchant = await createTestMerchant(server, 'Mail Shop');
    other = await createTestMerchant(server, 'Other Shop');
  });
  after(() => server.close());

  const list = (who: Merchant) =>
    call<{ results: Summary[]; directory: string }>(server, 'GET', '/api/dev/mail/', { token: who.token });

  test('a refund code is answered with where it went, then listed and read in the mailbox', async () => {
    const sent = await call<{ detail: string }>(server, 'POST', '/api/refunds/verification-code/', {
      token: merchant.token,
      body: {},
    });
    assert.equal(sent.status, 202, sent.text);
    assert.equal(
      sent.body.detail,
      `A verification code was sent to ${merchant.email}. No mail server is configured, so it is in the development mailbox: open Mail in the dashboard to read it.`,
    );
    const mailbox = await list(merchant);
    assert.equal(mailbox.status, 200, mailbox.text);
    assert.equal(mailbox.body.directory, `${server.env.KASSA_DATA_DIR}/mail`);
    assert.equal(mailbox.body.results.length, 1);
    const [summary] = mailbox.body.results;
    assert.equal(summary.to, merchant.email);
    assert.equal(summary.subject, 'Your Kassa refund verification code');
    assert.match(
      summary.preview,
      /^Your refund verification code for Mail Shop is \d{6}\. It expires in 10 minutes/,
    );
    const message = await call<{ text: string; from: string; subject: string }>(
      server,
      'GET',
      `/api/dev/mail/${summary.id}/`,
      { token: merchant.token },
    );
    assert.equal(message.status, 200, message.text);
    assert.equal(message.body.from, 'Kassa <no-reply@kassa.local>');
    assert.match(message.body.text, /^Your refund verification code for Mail Shop is \d{6}\.\n\nIt expires/);
  });

  test('another organization sees none of it, and odd ids are a 404 with a detail', async () => {
    const [mine] = (await list(merchant)).body.results;
    assert.deepEqual((await list(other)).body.results, []);
    const theirs = await call<{ detail: string }>(server, 'GET', `/api/dev/mail/${mine.id}/`, {
      token: other.token,
    });
    assert.equal(theirs.status, 404);
    assert.equal(theirs.body.detail, 'Message not found.');
    for (const id of ['..%2F..%2Fetc%2Fpasswd', 'no-such-message', '.eml']) {
      const odd = await call<{ detail: string }>(server, 'GET', `/api/dev/mail/${id}/`, {
        token: merchant.token,
      });
      assert.equal(odd.status, 404, id);
      assert.ok(odd.body.detail);
    }
    assert.equal((await call(server, 'GET', '/api/dev/mail/')).status, 401);
  });

  test('newest first: a second message comes before the first', async () => {
    await server.ctx.mailer.send({ to: merchant.email, subject: 'Second', text: 'Hello again.\n' });
    const subjects = (await list(merchant)).body.results.map((mail) => mail.subject);
    assert.deepEqual(subjects, ['Second', 'Your Kassa refund verification code']);
  });

  test("an invitation to someone who is not a member yet shows in the inviting organization's mailbox only", async () => {
    const invitee = `invitee-${Date.now()}@mail-shop.test`;
    const invited = await call(server, 'POST', '/api/organization/members/', {
      token: merchant.token,
      body: { email: invitee, role: 'viewer' },
    });
    assert.equal(invited.status, 201, invited.text);
    const [newest] = (await list(merchant)).body.results;
    assert.equal(newest.to, invitee);
    assert.ok(!(await list(other)).body.results.some((mail) => mail.to === invitee));
  });

  const invite = (who: Merchant, email: string) =>
    call<{ id: number }>(server, 'POST', '/api/organization/members/', {
      token: who.token,
      body: { email, role: 'viewer' },
    });
  const mailTo = async (who: Merchant, email: string) =>
    (await list(who)).body.results.filter((mail) => mail.to === email).map((mail) => mail.subject);

  test("an address the organization no longer has (a lapsed invitation, a removed member) is not read there: another organization's password-reset mail to it stays in that one's mailbox", async () => {
    const lapsed = await createTestMerchant(server, 'Lapsed Shop');
    const joined = await createTestMerchant(server, 'Joined Shop');
    const email = `joiner-${Date.now()}@mail-shop.test`;
    const first = await invite(lapsed, email);
    assert.equal(first.status, 201, first.text);
    const revoked = await call(server, 'DELETE', `/api/organization/invitations/${first.body.id}/`, {
      token: lapsed.token,
    });
    assert.equal(revoked.status, 204);
    assert.equal((await invite(joined, email)).status, 201);
    const accepted = await call(server, 'POST', '/api/auth/accept-invite/', {
      body: { token: mailedToken(server, email, 'accept-invite'), password: 'joiner password' },
    });
    assert.equal(accepted.status, 200, accepted.text);
    await call(server, 'POST', '/api/auth/password-reset/', { body: { email } });
    for (let i = 0; i < 100 && !latestMail(server, email)?.includes('reset-password#token='); i++)
      await new Promise((resolve) => setTimeout(resolve, 20));
    assert.deepEqual(await mailTo(lapsed, email), [], 'no mail to the address that joined elsewhere');
    const own = (await list(joined)).body.results.find((mail) => mail.to === email);
    assert.equal(own?.subject, 'Reset your Kassa password');
    const read = await call(server, 'GET', `/api/dev/mail/${own?.id}/`, { token: lapsed.token });
    assert.equal(read.status, 404);

    const member = await addMember(server, lapsed, 'support');
    assert.ok((await mailTo(lapsed, member.email)).length > 0, "a member's mail is read");
    await call(server, 'DELETE', `/api/organization/members/${member.id}/`, { token: lapsed.token });
    await server.ctx.mailer.send({ to: member.email, subject: 'After removal', text: 'Hello.\n' });
    assert.deepEqual(await mailTo(lapsed, member.email), [], 'nor the mail of a removed member');
  });

  test("two organizations inviting one address each read only their own invitation; accepting one revokes the other's", async () => {
    const first = await createTestMerchant(server, 'First Inviter');
    const second = await createTestMerchant(server, 'Second Inviter');
    const email = `wanted-${Date.now()}@mail-shop.test`;
    assert.equal((await invite(first, email)).status, 201);
    assert.equal((await invite(second, email)).status, 201);
    assert.deepEqual(await mailTo(first, email), ['You are invited to First Inviter on Kassa']);
    assert.deepEqual(await mailTo(second, email), ['You are invited to Second Inviter on Kassa']);
    const accepted = await call(server, 'POST', '/api/auth/accept-invite/', {
      body: { token: mailedToken(server, email, 'accept-invite'), password: 'wanted password' },
    });
    assert.equal(accepted.status, 200, accepted.text);
    const team = await call<{ invitations: unknown[] }>(server, 'GET', '/api/organization/members/', {
      token: first.token,
    });
    assert.deepEqual(team.body.invitations, [], "the first organization's invitation is revoked");
    assert.deepEqual(await mailTo(first, email), []);
    const log = await call<{ results: { actor: { type: string }; details: unknown }[] }>(
      server,
      'GET',
      '/api/organization/audit-log/?action=invitation.revoked',
      { token: first.token },
    );
    assert.deepEqual(
      log.body.results.map((entry) => [entry.actor.type, entry.details]),
      [['system', { email, reason: 'accepted_elsewhere' }]],
    );
  });
});

describe('development mailbox elsewhere', () => {
  for (const [name, env] of [
    ['in tests', { KASSA_ENV: 'test' }],
    ['in production', { KASSA_ENV: 'production', KASSA_ALLOW_SIMULATOR: 'true' }],
    ['with an SMTP server', { KASSA_ENV: 'development', KASSA_SMTP_URL: 'smtp://127.0.0.1:9' }],
  ] as const) {
    test(`does not exist ${name}`, async () => {
      const server = await startTestServer({ env });
      try {
        const merchant = await createTestMerchant(server, 'Shop');
        const answer = await call<{ detail: string }>(server, 'GET', '/api/dev/mail/', {
          token: merchant.token,
        });
        assert.equal(answer.status, 404);
        assert.ok(answer.body.detail);
        assert.equal((await call(server, 'GET', '/api/dev/mail/x/', { token: merchant.token })).status, 404);
      } finally {
        await server.close();
      }
    });
  }
});
