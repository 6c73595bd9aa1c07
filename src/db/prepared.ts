// Hot-path queries built once. Kysely builds and compiles a query on every call, which took about a
// tenth of the CPU of `GET /transactions/{id}/` in `npm run bench`. A prepared query is written with the
// same typed builder; the first call on each dialect builds it with placeholders and compiles it, and
// every later call only swaps in its parameters. The SQL cannot depend on the parameters' values: a
// builder that branches on them must be split into one prepared query per branch.
import type { Compilable, CompiledQuery, Insertable, Selectable } from 'kysely';
import { isPostgres } from './connection.ts';
import type { Database, Executor } from './database.ts';
import { writesOutbox } from './outbox-signal.ts';

/**
 * On PostgreSQL the prepared queries also go by name: the SQL of each, once compiled, gets a name here,
 * and each pool connection sends it as a named statement (`nameHotStatements`), which PostgreSQL parses
 * and plans once per connection instead of at every call. KASSA_DB_NAMED_STATEMENTS=false turns this
 * off (a pooler in transaction mode without prepared-statement support needs that).
 */
const statementNames = new Map<string, string>();

/**
 * Every other statement with parameters is named too when its SQL is sent a second time:
 * the statements Kysely builds for a payment, a refund or the worker's outcomes have the same SQL at
 * every call (values go as parameters), so PostgreSQL parses and plans them once per connection as
 * well. Not named (NOT_AUTO_NAMED):
 * - statements without parameters (BEGIN, COMMIT, DDL);
 * - SQL whose text grows with a batch (several rows of VALUES, a list of parameters after IN), and any
 *   SQL longer than AUTO_NAME_MAX_LENGTH: each size would take a name of its own;
 * - SQL that selects or returns `*`: its columns are fixed when it is prepared, and a process still
 *   running when a migration adds a column would fail it at every call ("cached plan must not change
 *   result type") until it restarts, where unnamed it goes on working;
 * - any new SQL once AUTO_NAME_MAX have been named (each connection keeps each named statement and its
 *   plan). The SQL seen once is forgotten when AUTO_NAME_CANDIDATES are waiting.
 */
const AUTO_NAME_MAX_LENGTH = 4096;
const AUTO_NAME_MAX = 300;
const AUTO_NAME_CANDIDATES = 2000;
/** SQL that reads `*`: never named, a prepared query's no more than repeated SQL (the reason above). */
const READS_EVERY_COLUMN = /\bselect (distinct )?\*|\.\*|\breturning \*/i;
const NOT_AUTO_NAMED = new RegExp(`\\)\\s*,\\s*\\(|\\bin \\(\\$\\d+\\s*,|${READS_EVERY_COLUMN.source}`, 'i');
const seenOnce = new Set<string>();
/** SQL found not to be named (NOT_AUTO_NAMED), so that it is not searched again at every call. */
const notNamed = new Set<string>();
let autoNamed = 0;

/** The name `text` goes by: a prepared query's, or one given once it is seen again (above). */
export function statementName(text: string, parameters: number): string | undefined {
  const name = statementNames.get(text);
  if (name !== undefined || parameters === 0 || text.length > AUTO_NAME_MAX_LENGTH) return name;
  if (notNamed.has(text)) return undefined;
  if (NOT_AUTO_NAMED.test(text)) {
    if (notNamed.size >= AUTO_NAME_CANDIDATES) notNamed.clear();
    notNamed.add(text);
    return undefined;
  }
  if (autoNamed >= AUTO_NAME_MAX) return undefined;
  if (!seenOnce.has(text)) {
    if (seenOnce.size >= AUTO_NAME_CANDIDATES) seenOnce.clear();
    seenOnce.add(text);
    return undefined;
  }
  seenOnce.delete(text);
  autoNamed++;
  const given = `kassa_${statementNames.size + 1}`;
  statementNames.set(text, given);
  return given;
}

/**
 * A flush of the writes a transaction held back (write-behind.ts) is one statement made of several
 * writes, the same SQL each time the same code runs: it is named at its second sight as well, from a
 * budget of its own (FLUSH_NAME_MAX, so that flushes never take the names other SQL would get), even
 * when a part has a list after IN or a few rows of VALUES: their sizes come from the code (a
 * settlement's two or three entries), and the budget bounds the variants. Not named: SQL that reads `*`
 * or is longer than AUTO_NAME_MAX_LENGTH, as above.
 */
const FLUSH_NAME_MAX = 100;
const flushesSeenOnce = new Set<string>();
let flushesNamed = 0;

/** Names the SQL of a flush (above) when it is seen the second time. */
export function nameFlush(text: string): void {
  if (statementNames.has(text) || flushesNamed >= FLUSH_NAME_MAX) return;
  if (text.length > AUTO_NAME_MAX_LENGTH || READS_EVERY_COLUMN.test(text)) return;
  if (!flushesSeenOnce.has(text)) {
    if (flushesSeenOnce.size >= AUTO_NAME_CANDIDATES) flushesSeenOnce.clear();
    flushesSeenOnce.add(text);
    return;
  }
  flushesSeenOnce.delete(text);
  flushesNamed++;
  statementNames.set(text, `kassa_${statementNames.size + 1}`);
}

type QueryFunction = (...args: unknown[]) => unknown;

/** Makes `client` send SQL by name (pg's `{ name, text, values }`): prepared queries' and repeated SQL. */
export function nameHotStatements(client: { query: QueryFunction }): void {
  const query = client.query.bind(client) as QueryFunction;
  client.query = (...args: unknown[]) => {
    const [text, values] = args;
    const name =
      args.length === 2 && typeof text === 'string' && Array.isArray(values)
        ? statementName(text, values.length)
        : undefined;
    return name === undefined ? query(...args) : query({ name, text, values });
  };
}

/**
 * A prepared query run on the database itself (not in a transaction) goes straight to the driver,
 * without Kysely's executor around it (a connection provider, a driver wrapper and several promise hops:
 * about 5 µs of CPU and a tenth of the garbage of `GET /transactions/{id}/`). On PostgreSQL that is
 * `pool.query` with the statement's name. On SQLite it is the one connection's cached statement, run
 * synchronously, and only while that connection is in no transaction (another request's, between two of
 * its statements, which Kysely's connection mutex orders): then the path answers null and the query
 * goes through Kysely. A transaction's statements always go through Kysely, on its connection.
 */
export type DirectQuery = (
  text: string,
  name: string | undefined,
  values: unknown[],
) => Promise<unknown[] | null>;
const directPaths = new WeakMap<object, DirectQuery>();

/** Lets prepared queries on `db` (the root Kysely instance, PostgreSQL or SQLite) run through `run`. */
export function registerDirectPath(db: object, run: DirectQuery): void {
  directPaths.set(db, run);
}

/** A placeholder no real parameter can equal: NUL is refused in every request and never stored. */
const SLOT = '\u0000kassa-slot:';

interface Compiled {
  query: CompiledQuery<unknown>;
  /** May take the direct path (no insert the outbox signal must see). */
  direct: boolean;
  /** For each compiled parameter, the argument it takes, or -1 for a constant the builder wrote itself. */
  slots: number[];
}

export interface PreparedQuery<Args extends unknown[], Row> {
  all(db: Executor, ...args: Args): Promise<Row[]>;
  first(db: Executor, ...args: Args): Promise<Row | undefined>;
}

export function prepareQuery<Args extends unknown[], Row>(
  arity: Args['length'],
  build: (db: Executor, ...args: Args) => Compilable<Row>,
): PreparedQuery<Args, Row> {
  const byDialect = new Map<'postgres' | 'sqlite', Compiled>();

  function compiledFor(db: Executor): Compiled {
    const dialect = isPostgres(db) ? 'postgres' : 'sqlite';
    let compiled = byDialect.get(dialect);
    if (!compiled) {
      const placeholders = Array.from({ length: arity }, (_, index) => `${SLOT}${index}`) as Args;
      const query = build(db, ...placeholders).compile() as CompiledQuery<unknown>;
      const slots = query.parameters.map((value) =>
        typeof value === 'string' && value.startsWith(SLOT) ? Number(value.slice(SLOT.length)) : -1,
      );
      compiled = { query, slots, direct: !writesOutbox(query) };
      byDialect.set(dialect, compiled);
      if (dialect === 'postgres' && !statementNames.has(query.sql) && !READS_EVERY_COLUMN.test(query.sql))
        statementNames.set(query.sql, `kassa_${statementNames.size + 1}`);
    }
    return compiled;
  }

  async function all(db: Executor, ...args: Args): Promise<Row[]> {
    const { query, slots, direct } = compiledFor(db);
    const parameters = slots.map((slot, index) => (slot === -1 ? query.parameters[index] : args[slot]));
    const run = direct ? directPaths.get(db) : undefined;
    const rows = run ? await run(query.sql, statementNames.get(query.sql), parameters) : null;
    if (rows !== null) return rows as Row[];
    const result = await db.executeQuery<Row>({ ...query, parameters } as CompiledQuery<Row>);
    return result.rows;
  }

  return {
    all,
    first: async (db, ...args) => (await all(db, ...args))[0],
  };
}

/**
 * An INSERT of a fixed set of columns, prepared like the queries above; `insert` takes the row and
 * returns the columns named in `returning`.
 */
export function prepareInsert<
  Table extends keyof Database & string,
  Column extends keyof Insertable<Database[Table]> & string,
>(
  table: Table,
  columns: readonly Column[],
  returning: readonly (keyof Selectable<Database[Table]> & string)[],
) {
  const query = prepareQuery(columns.length, (db, ...values: unknown[]) =>
    db
      .insertInto(table)
      .values(Object.fromEntries(columns.map((column, index) => [column, values[index]])) as never)
      .returning(returning as never),
  );
  return {
    async insert(db: Executor, row: Pick<Insertable<Database[Table]>, Column>) {
      const inserted = await query.first(db, ...columns.map((column) => row[column]));
      if (!inserted) throw new Error(`INSERT INTO ${table} returned no row.`);
      return inserted as Record<string, unknown>;
    },
  };
}
