// A dedicated PostgreSQL connection that LISTENs on the outbox channel of the schema it sees (named
// after it: outboxChannel) and calls `onNotify` for every NOTIFY (a commit that wrote events or
// deliveries to send, in any process: the triggers of migration 017). If the connection drops it is
// opened again with a growing delay; `onNotify` is also called on each (re)connection, since commits may
// have gone unheard meanwhile (the worker's safety poll covers the gap as well).
import { type FSWatcher, realpathSync, watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import pg from 'pg';
import { type OutboxWrite, outboxChannel } from './outbox-signal.ts';

const FIRST_RETRY_MS = 100;
const MAX_RETRY_MS = 10_000;

export interface OutboxListener {
  /**
   * Whether every commit that writes outbox rows, in any process, is heard now (PostgreSQL: the LISTEN
   * connection is up; each such commit NOTIFYs, migration 017). SQLite's log watch answers no: the
   * kernel may report a write before the commit is visible, so it is rechecked for a while only.
   */
  hearsEveryCommit(): boolean;
  close(): Promise<void>;
}

export function listenForOutbox(
  database: { url: string; schema: string | null },
  /** `processId`: the backend that sent the NOTIFY (none on a (re)connection's call). */
  onNotify: (wrote: OutboxWrite, processId?: number) => void,
  onError: (error: unknown) => void = () => {},
): OutboxListener {
  let closed = false;
  let client: pg.Client | null = null;
  let retryMs = FIRST_RETRY_MS;
  let retryTimer: NodeJS.Timeout | null = null;
  /** LISTEN is in place on the current connection (set after it, cleared when the connection is lost). */
  let listening = false;

  const retry = () => {
    if (closed || retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = null;
      void connect();
    }, retryMs);
    retryMs = Math.min(retryMs * 2, MAX_RETRY_MS);
  };

  const connect = async () => {
    // The schema as the pool's connections see it (connection.ts): the channel is named after it.
    const current = new pg.Client({
      connectionString: database.url,
      options: database.schema ? `-c search_path=${database.schema}` : undefined,
    });
    let channel: string | null = null;
    client = current;
    const lost = (error?: unknown) => {
      if (client !== current) return;
      client = null;
      listening = false;
      if (error !== undefined && !closed) onError(error);
      void current.end().catch(() => {});
      retry();
    };
    current.on('error', lost);
    current.on('end', () => lost());
    current.on('notification', (message) => {
      // The triggers' payload is the table written (017): `events`, or `webhook_deliveries`.
      if (message.channel === channel)
        onNotify(message.payload === 'events' ? 'events' : 'deliveries', message.processId);
    });
    try {
      await current.connect();
      const schema = await current.query<{ schema: string | null }>('select current_schema() as schema');
      const name = schema.rows[0]?.schema;
      if (!name) throw new Error('No schema is current for the outbox LISTEN: check search_path.');
      channel = outboxChannel(name);
      await current.query(`LISTEN ${current.escapeIdentifier(channel)}`);
      if (closed) {
        await current.end();
        return;
      }
      retryMs = FIRST_RETRY_MS;
      listening = client === current;
      onNotify('unknown');
    } catch (error) {
      lost(error);
    }
  };

  void connect();
  return {
    hearsEveryCommit: () => listening && !closed,
    async close() {
      closed = true;
      listening = false;
      if (retryTimer) clearTimeout(retryTimer);
      const current = client;
      client = null;
      await current?.end().catch(() => {});
    },
  };
}

/**
 * After a change of the log that `committedElsewhere` did not see as another connection's commit, it is
 * asked again this long after the latest such change (each time only while the answer is still no): the
 * kernel may report the other process's write of the log before that process has published the commit
 * in the log's index, which is what data_version reads, and a writer preempted or syncing in between may
 * take longer than the first look (helper-27's review). Nothing else would wake the worker before its
 * safety poll.
 */
export const SQLITE_RECHECKS_MS = [20, 100, 500] as const;

/** The file a path names, links followed (the path itself if it cannot be resolved). */
function realFile(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return file;
  }
}

/**
 * SQLite has no NOTIFY: a commit by another process on the same file is seen as a change to the file's
 * write-ahead log (`<file>-wal`), which the kernel reports (inotify on Linux) without any polling. The
 * directory is watched, not the log itself, since the log may not exist yet. This process's own commits
 * change the log too; `committedElsewhere` (PRAGMA data_version on this process's connection) tells them
 * apart, so that only another connection's commit calls `onChange`: woken at each of its own commits,
 * the worker ran a claim (a write on SQLite) for nothing at every API write. A watcher that fails is
 * closed, and the safety poll covers the rest.
 */
export function watchSqliteCommits(
  file: string,
  committedElsewhere: () => boolean,
  onChange: () => void,
): OutboxListener {
  // SQLite follows a symbolic link to the database, and keeps its log beside the file it points to.
  const real = realFile(file);
  const names = new Set([basename(real), `${basename(real)}-wal`]);
  let watcher: FSWatcher | null = null;
  let recheck: NodeJS.Timeout | null = null;
  // `step`: the recheck this is (-1: a change of the log). Rechecks count from the latest change that
  // said no, not from the first of several.
  const check = (step: number) => {
    if (recheck) clearTimeout(recheck);
    recheck = null;
    if (committedElsewhere()) {
      onChange();
      return;
    }
    const next = step + 1;
    if (next < SQLITE_RECHECKS_MS.length)
      recheck = setTimeout(
        () => check(next),
        SQLITE_RECHECKS_MS[next] - (next === 0 ? 0 : SQLITE_RECHECKS_MS[next - 1]),
      ).unref();
  };
  try {
    watcher = watch(dirname(real), { persistent: false }, (_event, name) => {
      if (name !== null && names.has(name)) check(-1);
    });
    watcher.on('error', () => {
      watcher?.close();
      watcher = null;
    });
  } catch {
    watcher = null;
  }
  return {
    hearsEveryCommit: () => false,
    async close() {
      if (recheck) clearTimeout(recheck);
      recheck = null;
      watcher?.close();
      watcher = null;
    },
  };
}
