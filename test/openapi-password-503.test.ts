// The password line's 503 and 429 in the OpenAPI document, through the real server: every route whose
// handler checks or hashes a dashboard password (auth/passwords.ts) waits in the bounded line of password
// checks and hashes, which refuses at once when it is full (503) or when the caller's address already has
// its share in it (429), both with Retry-After. Each such route is made to answer both here and documents
// both; the operations that document the password line's 503 are exactly those. The routes declare it in
// their own schema (CHECKS_PASSWORDS, src/http/schemas.ts): a route that starts checking passwords without
// the mark fails here, or in whichever e2e test meets the 503 (call() checks it against the document).
// The line is filled by holding places in the service's own queues (lib/crypto.ts): the test server runs
// in this process, and a check held open is what a slow hash under a flood of logins looks like.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { clientNetwork } from '../src/http/client-network.ts';
import { hashQueue, passwordChecks } from '../src/lib/crypto.ts';
import type { HashQueue } from '../src/lib/hash-queue.ts';
import { PASSWORD_CHECKS_BUSY_DETAIL } from '../src/modules/auth/passwords.ts';
import { latestMail, mailedToken } from './helpers/accounts.ts';
import {
  assertRetryAfterDocumented,
  routesDocumenting,
  type ServedDocument,
} from './helpers/documented-errors.ts';
import {
  type ApiResponse,
  type CallOptions,
  call,
  createTestMerchant,
  DB_KIND,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';

/** Every operation that checks or hashes a password in the line, as the document names it. */
const PASSWORD_503 = [
  'POST /api/auth/login/',
  'POST /api/auth/confirm/',
  'POST /api/auth/password/',
  'POST /api/auth/password-reset/confirm/',
  'POST /api/auth/accept-invite/',
].sort();

/** The loopback address the test's requests come from, as the line counts it. */
const OWN_ADDRESS = clientNetwork('127.0.0.1');

/**
 * Holds places in the password-check line and in the hash queue with checks that wait until the returned
 * function is called: `full` takes every place (for other addresses), `own` this address's share of each.
 * A counted check waits in the first and its hash in the second; a new password's hash only in the second.
 */
function holdLine(how: 'full' | 'own'): () => Promise<void> {
  let release = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const hold = (queue: HashQueue) => {
    const keys =
      how === 'full'
        ? Array.from({ length: queue.concurrency + queue.maxWaiting }, (_, index) => `holder-${index}`)
        : Array.from({ length: queue.maxPerKey }, () => OWN_ADDRESS);
    return keys.map((key) => queue.run(key, () => released));
  };
  const held = [...hold(passwordChecks), ...hold(hashQueue)];
  return async () => {
    release();
    await Promise.all(held);
  };
}

describe(`the password line's 503 is documented on exactly the routes that check passwords (${DB_KIND})`, () => {
  let server: TestServer;
  let owner: Merchant;
  let document: ServedDocument;
  let resetToken: string;
  let inviteToken: string;
  const provoked = new Set<string>();

  before(async () => {
    server = await startTestServer({ worker: false });
    owner = await createTestMerchant(server, 'Password 503 Shop');
    const served = await call(server, 'GET', '/api/openapi.json');
    assert.equal(served.status, 200, served.text);
    document = served.body as unknown as ServedDocument;

    const invitee = `invitee-${Date.now()}@acme.test`;
    const invited = await call(server, 'POST', '/api/organization/members/', {
      token: owner.token,
      body: { email: invitee, role: 'viewer' },
    });
    assert.equal(invited.status, 201, invited.text);
    inviteToken = mailedToken(server, invitee, 'accept-invite');

    const asked = await call(server, 'POST', '/api/auth/password-reset/', { body: { email: owner.email } });
    assert.equal(asked.status, 202, asked.text);
    // The reset mail is sent after the answer.
    for (let tries = 0; !latestMail(server, owner.email)?.includes('reset-password'); tries++) {
      assert.ok(tries < 100, 'the reset mail was sent');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    resetToken = mailedToken(server, owner.email, 'reset-password');
  });
  after(() => server?.close());

  /** Each marked route with a request that reaches its password check. */
  const requests = (): Record<string, [string, CallOptions]> => ({
    'POST /api/auth/login/': [
      '/api/auth/login/',
      { body: { email: owner.email, password: 'a wrong password' } },
    ],
    'POST /api/auth/confirm/': [
      '/api/auth/confirm/',
      { token: owner.token, body: { password: owner.password } },
    ],
    'POST /api/auth/password/': [
      '/api/auth/password/',
      { token: owner.token, body: { current_password: owner.password, new_password: 'a new password 1' } },
    ],
    'POST /api/auth/password-reset/confirm/': [
      '/api/auth/password-reset/confirm/',
      { body: { token: resetToken, new_password: 'a reset password 1' } },
    ],
    'POST /api/auth/accept-invite/': [
      '/api/auth/accept-invite/',
      { body: { token: inviteToken, password: 'an invitee password 1' } },
    ],
  });

  function assertRefused(route: string, answer: ApiResponse, status: 429 | 503) {
    assert.equal(answer.status, status, `${route}: ${answer.text}`);
    assert.equal(typeof answer.body.detail, 'string', answer.text);
    assert.equal(answer.headers.get('retry-after'), '1', route);
    assertRetryAfterDocumented(document, route, status);
  }

  for (const route of PASSWORD_503) {
    test(`${route}, when the password line is full: 503 with Retry-After, documented`, async () => {
      const [path, options] = requests()[route];
      const release = holdLine('full');
      try {
        const answer = await call(server, 'POST', path, options);
        assertRefused(route, answer, 503);
        assert.deepEqual(answer.body, { detail: PASSWORD_CHECKS_BUSY_DETAIL });
        provoked.add(route);
      } finally {
        await release();
      }
    });

    test(`${route}, when this address has its share of the line: 429 with Retry-After, documented`, async () => {
      const [path, options] = requests()[route];
      const release = holdLine('own');
      try {
        assertRefused(route, await call(server, 'POST', path, options), 429);
      } finally {
        await release();
      }
    });
  }

  test('a refusal changed nothing: the reset link and the invitation still work afterwards', async () => {
    const reset = await call(server, 'POST', '/api/auth/password-reset/confirm/', {
      body: { token: resetToken, new_password: 'a reset password 1' },
    });
    assert.equal(reset.status, 204, reset.text);
    const accepted = await call(server, 'POST', '/api/auth/accept-invite/', {
      body: { token: inviteToken, password: 'an invitee password 1' },
    });
    assert.equal(accepted.status, 200, accepted.text);
  });

  test("the operations that document the password line's 503 are exactly the routes made to answer it", () => {
    assert.deepEqual(routesDocumenting(document, 503, 'busy checking passwords'), PASSWORD_503);
    assert.deepEqual([...provoked].sort(), PASSWORD_503, 'each one was made to answer 503 above');
  });
});
