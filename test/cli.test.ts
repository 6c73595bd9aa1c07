import assert from 'node:assert/strict';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, before, describe, test } from 'node:test';
import { commands } from '../src/cli/commands.ts';
import { fullHashQueueEnv, kassa } from './helpers/cli.ts';
import { call, DB_KIND, startTestServer, type TestServer, testEnv } from './helpers/server.ts';

/** Runs the tasks two at a time: the CLI's start-up is CPU-bound and the machine is shared. */
async function inPairs<T>(tasks: (() => Promise<T>)[]): Promise<T[]> {
  const results: T[] = [];
  for (let i = 0; i < tasks.length; i += 2)
    results.push(...(await Promise.all(tasks.slice(i, i + 2).map((task) => task()))));
  return results;
}

interface MerchantOutput {
  organization: { id: number; slug: string; name: string };
  user: { id: number; email: string };
  password?: string;
}

describe('kassa merchant create', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  async function login(email: string, password: string) {
    return call<{ organization: { id: number } }>(server, 'POST', '/api/auth/login/', {
      body: { email, password },
    });
  }

  test('prints {organization: {id, slug, name}, user: {id, email}} as one JSON object, and the owner can log in', async () => {
    const result = await kassa(
      [
        'merchant',
        'create',
        '--org',
        'Acme Widgets',
        '--email',
        'Owner@Acme.test',
        '--password',
        'a long password',
      ],
      server.env,
    );
    assert.equal(result.code, 0, result.stderr);
    const output = JSON.parse(result.stdout) as MerchantOutput;
    assert.deepEqual(Object.keys(output).sort(), ['organization', 'user']);
    assert.deepEqual(Object.keys(output.organization).sort(), ['id', 'name', 'slug']);
    assert.deepEqual(Object.keys(output.user).sort(), ['email', 'id']);
    assert.equal(output.organization.name, 'Acme Widgets');
    assert.equal(output.organization.slug, 'acme-widgets');
    assert.equal(output.user.email, 'owner@acme.test');
    assert.equal(typeof output.organization.id, 'number');
    assert.equal(typeof output.user.id, 'number');
    const session = await login('owner@acme.test', 'a long password');
    assert.equal(session.status, 200);
    assert.equal(session.body.organization.id, output.organization.id);
  });

  test('without --password a generated password is printed once, and it works', async () => {
    const result = await kassa(
      ['merchant', 'create', '--org', 'Generated', '--email', 'gen@acme.test'],
      server.env,
    );
    assert.equal(result.code, 0, result.stderr);
    const output = JSON.parse(result.stdout) as MerchantOutput;
    assert.match(output.password ?? '', /^[0-9A-Za-z]{20}$/);
    assert.equal(result.stdout.split(output.password ?? '').length - 1, 1);
    assert.ok(!result.stderr.includes(output.password ?? ''));
    assert.equal((await login('gen@acme.test', output.password ?? '')).status, 200);
  });

  test('a second organization with the same name gets a distinct slug; an email already in use is refused', async () => {
    const first = [
      'merchant',
      'create',
      '--org',
      'Twin',
      '--email',
      'twin1@acme.test',
      '--password',
      'password-one',
    ];
    const created = [
      await kassa(first, server.env),
      await kassa(
        ['merchant', 'create', '--org', 'Twin', '--email', 'twin2@acme.test', '--password', 'password-two'],
        server.env,
      ),
    ];
    for (const result of created) assert.equal(result.code, 0, result.stderr);
    const slugs = created.map((result) => (JSON.parse(result.stdout) as MerchantOutput).organization.slug);
    assert.equal(slugs[0], 'twin');
    assert.match(slugs[1], /^twin-[0-9a-z]{6}$/);
    const again = await kassa(first, server.env);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /email: a user with this email already exists/);
  });

  test('bad input stops with exit code 1 and a message naming the problem, creating nothing', async () => {
    const cases: [string[], RegExp][] = [
      [['--org', 'Acme', '--email', 'dup@acme.test', '--password', 'short'], /password/],
      [['--org', 'Acme', '--email', 'not-an-email', '--password', 'long enough pw'], /email/],
      [['--email', 'noorg@acme.test', '--password', 'long enough pw'], /--org and --email/],
      [['--org', 'Acme', '--email', 'x@acme.test', '--colour', 'red'], /colour/],
    ];
    for (const [args, message] of cases) {
      const result = await kassa(['merchant', 'create', ...args], server.env);
      assert.equal(result.code, 1, args.join(' '));
      assert.match(result.stderr, message, args.join(' '));
      assert.equal(result.stdout, '');
    }
    const users = await server.ctx.db.selectFrom('users').select('email').execute();
    assert.ok(
      !users.some((user) => ['dup@acme.test', 'noorg@acme.test', 'x@acme.test'].includes(user.email)),
    );
  });

  test('a password longer than login accepts (1024 characters) is refused, not set on an owner who could never log in', async () => {
    const result = await kassa(
      ['merchant', 'create', '--org', 'Long', '--email', 'long@acme.test', '--password', 'x'.repeat(1025)],
      server.env,
    );
    assert.equal(result.code, 1, result.stdout);
    assert.match(result.stderr, /^kassa: password: must be at most 1024 characters\.$/m);
    assert.equal(result.stdout, '');
    const longest = await kassa(
      ['merchant', 'create', '--org', 'Long', '--email', 'longest@acme.test', '--password', 'y'.repeat(1024)],
      server.env,
    );
    assert.equal(longest.code, 0, longest.stderr);
    assert.equal((await login('longest@acme.test', 'y'.repeat(1024))).status, 200);
    const users = await server.ctx.db.selectFrom('users').select('email').execute();
    assert.ok(!users.some((user) => user.email === 'long@acme.test'));
  });

  test('a full password-hash queue stops it with one line and exit code 1, creating nothing', async () => {
    const result = await kassa(
      ['merchant', 'create', '--org', 'Busy', '--email', 'busy@acme.test', '--password', 'a long password'],
      fullHashQueueEnv(server.env),
    );
    assert.equal(result.code, 1, result.stdout);
    // The warning about a password on the command line, then the refusal: no stack trace.
    assert.deepEqual(result.stderr.trim().split('\n').slice(1), [
      'kassa: The service is busy checking passwords. Try again in a moment.',
    ]);
    assert.equal(result.stdout, '');
    const users = await server.ctx.db.selectFrom('users').select('email').execute();
    assert.ok(!users.some((user) => user.email === 'busy@acme.test'));
  });
});

describe('kassa migrate, demo, help and configuration errors', () => {
  let env: Record<string, string>;
  let cleanup: () => Promise<void>;
  before(async () => {
    ({ env, cleanup } = await testEnv());
  });
  after(() => cleanup());

  test('migrate applies every migration to a fresh database, then reports it up to date', async () => {
    const first = await kassa(['migrate'], env);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /^applied: 001_foundation, /);
    const second = await kassa(['migrate'], env);
    assert.equal(second.code, 0, second.stderr);
    assert.equal(second.stdout.trim(), 'database is up to date');
  });

  test('demo creates a merchant with a product and a sandbox key, and prints how to use them', async () => {
    const result = await kassa(['demo'], env);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /Sandbox key: kassa_test_[0-9A-Za-z]{40}/);
    assert.match(result.stdout, /Product: +prod_[0-9A-Za-z]{14}/);
    assert.match(result.stdout, /\/api\/auth\/login\//);
  });

  test('backup copies the SQLite database to a new file that opens with the data in it (pg_dump on PostgreSQL)', async () => {
    const target = join(env.KASSA_DATA_DIR, 'backup.sqlite');
    const result = await kassa(['backup', '--to', target], env);
    if (DB_KIND === 'postgres') {
      assert.equal(result.code, 1);
      assert.match(result.stderr, /pg_dump/);
      return;
    }
    assert.equal(result.code, 0, result.stderr);
    const copy = new DatabaseSync(target, { readOnly: true });
    const row = copy.prepare('select count(*) as n from organizations').get() as { n: number };
    copy.close();
    assert.ok(row.n >= 1);
    const again = await kassa(['backup', '--to', target], env);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /already exists/);
  });

  test('--help of every command prints its usage and exits 0', async () => {
    const names = Object.keys(commands);
    assert.ok(names.includes('merchant create') && names.includes('migrate') && names.includes('serve'));
    const results = await inPairs(names.map((name) => () => kassa([...name.split(' '), '--help'], env)));
    names.forEach((name, i) => {
      assert.equal(results[i].code, 0, `${name}: ${results[i].stderr}`);
      assert.match(results[i].stdout, new RegExp(`^Usage: kassa ${name}`), name);
      assert.ok(results[i].stdout.includes(commands[name].summary), name);
    });
  });

  test('kassa --help lists every command; an unknown command exits 1 with the usage', async () => {
    const help = await kassa(['--help'], env);
    assert.equal(help.code, 0);
    for (const name of Object.keys(commands)) assert.ok(help.stdout.includes(name), name);
    const unknown = await kassa(['frobnicate'], env);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /Unknown command "frobnicate"/);
    assert.match(unknown.stderr, /Usage: kassa/);
  });

  test('a bad environment variable stops the command with a message naming it', async () => {
    const cases: [string[], Record<string, string>, string][] = [
      [['migrate'], { KASSA_PORT: 'abc' }, 'KASSA_PORT'],
      [['serve'], { KASSA_PORT: '70000' }, 'KASSA_PORT'],
      [['migrate'], { KASSA_LOG_LEVEL: 'loud' }, 'KASSA_LOG_LEVEL'],
      [['migrate'], { KASSA_PUBLIC_URL: 'ftp://example.com' }, 'KASSA_PUBLIC_URL'],
      [['migrate'], { DATABASE_URL: 'mysql://localhost/kassa' }, 'DATABASE_URL'],
      [['merchant', 'create', '--org', 'A', '--email', 'a@a.test'], { KASSA_PORT: 'x' }, 'KASSA_PORT'],
    ];
    const results = await inPairs(
      cases.map(
        ([args, bad]) =>
          () =>
            kassa(args, { ...env, ...bad }),
      ),
    );
    cases.forEach(([args, , name], i) => {
      assert.equal(results[i].code, 1, `${args.join(' ')} with bad ${name}`);
      assert.match(results[i].stderr, new RegExp(`^kassa: ${name} `), results[i].stderr);
      assert.ok(!results[i].stderr.includes('    at '), 'a stack trace was printed');
    });
  });
});
