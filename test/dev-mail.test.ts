// The development mailbox: with KASSA_ENV=development and no SMTP server, the messages Kassa writes to
// <data dir>/mail/ can be listed and read from the dashboard (only those addressed to the caller's
// organization), and every "we sent you a code" answer says where the code went. Anywhere else (test,
// production, or an SMTP server configured) the endpoints do not exist.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
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
