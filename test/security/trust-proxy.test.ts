// #14 finding 6: KASSA_TRUST_PROXY=true trusted any X-Forwarded-For, so a client could name any address
// and slip every per-address limit. It is now a hop count or a list of proxy addresses; `true` is
// refused at start. Per-address limits count an IPv6 client by its /64 (src/http/client-network.ts): one
// line's 2^64 addresses are one client; so does the exemption of an address a member logged in from.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { call, createTestMerchant, startTestServer, type TestServer, testEnv } from '../helpers/server.ts';

const UNKNOWN_LINK = '/api/payment-links/public/00000000-0000-4000-8000-000000000000/';

/** Previews (limited per client address, 3 a minute here) with a rotating first X-Forwarded-For entry. */
async function statusesWithRotatingForwardedFor(server: TestServer, last: string): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 1; i <= 5; i++) {
    const forwarded = last ? `10.9.8.${i}, ${last}` : `10.9.8.${i}`;
    statuses.push(
      (await call(server, 'GET', UNKNOWN_LINK, { headers: { 'x-forwarded-for': forwarded } })).status,
    );
  }
  return statuses;
}

describe('security #6: proxy trust', () => {
  const servers: TestServer[] = [];
  after(async () => {
    for (const server of servers) await server.close();
  });

  test('KASSA_TRUST_PROXY=true is refused at start with a message naming the variable', async () => {
    const { env, cleanup } = await testEnv({ KASSA_TRUST_PROXY: 'true' });
    try {
      assert.throws(
        () => loadConfig(env),
        (error: unknown) => {
          assert.ok(error instanceof ConfigError);
          assert.match(error.message, /KASSA_TRUST_PROXY/);
          assert.match(error.message, /hop count|number of proxies/);
          return true;
        },
      );
      const cli = spawnSync(
        process.execPath,
        ['--disable-warning=ExperimentalWarning', 'src/cli/main.ts', 'serve'],
        {
          env: { ...process.env, ...env },
          encoding: 'utf8',
          timeout: 90_000,
        },
      );
      assert.equal(cli.status, 1, cli.stdout + cli.stderr);
      assert.match(cli.stderr, /KASSA_TRUST_PROXY/);
    } finally {
      await cleanup();
    }
  });

  test('a hop count of 1 takes the address the one proxy saw; spoofed entries before it change nothing', async () => {
    const server = await startTestServer({
      worker: false,
      env: { KASSA_TRUST_PROXY: '1', KASSA_RATE_LIMIT_PUBLIC: '3' },
    });
    servers.push(server);
    const statuses = await statusesWithRotatingForwardedFor(server, '203.0.113.7');
    assert.deepEqual(statuses, [404, 404, 404, 429, 429]);
  });

  test('a proxy list trusts X-Forwarded-For only from those proxies', async () => {
    const server = await startTestServer({
      worker: false,
      env: { KASSA_TRUST_PROXY: '10.0.0.0/8, 192.0.2.1', KASSA_RATE_LIMIT_PUBLIC: '3' },
    });
    servers.push(server);
    // The test client (127.0.0.1) is not one of the proxies: its X-Forwarded-For is ignored.
    assert.deepEqual(await statusesWithRotatingForwardedFor(server, ''), [404, 404, 404, 429, 429]);
    for (const bad of ['yes', '10.0.0.0/33', 'proxy.example', '-1']) {
      const { env, cleanup } = await testEnv({ KASSA_TRUST_PROXY: bad });
      assert.throws(() => loadConfig(env), /KASSA_TRUST_PROXY/, bad);
      await cleanup();
    }
  });

  test('behind a proxy, IPv6 clients count by their /64: rotating the last 64 bits starts no fresh count', async () => {
    const server = await startTestServer({
      worker: false,
      env: { KASSA_TRUST_PROXY: '1', KASSA_RATE_LIMIT_PUBLIC: '3', KASSA_RATE_LIMIT_LOGIN_FAILURES: '3' },
    });
    servers.push(server);
    const from = (address: string) => ({ headers: { 'x-forwarded-for': address } });
    const previews: number[] = [];
    for (let i = 1; i <= 5; i++) {
      previews.push((await call(server, 'GET', UNKNOWN_LINK, from(`2001:db8:7:7:${i}::${i}`))).status);
    }
    assert.deepEqual(previews, [404, 404, 404, 429, 429]);
    assert.equal(
      (await call(server, 'GET', UNKNOWN_LINK, from('2001:db8:7:8::1'))).status,
      404,
      'the next /64',
    );

    const shop = await createTestMerchant(server, 'IPv6 Shop');
    const logins: number[] = [];
    for (let i = 1; i <= 4; i++) {
      const body = { email: shop.email, password: `wrong ${i}` };
      logins.push(
        (await call(server, 'POST', '/api/auth/login/', { body, ...from(`2001:db8:5:5::${i}`) })).status,
      );
    }
    assert.deepEqual(logins, [401, 401, 401, 429]);
    const elsewhere = { email: shop.email, password: shop.password };
    const right = await call(server, 'POST', '/api/auth/login/', {
      body: elsewhere,
      ...from('2001:db8:5:6::1'),
    });
    assert.equal(right.status, 200, 'another /64 has its own count');
  });

  test('the exemption of an address a member logged in from matches its network: a rotating IPv6 address within its /64, an IPv4-mapped one as its IPv4', async () => {
    const server = await startTestServer({
      worker: false,
      env: { KASSA_TRUST_PROXY: '1', KASSA_RATE_LIMIT_LOGIN_FAILURES_PER_ACCOUNT: '4' },
    });
    servers.push(server);
    const from = (address: string) => ({ headers: { 'x-forwarded-for': address } });
    const login = (address: string, email: string, password: string) =>
      call(server, 'POST', '/api/auth/login/', { body: { email, password }, ...from(address) });
    const shop = await createTestMerchant(server, 'Rotating Shop');
    // The member logs in from an IPv6 privacy address and from a dual-stack socket's IPv4-mapped one.
    assert.equal((await login('2001:db8:a:b:1111:2222:3333:4444', shop.email, shop.password)).status, 200);
    assert.equal((await login('::ffff:198.51.100.7', shop.email, shop.password)).status, 200);
    // A stranger fills the account's count from four other networks.
    const spread: number[] = [];
    for (let i = 1; i <= 4; i++) spread.push((await login(`203.0.113.${i}`, shop.email, 'wrong')).status);
    assert.deepEqual(spread, [401, 401, 401, 401]);
    assert.equal((await login('203.0.113.9', shop.email, shop.password)).status, 429, 'a new place');
    // The member's address has rotated within its /64 since: still where they log in from.
    const rotated = await login('2001:db8:a:b:5555:6666:7777:8888', shop.email, shop.password);
    assert.equal(rotated.status, 200, rotated.text);
    assert.equal((await login('2001:db8:a:b::1', shop.email, 'a typo')).status, 401, 'a typo is a 401');
    assert.equal((await login('198.51.100.7', shop.email, shop.password)).status, 200, 'IPv4 as mapped');
    assert.equal((await login('2001:db8:a:c::1', shop.email, shop.password)).status, 429, 'the next /64');
  });
});
