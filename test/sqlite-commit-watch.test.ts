// On SQLite the worker hears of another process's commits by watching the write-ahead log; its own
// commits are signalled where they happen, so the watch must not report them again: woken at each of
// the API's own commits, the worker ran a claim (a write on SQLite) for nothing at every request, which
// cost checkout creation about 5 % of its CPU in `npm run bench`. The other connection here is a second
// connection on the same file, as another process's would be.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { test } from 'node:test';
import { sql } from 'kysely';
import { openDatabase } from '../src/db/connection.ts';
import { SQLITE_RECHECKS_MS, watchSqliteCommits } from '../src/db/listen.ts';
import { PG_URL } from './helpers/server.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Longer than the kernel's report of a write plus the watch's second look. */
const SETTLE_MS = SQLITE_RECHECKS_MS[0] * 10;

type Handle = ReturnType<typeof openDatabase>;

/**
 * A database file, this process's connection to it, another connection on the same file (as another
 * process's would be) and a watch on it; `looks` may stand between the watch and data_version. With
 * `link`, the file is opened and watched by the name of a symbolic link to it, in another directory.
 */
async function withWatch(
  options: { looks?: (committedElsewhere: () => boolean) => () => boolean; link?: boolean },
  body: (watched: {
    handle: Handle;
    other: DatabaseSync;
    changes: () => number;
    reset(): void;
  }) => Promise<void>,
) {
  const dir = mkdtempSync(join(tmpdir(), 'kassa-watch-'));
  let file = join(dir, 'kassa.sqlite');
  if (options.link) {
    mkdirSync(join(dir, 'data'));
    mkdirSync(join(dir, 'elsewhere'));
    symlinkSync(join(dir, 'elsewhere', 'real.sqlite'), join(dir, 'data', 'kassa.sqlite'));
    file = join(dir, 'data', 'kassa.sqlite');
  }
  const handle = openDatabase({ kind: 'sqlite', file });
  const other = new DatabaseSync(file);
  const committedElsewhere = handle.outbox.committedElsewhere;
  assert.ok(committedElsewhere, 'SQLite gives the watch a way to tell commits apart');
  let changes = 0;
  const looks = options.looks ? options.looks(committedElsewhere) : committedElsewhere;
  const watch = watchSqliteCommits(file, looks, () => changes++);
  try {
    await body({
      handle,
      other,
      changes: () => changes,
      reset: () => {
        changes = 0;
      },
    });
  } finally {
    await watch.close();
    other.close();
    await handle.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

test(
  "the log watch reports another connection's commits and not this process's own",
  {
    skip: PG_URL ? 'SQLite only' : false,
  },
  () =>
    withWatch({}, async ({ handle, other, changes: count }) => {
      await sql`create table t (n integer)`.execute(handle.db);
      await sleep(SETTLE_MS);
      assert.equal(count(), 0, 'this process created a table: no news');

      for (let n = 0; n < 5; n++) await sql`insert into t values (${n})`.execute(handle.db);
      await handle.db.transaction().execute(async (trx) => {
        await sql`insert into t values (10)`.execute(trx);
      });
      await sleep(SETTLE_MS);
      assert.equal(count(), 0, "this process's own commits are not reported");

      other.exec('insert into t values (20)');
      await sleep(SETTLE_MS);
      assert.ok(count() >= 1, "another connection's commit is reported");

      const before = count();
      await sql`insert into t values (30)`.execute(handle.db);
      await sleep(SETTLE_MS);
      assert.equal(count(), before, 'and afterwards this process is quiet again');

      // Asked directly: the other connection's commit is news once.
      other.exec('insert into t values (40)');
      assert.equal(handle.outbox.committedElsewhere?.(), true);
      assert.equal(handle.outbox.committedElsewhere?.(), false);
    }),
);

test('a commit published after the log changed is still reported, by a later look', {
  skip: PG_URL ? 'SQLite only' : false,
}, () => {
  // The other writer's commit is not visible to data_version until this long after its write of the
  // log (a writer preempted, or syncing, between the two): the first two looks see nothing.
  const publishedAfterMs = SQLITE_RECHECKS_MS[0] * 3;
  let hiddenUntil = 0;
  const looks = (committedElsewhere: () => boolean) => () =>
    Date.now() < hiddenUntil ? false : committedElsewhere();
  return withWatch({ looks }, async ({ handle, other, changes, reset }) => {
    await sql`create table t (n integer)`.execute(handle.db);
    await sleep(SETTLE_MS);
    reset();
    hiddenUntil = Date.now() + publishedAfterMs;
    other.exec('create table u (n integer)');
    await sleep(SQLITE_RECHECKS_MS[SQLITE_RECHECKS_MS.length - 1] + SETTLE_MS);
    assert.equal(changes(), 1, 'reported once, by a look after the commit was published');
  });
});

test(
  'a database file named through a symbolic link is watched where its log is',
  {
    skip: PG_URL ? 'SQLite only' : false,
  },
  () =>
    withWatch({ link: true }, async ({ handle, other, changes }) => {
      await sql`create table t (n integer)`.execute(handle.db);
      await sleep(SETTLE_MS);
      assert.equal(changes(), 0);
      other.exec('insert into t values (1)');
      await sleep(SETTLE_MS);
      assert.ok(changes() >= 1, "another connection's commit is reported");
    }),
);
