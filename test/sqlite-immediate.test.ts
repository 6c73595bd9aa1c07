// Two processes writing one SQLite file (the server and `kassa payout complete`, the server and
// `kassa worker`): a transaction that reads, then writes, must wait for another process's write instead of
// failing. With a deferred BEGIN it cannot: once another process has committed since its read, its
// upgrade to a write fails at once (SQLITE_BUSY), whatever the busy timeout; a CI run failed that way in
// test/cli-operator.test.ts. Kassa begins every SQLite transaction IMMEDIATE (src/db/connection.ts).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { sql } from 'kysely';
import { openDatabase } from '../src/db/connection.ts';
import { PG_URL } from './helpers/server.ts';

const CONNECTION = resolve(import.meta.dirname, '../src/db/connection.ts');

/** The other process: reads the counter, says so, waits, then writes what it read + 1. */
const READ_THEN_WRITE = `
import { sql } from 'kysely';
const { openDatabase } = await import(process.env.CONNECTION);
const handle = openDatabase({ kind: 'sqlite', file: process.env.FILE });
try {
  await handle.db.transaction().execute(async (trx) => {
    const { rows } = await sql\`select n from counter where id = 1\`.execute(trx);
    process.stdout.write('read\\n');
    await new Promise((done) => setTimeout(done, 400));
    await sql\`update counter set n = \${rows[0].n + 1} where id = 1\`.execute(trx);
  });
  process.stdout.write('committed\\n');
} catch (error) {
  process.stdout.write('failed ' + error.message + '\\n');
} finally {
  await handle.close();
}
`;

test('a read-then-write transaction of another process waits for this one and neither fails', {
  skip: PG_URL ? 'SQLite only' : false,
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kassa-immediate-'));
  const file = join(dir, 'kassa.sqlite');
  const handle = openDatabase({ kind: 'sqlite', file });
  try {
    await sql`create table counter (id integer primary key, n integer not null)`.execute(handle.db);
    await sql`insert into counter (id, n) values (1, 0)`.execute(handle.db);

    const child = spawn(
      process.execPath,
      ['--disable-warning=ExperimentalWarning', '--input-type=module', '-e', READ_THEN_WRITE],
      { cwd: resolve(import.meta.dirname, '..'), env: { ...process.env, FILE: file, CONNECTION } },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const exited = new Promise<void>((done) => child.on('exit', () => done()));
    while (!output.includes('read') && child.exitCode === null)
      await new Promise((done) => setTimeout(done, 10));
    assert.ok(output.includes('read'), output);

    // This process writes while the other is between its read and its write. Here it waits for the
    // other's transaction (the busy timeout); with deferred BEGINs it would go first and the other fail.
    await handle.db.transaction().execute(async (trx) => {
      await sql`update counter set n = n + 10 where id = 1`.execute(trx);
    });
    await exited;
    assert.match(output, /committed/, output);
    const { rows } = await sql<{ n: number }>`select n from counter where id = 1`.execute(handle.db);
    assert.equal(Number(rows[0].n), 11, 'both increments kept, in order');
  } finally {
    await handle.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
