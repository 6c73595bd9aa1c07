// Opens the database the configuration names and runs the migrations.
import { dirname } from 'node:path';
import { Kysely, PostgresAdapter, PostgresDialect, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import type { Config, DatabaseKind } from '../config.ts';
import type { Database, Executor } from './database.ts';
import { migrateToLatest } from './migrate.ts';
import { OutboxSignal, signallingDialect } from './outbox-signal.ts';
import { nameHotStatements, registerDirectPath } from './prepared.ts';
import { ensurePrivateDatabase, ensurePrivateDir } from './private-files.ts';
import { openSqlite } from './sqlite-driver.ts';

// int8 (COUNT, bigserial ids, minor units) as JS numbers: every value we store is far below 2^53.
pg.types.setTypeParser(20, (value) => Number(value));

export interface DbHandle {
  db: Kysely<Database>;
  kind: DatabaseKind;
  /** Called after each commit of this process that wrote events or deliveries: the worker's wake-up. */
  outbox: OutboxSignal;
  close(): Promise<void>;
}

export function openDatabase(config: Config['database']): DbHandle {
  if (config.kind === 'sqlite') {
    ensurePrivateDir(dirname(config.file));
    ensurePrivateDatabase(config.file);
    const database = openSqlite(config.file);
    const outbox = new OutboxSignal();
    // PRAGMA data_version changes when another connection commits, never for this one's commits.
    const dataVersion = database.raw.prepare('PRAGMA data_version');
    const readVersion = () => Number((dataVersion.get() as { data_version: number }).data_version);
    let seenVersion = readVersion();
    outbox.committedElsewhere = () => {
      let version: number;
      try {
        version = readVersion();
      } catch {
        return false; // closed: nothing to wake for
      }
      if (version === seenVersion) return false;
      seenVersion = version;
      return true;
    };
    // BEGIN IMMEDIATE: a transaction takes the write lock when it begins, waiting for it up to the busy
    // timeout. A deferred BEGIN that reads first and writes later cannot wait: if another process (the
    // CLI, a worker) wrote in between, its upgrade to a write fails at once with SQLITE_BUSY. In one
    // process nothing changes (Kysely runs one transaction at a time on the single connection).
    const db = new Kysely<Database>({
      dialect: signallingDialect(new SqliteDialect({ database }), outbox, { begin: 'begin immediate' }),
    });
    registerDirectPath(db, async (text, _name, values) => {
      // Synchronous from here to the answer: no other statement can run in between. Anything but a
      // plain `false` (a Node without DatabaseSync.isTransaction) goes through Kysely's mutex.
      if (database.raw.isTransaction !== false) return null;
      outbox.statements++;
      const statement = database.prepare(text);
      if (statement.reader) return statement.all(values) as unknown[];
      statement.run(values);
      return [];
    });
    return { db, kind: 'sqlite', outbox, close: () => db.destroy() };
  }
  const pool = new pg.Pool({
    connectionString: config.url,
    max: config.poolSize,
    // Connections idle for up to five minutes stay open (pg's default closes them after 10 s): the first
    // statements after a quiet moment, a webhook worker's claim above all, would otherwise wait for a new
    // backend and parse and plan every named statement again on it (12-39 ms for the first claims of the
    // bench's latency measurement, against 1-2 ms warm).
    idleTimeoutMillis: 300_000,
    options: config.schema ? `-c search_path=${config.schema}` : undefined,
  });
  if (config.namedStatements) pool.on('connect', nameHotStatements);
  const outbox = new OutboxSignal();
  // The backends of this pool, whose NOTIFYs are of commits this process signals itself (ownCommit).
  const backend = (client: pg.PoolClient) => (client as { processID?: number | null }).processID ?? null;
  pool.on('connect', (client) => {
    const id = backend(client);
    if (id !== null) outbox.ownBackends.add(id);
  });
  pool.on('remove', (client) => {
    const id = backend(client);
    if (id !== null) outbox.ownBackends.delete(id);
  });
  // Writes handed to deferWrite in a transaction go to the server with its next statement (write-behind.ts).
  const dialect = signallingDialect(new PostgresDialect({ pool }), outbox, { writeBehind: true });
  const db = new Kysely<Database>({ dialect });
  registerDirectPath(db, async (text, name, values) => {
    outbox.statements++;
    const query = config.namedStatements && name !== undefined ? { name, text, values } : { text, values };
    return (await pool.query(query)).rows;
  });
  return { db, kind: 'postgres', outbox, close: () => db.destroy() };
}

/** Opens the database and brings it to the latest migration; `applied` names the migrations run now. */
export async function openAndMigrate(config: Config['database']): Promise<DbHandle & { applied: string[] }> {
  if (config.kind === 'postgres' && config.schema) {
    const bootstrap = new pg.Client({ connectionString: config.url });
    await bootstrap.connect();
    try {
      await bootstrap.query(`CREATE SCHEMA IF NOT EXISTS ${config.schema}`);
    } finally {
      await bootstrap.end();
    }
  }
  const handle = openDatabase(config);
  try {
    return { ...handle, applied: await migrateToLatest(handle.db, handle.kind) };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

export function isPostgres(db: Executor): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

export async function ping(db: Executor): Promise<void> {
  await sql`select 1`.execute(db);
}
