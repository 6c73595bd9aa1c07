// Operations: PORT and HOST as platforms set them, the public URL following the port, and a port
// already in use reported in one line (exit 1), with the real `kassa` command.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../src/config.ts';
import { openAndMigrate } from '../src/db/connection.ts';
import { kassa, startKassa } from './helpers/cli.ts';
import { freePort, testEnv } from './helpers/server.ts';

describe('PORT, HOST and the public URL', () => {
  let env: Record<string, string>;
  let cleanup: () => Promise<void>;
  before(async () => {
    ({ env, cleanup } = await testEnv());
    // The operator's variables only: no KASSA_PORT, KASSA_HOST or KASSA_PUBLIC_URL.
    delete env.KASSA_PORT;
    delete env.KASSA_HOST;
    delete env.KASSA_LOG_LEVEL;
  });
  after(() => cleanup());

  test('kassa serve listens on PORT and HOST, and checkout URLs name that port', async () => {
    const port = await freePort();
    const demo = await kassa(['demo'], { ...env, PORT: String(port) });
    assert.equal(demo.code, 0, demo.stderr);
    assert.match(demo.stdout, new RegExp(`http://localhost:${port}/dashboard/`));
    const key = /Sandbox key: (kassa_test_\w+)/.exec(demo.stdout)?.[1];
    assert.ok(key, demo.stdout);

    const server = await startKassa(
      ['serve'],
      { ...env, PORT: String(port), HOST: '127.0.0.1' },
      /listening on/,
    );
    try {
      assert.match(server.stderr(), new RegExp(`kassa: listening on http://127\\.0\\.0\\.1:${port}`));
      const health = await fetch(`http://127.0.0.1:${port}/healthz`);
      assert.equal(health.status, 200);
      const created = await fetch(`http://127.0.0.1:${port}/sandbox/api/checkout/create/`, {
        method: 'POST',
        headers: { authorization: `Api-Key ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          billing_country: 'FR',
          billing_first_name: 'Ada',
          billing_last_name: 'Lovelace',
          billing_email: 'ada@example.com',
          products: [{ name: 'Widget', unit_price: 5 }],
        }),
      });
      const body = (await created.json()) as { checkout_url: string };
      assert.equal(created.status, 201, JSON.stringify(body));
      assert.ok(body.checkout_url.startsWith(`http://localhost:${port}/checkout/`), body.checkout_url);

      // A second server on the same port: one line naming the port and the variable, exit 1.
      const second = await kassa(['serve'], { ...env, PORT: String(port), HOST: '127.0.0.1' });
      assert.equal(second.code, 1);
      assert.equal(
        second.stderr.trim(),
        `kassa: port ${port} on 127.0.0.1 is already in use: set PORT to another port.`,
      );
      const third = await kassa(['serve'], { ...env, KASSA_PORT: String(port), KASSA_HOST: '127.0.0.1' });
      assert.equal(third.code, 1);
      assert.match(third.stderr.trim(), /^kassa: port \d+ on 127\.0\.0\.1 is already in use: set KASSA_PORT/);
      assert.equal(third.stderr.trim().split('\n').length, 1);
    } finally {
      assert.equal(await server.stop(), 0);
    }
  });
});

test('the data directory is created 0700, and the SQLite database with its WAL files 0600', async () => {
  const parent = mkdtempSync(join(tmpdir(), 'kassa-perms-'));
  try {
    const dataDir = join(parent, 'data');
    const config = loadConfig({ KASSA_DATA_DIR: dataDir });
    assert.equal(statSync(dataDir).mode & 0o777, 0o700);
    assert.equal(statSync(join(dataDir, 'secret.key')).mode & 0o777, 0o600);
    assert.equal(config.database.kind, 'sqlite');
    const handle = await openAndMigrate(config.database);
    try {
      for (const file of ['kassa.sqlite', 'kassa.sqlite-wal', 'kassa.sqlite-shm'])
        assert.equal(statSync(join(dataDir, file)).mode & 0o777, 0o600, file);
    } finally {
      await handle.close();
    }
  } finally {
    rmSync(parent, { recursive: true, force: true });
  }
});
