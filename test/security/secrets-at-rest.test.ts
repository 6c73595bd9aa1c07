// #14 finding 9: idempotency records kept raw checkout tokens for 24 hours, the data directory was 0755
// and the database 0644. Stored answers are now encrypted, the data directory is 0700 and the database
// files (and backups) 0600.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { billing, type Json } from '../helpers/checkout.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  DB_KIND,
  startTestServer,
  type TestServer,
} from '../helpers/server.ts';

const mode = (path: string) => statSync(path).mode & 0o777;

describe(`security #9: secrets at rest (${DB_KIND})`, () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ worker: false });
  });
  after(() => server.close());

  test('an idempotency record never holds the raw checkout token, and the replay still returns it', async () => {
    const apiKey = await createTestKey(server, await createTestMerchant(server));
    const body = { products: [{ name: 'Lamp', unit_price: 30 }], ...billing() };
    const headers = { 'idempotency-key': 'order-77' };
    const first = await call<Json>(server, 'POST', '/api/checkout/create/', { apiKey, body, headers });
    assert.equal(first.status, 201);
    const token = first.body.token as string;
    const rows = await server.ctx.db.selectFrom('idempotency_keys').selectAll().execute();
    assert.ok(rows.length > 0);
    for (const row of rows) assert.ok(!JSON.stringify(row).includes(token), 'the raw token is stored');
    const replay = await call<Json>(server, 'POST', '/api/checkout/create/', { apiKey, body, headers });
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(replay.body.token, token);
  });

  test('the data directory is 0700; secret key, database files and backups are 0600', () => {
    // A data directory the service creates itself, with the key it generates there.
    const fresh = join(mkdtempSync(join(tmpdir(), 'kassa-perms-')), 'data');
    try {
      loadConfig({ KASSA_DATA_DIR: fresh });
      assert.equal(mode(fresh), 0o700);
      assert.equal(mode(join(fresh, 'secret.key')), 0o600);
    } finally {
      rmSync(join(fresh, '..'), { recursive: true, force: true });
    }
    const dataDir = server.env.KASSA_DATA_DIR;
    if (DB_KIND !== 'sqlite') return;
    assert.equal(mode(dataDir), 0o700);
    for (const file of ['kassa.sqlite', 'kassa.sqlite-wal', 'kassa.sqlite-shm']) {
      const path = join(dataDir, file);
      if (existsSync(path)) assert.equal(mode(path), 0o600, file);
    }
    const outDir = mkdtempSync(join(tmpdir(), 'kassa-backup-'));
    try {
      const target = join(outDir, 'backup.sqlite');
      const cli = spawnSync(
        process.execPath,
        ['--disable-warning=ExperimentalWarning', 'src/cli/main.ts', 'backup', '--to', target],
        { env: { ...process.env, ...server.env }, encoding: 'utf8', timeout: 90_000 },
      );
      assert.equal(cli.status, 0, cli.stderr);
      assert.equal(mode(target), 0o600);
    } finally {
      rmSync(outDir, { recursive: true, force: true });
    }
  });
});
