// The login limiter and the password-hash queue (#14 item 2). Attempts are counted before the hash, by a
// conditional update committed in the database, so parallel wrong passwords cannot all slip past the
// limit (test/security/password-failures.test.ts has the counts across processes); the hash
// queue is bounded (per address and in all), so a flood answers 429/503 at once instead of queueing a real
// login behind it. Clients bind distinct loopback addresses (127.0.0.x) so the server sees distinct IPs
// without trusting any proxy header.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { enableTwoFactor } from '../helpers/accounts.ts';
import {
  createTestMerchant,
  DB_KIND,
  type Merchant,
  startTestServer,
  type TestServer,
} from '../helpers/server.ts';
import { type Answer, postFrom } from './post-from.ts';

/** Password hashes this server has finished, from its Prometheus metrics. */
async function hashesDone(server: TestServer): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('kassa_password_hashes_total '));
  assert.ok(line, 'kassa_password_hashes_total is exported');
  return Number(line.split(' ')[1]);
}

function tally(answers: Answer[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const answer of answers) counts[answer.status] = (counts[answer.status] ?? 0) + 1;
  return counts;
}

describe(`login limiter and hash queue (${DB_KIND})`, () => {
  let server: TestServer;
  let shop: Merchant;

  before(async () => {
    server = await startTestServer({ worker: false });
    shop = await createTestMerchant(server, 'Guarded');
  });
  after(() => server.close());

  test('300 parallel wrong passwords for one account from one address: at most 10 are evaluated, the rest get 429', async () => {
    const other = await createTestMerchant(server, 'Targeted');
    const answers = await Promise.all(
      Array.from({ length: 300 }, (_, i) =>
        postFrom(server, '127.0.0.3', '/api/auth/login/', {
          email: other.email,
          password: `wrong password ${i}`,
        }),
      ),
    );
    const counts = tally(answers);
    const evaluated = counts[401] ?? 0;
    assert.ok(evaluated >= 1 && evaluated <= 10, `evaluated (401): ${JSON.stringify(counts)}`);
    assert.equal(evaluated + (counts[429] ?? 0), 300, JSON.stringify(counts));
    for (const answer of answers.filter((a) => a.status === 429)) {
      assert.ok(Number(answer.retryAfter) >= 1, 'a 429 carries Retry-After');
      assert.equal(typeof answer.body.detail, 'string');
    }
    // Attempts the hash queue refused unchecked were given back: the limit is exactly 10 failures in all.
    let more = 0;
    for (;;) {
      const answer = await postFrom(server, '127.0.0.3', '/api/auth/login/', {
        email: other.email,
        password: 'another wrong one',
      });
      if (answer.status === 429) break;
      assert.equal(answer.status, 401);
      more += 1;
    }
    assert.equal(evaluated + more, 10, `${evaluated} + ${more} failures before the limit`);
    // The right password from that address is refused too until the window ends.
    const right = await postFrom(server, '127.0.0.3', '/api/auth/login/', {
      email: other.email,
      password: other.password,
    });
    assert.equal(right.status, 429);
  });

  test('a flood of logins for unknown emails from one address does not queue a real login from another behind it', async () => {
    const flood = Array.from({ length: 150 }, (_, i) =>
      postFrom(server, '127.0.0.5', '/api/auth/login/', {
        email: `nobody-${i}@unknown.test`,
        password: 'whatever12345',
      }),
    );
    // Let the flood reach the server first.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const hashesBefore = await hashesDone(server);
    const real = await postFrom(server, '127.0.0.6', '/api/auth/login/', {
      email: shop.email,
      password: shop.password,
    });
    const hashesDuring = (await hashesDone(server)) - hashesBefore;
    const answers = await Promise.all(flood);
    assert.equal(real.status, 200, JSON.stringify(real.body));
    // Unbounded, the real login waited for the ~150 hashes ahead of it. Bounded, one address holds at most
    // 4 places in the queue; the flood's hashes that still run meanwhile are those admitted while the
    // server's event loop works through the flood's requests ahead of the real one (measured: 15-20).
    assert.ok(hashesDuring <= 40, `${hashesDuring} password hashes ran while the real login waited`);
    const refused = answers.filter((a) => a.status === 429);
    assert.ok(refused.length >= 100, `refused at once: ${JSON.stringify(tally(answers))}`);
    for (const answer of refused) {
      assert.ok(Number(answer.retryAfter) >= 1, 'a refusal carries Retry-After');
      assert.equal(typeof answer.body.detail, 'string');
    }
    assert.equal(refused.length + (tally(answers)[401] ?? 0), 150, JSON.stringify(tally(answers)));
  });

  test("wrong two-factor codes use the codes' own limits, not the password allowance of the account from the address", async () => {
    const owner = await createTestMerchant(server, 'Second Step');
    const { recoveryCodes } = await enableTwoFactor(server, owner.token);
    // A challenge takes 5 codes (then the password again): the next three go to a new challenge.
    const statuses: number[] = [];
    let challenge: unknown;
    for (let i = 0; i < 8; i += 1) {
      if (i === 0 || i === 5) {
        const login = await postFrom(server, '127.0.0.7', '/api/auth/login/', {
          email: owner.email,
          password: owner.password,
        });
        assert.equal(login.body.two_factor_required, true);
        statuses.push(login.status);
        challenge = login.body.challenge;
      }
      const answer = await postFrom(server, '127.0.0.7', '/api/auth/login/2fa/', {
        challenge,
        code: String(100000 + i),
      });
      statuses.push(answer.status);
    }
    assert.deepEqual(statuses, [200, 401, 401, 401, 401, 401, 200, 401, 401, 401]);
    // The 8 wrong codes (and the right passwords) left the password allowance of this account from this
    // address whole: 10 wrong passwords are evaluated, the 11th is a 429.
    const passwords: number[] = [];
    for (let i = 0; i < 11; i += 1) {
      const answer = await postFrom(server, '127.0.0.7', '/api/auth/login/', {
        email: owner.email,
        password: `wrong password ${i}`,
      });
      passwords.push(answer.status);
    }
    assert.deepEqual(passwords, [...Array(10).fill(401), 429]);
    // The codes are limited per challenge (5) and per account (10 per window, any address): the second
    // challenge has had 3 of its 5 and the account 8 of its 10, so the valid recovery code is accepted,
    // even from this address, past its password limit: a challenge is only had with the password.
    const valid = await postFrom(server, '127.0.0.7', '/api/auth/login/2fa/', {
      challenge,
      code: recoveryCodes[0],
    });
    assert.equal(valid.status, 200, JSON.stringify(valid.body));
  });

  test('when the hash queue is full in all (many addresses), further logins get 503 with Retry-After at once', async () => {
    const answers = await Promise.all(
      Array.from({ length: 240 }, (_, i) =>
        postFrom(server, `127.0.1.${(i % 60) + 1}`, '/api/auth/login/', {
          email: `someone-${i}@unknown.test`,
          password: 'whatever12345',
        }),
      ),
    );
    const counts = tally(answers);
    assert.ok((counts[503] ?? 0) > 0, `no 503: ${JSON.stringify(counts)}`);
    for (const answer of answers.filter((a) => a.status === 503)) {
      assert.ok(Number(answer.retryAfter) >= 1);
      assert.equal(typeof answer.body.detail, 'string');
    }
    // Every attempt that was evaluated is a 401 (unknown emails), never a 500.
    assert.equal((counts[401] ?? 0) + (counts[503] ?? 0) + (counts[429] ?? 0), 240, JSON.stringify(counts));
  });
});
