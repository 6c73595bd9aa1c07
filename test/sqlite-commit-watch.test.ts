// On SQLite the worker hears of another process's commits by watching the write-ahead log; its own
// commits are signalled where they happen, so the watch must not report them again: woken at each of
// the API's own commits, the worker ran a claim (a write on SQLite) for nothing at every request, which
// cost checkout creation about 5 % of its CPU in `npm run bench`. The other connection here is a second
// connection on the same file, as another process's would be.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { test } from 'node:test';
import { sql } from 'kysely';
import { openDatabase } from '../src/db/connection.ts';
import { SQLITE_RECHECK_MS, watchSqliteCommits } from '../src/db/listen.ts';
import { PG_URL } from './helpers/server.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Longer than the kernel's report of a write plus the watch's second look. */
const SETTLE_MS = SQLITE_RECHECK_MS * 10;

test("the log watch reports another connection's commits and not this process's own", {
  skip: PG_URL ? 'SQLite only' : false,
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kassa-watch-'));
  const file = join(dir, 'kassa.sqlite');
  const handle = openDatabase({ kind: 'sqlite', file });
  const other = new DatabaseSync(file);
  const committedElsewhere = handle.outbox.committedElsewhere;
  assert.ok(committedElsewhere, 'SQLite gives the watch a way to tell commits apart');
  let changes = 0;
  const watch = watchSqliteCommits(file, committedElsewhere, () => changes++);
  try {
    await sql`create table t (n integer)`.execute(handle.db);
    await sleep(SETTLE_MS);
    assert.equal(changes, 0, 'this process created a table: no news');

    for (let n = 0; n < 5; n++) await sql`insert into t values (${n})`.execute(handle.db);
    await handle.db.transaction().execute(async (trx) => {
      await sql`insert into t values (10)`.execute(trx);
    });
    await sleep(SETTLE_MS);
    assert.equal(changes, 0, "this process's own commits are not reported");

    other.exec('insert into t values (20)');
    await sleep(SETTLE_MS);
    assert.ok(changes >= 1, "another connection's commit is reported");

    const before = changes;
    await sql`insert into t values (30)`.execute(handle.db);
    await sleep(SETTLE_MS);
    assert.equal(changes, before, 'and afterwards this process is quiet again');

    // Asked directly: the other connection's commit is news once.
    other.exec('insert into t values (40)');
    assert.equal(committedElsewhere(), true);
    assert.equal(committedElsewhere(), false);
  } finally {
    await watch.close();
    other.close();
    await handle.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
