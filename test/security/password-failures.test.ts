// Failed password checks are counted in the database (src/modules/auth/password-tries.ts, migration 021):
// per account from an address (10 per 15 minutes), per account from anywhere and per address for any
// account (lowered here to 25 and 15 so the tests stay short). The counts hold across processes sharing
// the database (a second app instance on the same database, as test/members.test.ts starts one) and
// across a restart; an unknown email is counted and answered like a known one; an address an account has
// logged in from is not refused by the wide counts. Clients bind 127.0.x.y so the server sees distinct
// addresses.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  call,
  createTestMerchant,
  DB_KIND,
  type Merchant,
  startTestServer,
  type TestServer,
} from '../helpers/server.ts';
import { type Answer, postFrom } from './post-from.ts';

const TOO_MANY = { detail: 'Too many failed login attempts. Try again later.' };
const INVALID = { detail: 'Invalid email or password.' };
const WINDOW_MS = 15 * 60_000;

describe(`password failures counted in the database (${DB_KIND})`, () => {
  let server: TestServer;
  let now = Date.now();
  const clock = () => new Date(now);

  before(async () => {
    server = await startTestServer({
      worker: false,
      clock,
      env: {
        KASSA_RATE_LIMIT_LOGIN_FAILURES_PER_ACCOUNT: '25',
        KASSA_RATE_LIMIT_LOGIN_FAILURES_PER_ADDRESS: '15',
      },
    });
  });
  after(() => server.close());

  const twinOf = () => startTestServer({ worker: false, clock, shareWith: server });
  const login = (proc: TestServer, from: string, email: string, password: string) =>
    postFrom(proc, from, '/api/auth/login/', { email, password });
  const statuses = (answers: Answer[]) => answers.map((answer) => answer.status);

  /** What a client sees of an answer, but for Retry-After's exact second. */
  const seen = (answer: Answer) => ({
    status: answer.status,
    body: answer.body,
    limit: answer.headers['ratelimit-limit'],
    remaining: answer.headers['ratelimit-remaining'],
    retryAfter: answer.retryAfter !== null,
  });

  test('wrong passwords spread over two processes on one database hit the limit of 10, and a new process still refuses', async () => {
    const shop = await createTestMerchant(server, 'Two Processes');
    const twin = await twinOf();
    const answers: Answer[] = [];
    try {
      for (let i = 0; i < 11; i++) {
        answers.push(await login(i % 2 ? twin : server, '127.0.2.1', shop.email, `wrong ${i}`));
      }
      // In each process's memory that was 5 or 6 failures: the 11th was evaluated (a 401).
      assert.deepEqual(statuses(answers), [...Array(10).fill(401), 429]);
      assert.deepEqual(answers[10]?.body, TOO_MANY);
      assert.equal(answers[10]?.headers['ratelimit-limit'], '10');
      const right = await login(twin, '127.0.2.1', shop.email, shop.password);
      assert.equal(right.status, 429, 'the right password too, until the window ends');
    } finally {
      await twin.close();
    }
    // A process started afterwards (a restart) reads the same count.
    const restarted = await twinOf();
    try {
      const refused = await login(restarted, '127.0.2.1', shop.email, shop.password);
      assert.equal(refused.status, 429);
      assert.ok(Number(refused.retryAfter) > 0 && Number(refused.retryAfter) <= WINDOW_MS / 1000);
      now += WINDOW_MS;
      const later = await login(restarted, '127.0.2.1', shop.email, shop.password);
      assert.equal(later.status, 200, JSON.stringify(later.body));
    } finally {
      await restarted.close();
    }
  });

  test('parallel wrong passwords through two processes get at most 10 evaluated in all', {
    skip: DB_KIND === 'postgres' ? false : 'SQLite serves from one process',
  }, async () => {
    const shop = await createTestMerchant(server, 'Parallel Processes');
    const twin = await twinOf();
    try {
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          login(i % 2 ? twin : server, '127.0.2.2', shop.email, `parallel wrong ${i}`),
        ),
      );
      const evaluated = answers.filter((answer) => answer.status === 401).length;
      assert.ok(evaluated >= 1 && evaluated <= 10, `evaluated: ${statuses(answers).join(',')}`);
      assert.equal(evaluated + answers.filter((a) => a.status === 429).length, 40);
      // Tries a hash queue refused unchecked were given back: exactly 10 failures in all.
      let more = 0;
      for (let i = 0; ; i++) {
        const answer = await login(i % 2 ? twin : server, '127.0.2.2', shop.email, 'one more wrong');
        if (answer.status === 429) break;
        assert.equal(answer.status, 401);
        more += 1;
      }
      assert.equal(evaluated + more, 10);
    } finally {
      await twin.close();
    }
  });

  test('an unknown email is counted and answered exactly like a known one', async () => {
    const shop = await createTestMerchant(server, 'Known Address');
    const run = async (from: string, email: string) => {
      const answers: Answer[] = [];
      for (let i = 0; i < 12; i++) answers.push(await login(server, from, email, `wrong ${i}`));
      return answers;
    };
    const known = await run('127.0.2.3', shop.email);
    const unknown = await run('127.0.2.4', 'nobody-here@unknown.test');
    assert.deepEqual(known.map(seen), unknown.map(seen));
    assert.deepEqual(statuses(known), [...Array(10).fill(401), 429, 429]);
    assert.deepEqual(known[0]?.body, INVALID);
    assert.deepEqual(known[10]?.body, TOO_MANY);
    // The counts hold no email or address in clear.
    const rows = await server.ctx.db.selectFrom('login_failures').selectAll().execute();
    assert.ok(rows.length > 0);
    for (const text of ['nobody-here', shop.email, '127.0.2.4']) {
      assert.ok(!JSON.stringify(rows).includes(text), `${text} is stored in clear`);
    }
  });

  test('one address trying many accounts is refused past 15 failures; a success there does not reset it, and accounts that logged in from there are not refused', async () => {
    const from = '127.0.3.1';
    const regular = await createTestMerchant(server, 'Regular Here');
    const visitor = await createTestMerchant(server, 'Visitor');
    const stranger = await createTestMerchant(server, 'Stranger');
    assert.equal((await login(server, from, regular.email, regular.password)).status, 200);
    const wrong: Answer[] = [];
    for (let i = 0; i < 5; i++) wrong.push(await login(server, from, 'first@unknown.test', 'wrong'));
    for (let i = 0; i < 5; i++) wrong.push(await login(server, from, 'second@unknown.test', 'wrong'));
    // Another account's right password: its own try is given back, the 10 failures stay counted.
    assert.equal((await login(server, from, visitor.email, visitor.password)).status, 200);
    for (let i = 0; i < 5; i++) wrong.push(await login(server, from, 'third@unknown.test', 'wrong'));
    assert.deepEqual(statuses(wrong), Array(15).fill(401));

    const fresh = await login(server, from, 'fourth@unknown.test', 'wrong');
    assert.equal(fresh.status, 429, 'a fresh email from this address');
    assert.deepEqual(fresh.body, TOO_MANY);
    assert.equal(fresh.headers['ratelimit-limit'], '15');
    assert.ok(Number(fresh.retryAfter) > 0);
    const notFromHere = await login(server, from, stranger.email, stranger.password);
    assert.equal(notFromHere.status, 429, 'a member who never logged in from this address');
    // Members with a session from this address are only held to their own 10 failures here.
    assert.equal((await login(server, from, regular.email, 'a wrong one')).status, 401);
    assert.equal((await login(server, from, regular.email, regular.password)).status, 200);
    assert.equal((await login(server, from, visitor.email, visitor.password)).status, 200);
    // Other addresses are not concerned.
    assert.equal((await login(server, '127.0.3.2', 'fourth@unknown.test', 'wrong')).status, 401);
    assert.equal((await login(server, '127.0.3.2', stranger.email, stranger.password)).status, 200);
  });

  test('one account tried from many addresses is refused past 25 failures, the same for an unknown email, but not where the member logs in from', async () => {
    const shop = await createTestMerchant(server, 'Many Addresses');
    const home = '127.0.4.100';
    assert.equal((await login(server, home, shop.email, shop.password)).status, 200);
    const spread = async (email: string, subnet: number) => {
      const answers: Answer[] = [];
      for (let i = 0; i < 25; i++) {
        answers.push(await login(server, `127.0.${subnet}.${(i % 5) + 1}`, email, `wrong ${i}`));
      }
      answers.push(await login(server, `127.0.${subnet}.6`, email, 'wrong again'));
      return answers;
    };
    const known = await spread(shop.email, 4);
    const unknown = await spread('ghost@unknown.test', 5);
    assert.deepEqual(statuses(known), [...Array(25).fill(401), 429]);
    assert.deepEqual(known.map(seen), unknown.map(seen));
    assert.equal(known[25]?.headers['ratelimit-limit'], '25');
    assert.equal((await login(server, '127.0.4.7', shop.email, shop.password)).status, 429);
    // The member still logs in where they have before (and from the address createTestMerchant used).
    assert.equal((await login(server, home, shop.email, shop.password)).status, 200);
    assert.equal(
      (
        await call(server, 'POST', '/api/auth/login/', {
          body: { email: shop.email, password: shop.password },
        })
      ).status,
      200,
    );
    // Their success does not give the other addresses a new allowance.
    assert.equal((await login(server, '127.0.4.8', shop.email, shop.password)).status, 429);
  });

  test('identity confirmation and password change count with login against the same limit, across processes', async () => {
    const shop: Merchant = await createTestMerchant(server, 'Confirm And Change');
    const twin = await twinOf();
    try {
      const confirm = (proc: TestServer, password: string) =>
        call(proc, 'POST', '/api/auth/confirm/', { token: shop.token, body: { password } });
      const change = (proc: TestServer, current: string) =>
        call(proc, 'POST', '/api/auth/password/', {
          token: shop.token,
          body: { current_password: current, new_password: 'a brand new password' },
        });
      const answers = [];
      for (let i = 0; i < 4; i++) answers.push((await confirm(i % 2 ? twin : server, `wrong ${i}`)).status);
      for (let i = 0; i < 3; i++) answers.push((await change(i % 2 ? server : twin, `wrong ${i}`)).status);
      for (let i = 0; i < 3; i++) {
        const answer = await call(twin, 'POST', '/api/auth/login/', {
          body: { email: shop.email, password: `wrong ${i}` },
        });
        answers.push(answer.status);
      }
      assert.deepEqual(answers, [400, 400, 400, 400, 400, 400, 400, 401, 401, 401]);
      const confirmed = await confirm(server, shop.password);
      assert.equal(confirmed.status, 429, confirmed.text);
      assert.deepEqual(confirmed.body, TOO_MANY);
      assert.ok(Number(confirmed.headers.get('retry-after')) > 0);
      assert.equal((await change(twin, shop.password)).status, 429);
      const logged = await call(server, 'POST', '/api/auth/login/', {
        body: { email: shop.email, password: shop.password },
      });
      assert.equal(logged.status, 429);
      // The window ends; a right password then clears the count of the account from this address.
      now += WINDOW_MS;
      for (let i = 0; i < 9; i++) assert.equal((await confirm(twin, `wrong ${i}`)).status, 400);
      assert.equal((await confirm(server, shop.password)).status, 200);
      for (let i = 0; i < 10; i++) assert.equal((await confirm(twin, `wrong ${i}`)).status, 400);
      assert.equal((await confirm(server, shop.password)).status, 429);
    } finally {
      await twin.close();
    }
  });
});
