// The small adapter that lets Kysely's SQLite dialect run on Node's built-in `node:sqlite`.
// Kysely's SqliteDriver serialises every query and transaction on one connection, which is what
// makes the embedded mode safe: one writer, WAL readers, no second process. Prepared queries outside a
// transaction may skip it while no transaction is open on the connection (prepared.ts, connection.ts).
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import type { SqliteDatabase, SqliteStatement } from 'kysely';

type Param = null | number | bigint | string | Uint8Array;

function toParam(value: unknown): Param {
  if (value === undefined || value === null) return null;
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'string') return value;
  if (value instanceof Uint8Array) return value;
  if (value instanceof Date) return value.toISOString();
  return JSON.stringify(value);
}

const STATEMENT_CACHE_SIZE = 512;

export function openSqlite(file: string): SqliteDatabase & { raw: DatabaseSync } {
  const raw = new DatabaseSync(file);
  raw.exec('PRAGMA journal_mode = WAL');
  raw.exec('PRAGMA synchronous = NORMAL');
  raw.exec('PRAGMA foreign_keys = ON');
  raw.exec('PRAGMA busy_timeout = 5000');
  const cache = new Map<string, SqliteStatement>();

  function wrap(statement: StatementSync): SqliteStatement {
    return {
      reader: statement.columns().length > 0,
      all: (parameters) => statement.all(...parameters.map(toParam)),
      iterate: (parameters) => statement.iterate(...parameters.map(toParam)),
      run: (parameters) => {
        const result = statement.run(...parameters.map(toParam));
        return { changes: result.changes, lastInsertRowid: result.lastInsertRowid };
      },
    };
  }

  return {
    raw,
    close: () => {
      cache.clear();
      raw.close();
    },
    prepare: (sql) => {
      let statement = cache.get(sql);
      if (!statement) {
        statement = wrap(raw.prepare(sql));
        if (cache.size >= STATEMENT_CACHE_SIZE) {
          const oldest = cache.keys().next().value;
          if (oldest !== undefined) cache.delete(oldest);
        }
        cache.set(sql, statement);
      }
      return statement;
    },
  };
}
