// Write-behind inside a transaction, on PostgreSQL. A write whose result its caller does not use (no
// RETURNING, no count of rows, no error it catches) is handed over with `deferWrite` instead of being
// run: the transaction's connection holds it back and sends everything it holds as ONE statement of
// data-modifying CTEs (`WITH w2 AS (UPDATE …), w1 AS (INSERT …) SELECT 1`) right before the next
// statement of the transaction, whatever it is, and before COMMIT (outbox-signal.ts, whose connection
// wrapper every statement passes through, so no path can forget the flush). So every read sees the
// transaction's own writes, and a write that fails makes the transaction fail before anything after it
// is sent, its error rolling the whole transaction back as it would have at the call site (the error
// is the database's own: the same code and message; a caller that catches the error of the statement
// it surfaced at cannot commit: the commit throws it again). Each write held with others saves a
// statement and its round trip.
//
// SQLite runs a deferred write at once: it is in-process, a statement costs microseconds there, and it
// has no data-modifying WITH. Outside a transaction (or on a connection without write-behind) a deferred
// write runs at once too.
//
// What keeps a flush equivalent to the writes run one after the other:
// - PostgreSQL runs all the CTEs of one statement on one snapshot: none sees another's changes, and two
//   that modify one row apply one change only, silently. So a write joins the held ones only if it
//   touches (as its target or in anything it reads: FROM, joins, subqueries) no table a held write
//   modifies; otherwise the held ones are flushed first. That covers two writes to one table (one write
//   per table per flush) and a write that reads what an earlier one wrote. A write whose reads cannot
//   all be named (raw SQL with a `select` in it) is held only behind nothing. Reads by a held write of a
//   table a later one modifies are the same either way: both see the state before the later write.
// - The CTEs run in the order they were handed over: PostgreSQL runs the CTEs the main query does not
//   read at the end of the statement, the last one written first (ExecPostprocessPlan), so they are
//   written in reverse (test/write-behind.test.ts pins it). The order decides the order of the row locks
//   the writes take, which stays what the code says.
// - Constraints behave as for separate statements: CHECK and UNIQUE per row, FOREIGN KEY checks at the
//   end of the statement (they see every CTE's rows), and triggers fire per CTE. A trigger that reads
//   or writes another table, or a foreign key's ON DELETE / ON UPDATE action, escapes the rule above:
//   Kassa has no such action, and its triggers send a NOTIFY (migration 017), read what no write
//   changes (018: a refund's payment's gross, organization, environment and currency) or write what
//   no write reads or changes (027: an event's row in event_feed, which only the feed reads).
import { type Compilable, CompiledQuery, type DatabaseConnection, type OperationNode } from 'kysely';
import type { Executor } from './database.ts';
import { nameFlush } from './prepared.ts';

/** A connection that may hold writes back (outbox-signal.ts's, on PostgreSQL). */
export interface WriteBehindConnection extends DatabaseConnection {
  deferWrite(query: CompiledQuery): Promise<void>;
}

/** A Kysely instance or transaction (of Kassa's tables: Executor, or of a test's own). */
type Session = Pick<Executor, 'isTransaction' | 'getExecutor'> & {
  executeQuery(query: CompiledQuery<unknown>): Promise<unknown>;
};

function holdsWrites(connection: DatabaseConnection): connection is WriteBehindConnection {
  return typeof (connection as Partial<WriteBehindConnection>).deferWrite === 'function';
}

function isCompiled(query: Compilable<unknown> | CompiledQuery<unknown>): query is CompiledQuery<unknown> {
  return typeof (query as CompiledQuery).sql === 'string';
}

/**
 * Runs `query` (an INSERT, UPDATE or DELETE without RETURNING) as part of the transaction `db`, now or
 * at the transaction's next statement (PostgreSQL): for a write whose caller needs nothing back from
 * it. Its failure fails the transaction, at that next statement or at COMMIT.
 */
export async function deferWrite(
  db: Session,
  query: Compilable<unknown> | CompiledQuery<unknown>,
): Promise<void> {
  const compiled = isCompiled(query) ? query : query.compile();
  const node = compiled.query;
  if (
    (node.kind !== 'InsertQueryNode' && node.kind !== 'UpdateQueryNode' && node.kind !== 'DeleteQueryNode') ||
    node.returning !== undefined
  ) {
    throw new Error('deferWrite takes an INSERT, UPDATE or DELETE without RETURNING.');
  }
  if (!db.isTransaction) {
    await db.executeQuery(compiled);
    return;
  }
  await db.getExecutor().provideConnection(async (connection) => {
    if (holdsWrites(connection)) await connection.deferWrite(compiled);
    else await connection.executeQuery(compiled);
  });
}

interface HeldWrite {
  query: CompiledQuery;
  /** The table it modifies. */
  target: string;
  /** Every table it names (its target included), or null when raw SQL may read others. */
  touches: Set<string> | null;
  /** Where its placeholders are in its SQL ($1 … $n, each once, in order). */
  placeholders: number[];
}

/** The writes a transaction's connection holds (PostgreSQL). */
export class WriteBuffer {
  private writes: HeldWrite[] = [];
  private readonly modified = new Set<string>();

  get size(): number {
    return this.writes.length;
  }

  /**
   * The write `query` as it can be held, or null when it cannot be part of a flush (its own WITH, or
   * SQL whose placeholders are not $1 … $n in order): then it is run as it is, after a flush.
   */
  static heldWrite(query: CompiledQuery): HeldWrite | null {
    const node = query.query as OperationNode & { with?: unknown };
    if (node.with !== undefined) return null;
    const target = targetOf(node);
    const placeholders = placeholderPositions(query.sql, query.parameters.length);
    if (target === null || placeholders === null) return null;
    return { query, target, touches: tablesOf(node), placeholders };
  }

  /** Whether `write` must wait for a flush of the held writes (the rules at the top of this file). */
  mustFlushBefore(write: HeldWrite): boolean {
    if (this.writes.length === 0) return false;
    if (write.touches === null) return true;
    for (const table of write.touches) if (this.modified.has(table)) return true;
    return false;
  }

  hold(write: HeldWrite): void {
    this.writes.push(write);
    this.modified.add(write.target);
  }

  /** The statement that runs every held write, in order; the buffer is emptied. Null when it is empty. */
  take(): CompiledQuery | null {
    const writes = this.writes;
    this.clear();
    if (writes.length === 0) return null;
    if (writes.length === 1) return writes[0].query;
    const parameters: unknown[] = [];
    const ctes: string[] = [];
    writes.forEach((write, index) => {
      ctes.unshift(`w${index + 1} as (${renumber(write, parameters.length)})`);
      parameters.push(...write.query.parameters);
    });
    const text = `with ${ctes.join(', ')} select 1`;
    nameFlush(text);
    return CompiledQuery.raw(text, parameters);
  }

  clear(): void {
    this.writes = [];
    this.modified.clear();
  }
}

function tableName(node: OperationNode | undefined): string | null {
  if (node === undefined) return null;
  if (node.kind === 'AliasNode') return tableName((node as OperationNode & { node: OperationNode }).node);
  if (node.kind !== 'TableNode') return null;
  const { schema, identifier } = (
    node as OperationNode & {
      table: { schema?: { name: string }; identifier: { name: string } };
    }
  ).table;
  return schema ? `${schema.name}.${identifier.name}` : identifier.name;
}

/** The table an INSERT, UPDATE or DELETE modifies. */
function targetOf(node: OperationNode): string | null {
  const query = node as OperationNode & {
    into?: OperationNode;
    table?: OperationNode;
    from?: { froms: readonly OperationNode[] };
  };
  if (node.kind === 'InsertQueryNode') return tableName(query.into);
  if (node.kind === 'UpdateQueryNode') return tableName(query.table);
  if (node.kind === 'DeleteQueryNode' && query.from?.froms.length === 1)
    return tableName(query.from.froms[0]);
  return null;
}

/** A raw fragment that may read a table the builder cannot name. */
const RAW_READ = /\b(select|table|from)\b/i;

/** Every table named anywhere in `node` (Kysely's nodes are plain trees); null if raw SQL may read more. */
function tablesOf(node: OperationNode): Set<string> | null {
  const tables = new Set<string>();
  let unknown = false;
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) {
      for (const item of value) visit(item);
      return;
    }
    if (typeof value !== 'object' || value === null) return;
    const kind = (value as { kind?: unknown }).kind;
    if (kind === 'TableNode') {
      const name = tableName(value as OperationNode);
      if (name !== null) tables.add(name);
      return;
    }
    if (
      kind === 'RawNode' &&
      (value as { sqlFragments: string[] }).sqlFragments.some((f) => RAW_READ.test(f))
    )
      unknown = true;
    if (kind === 'ValueNode' || kind === 'PrimitiveValueListNode') return;
    for (const child of Object.values(value)) visit(child);
  };
  visit(node);
  return unknown ? null : tables;
}

/**
 * The offsets of the `$n` placeholders in `sql` outside quoted strings, identifiers and comments, if
 * they are exactly $1 … $count in order (as Kysely compiles them); else null.
 */
export function placeholderPositions(sql: string, count: number): number[] | null {
  const positions: number[] = [];
  let i = 0;
  while (i < sql.length) {
    const char = sql[i];
    if (char === "'" || char === '"') {
      const end = sql.indexOf(char, i + 1);
      if (end === -1) return null;
      i = end + 1; // a doubled quote inside is two strings back to back: the same skip
    } else if (char === '-' && sql[i + 1] === '-') {
      const end = sql.indexOf('\n', i);
      i = end === -1 ? sql.length : end + 1;
    } else if (char === '/' && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2);
      if (end === -1) return null;
      i = end + 2;
    } else if (char === '$') {
      const digits = /^\$(\d+)/.exec(sql.slice(i, i + 12));
      // A dollar-quoted string ($$ or $tag$) or E'' escapes are never in Kysely's SQL: refused.
      if (digits === null || /[\w$]/.test(sql[i - 1] ?? ' ')) return null;
      if (Number(digits[1]) !== positions.length + 1) return null;
      positions.push(i);
      i += digits[0].length;
    } else if ((char === 'E' || char === 'e') && sql[i + 1] === "'" && !/\w/.test(sql[i - 1] ?? ' ')) {
      return null;
    } else {
      i++;
    }
  }
  return positions.length === count ? positions : null;
}

/** The write's SQL with its placeholders moved up by `offset` ($1 → $(1 + offset)). */
function renumber(write: HeldWrite, offset: number): string {
  const { sql } = write.query;
  if (offset === 0) return sql;
  let text = '';
  let from = 0;
  write.placeholders.forEach((position, index) => {
    text += `${sql.slice(from, position)}$${index + 1 + offset}`;
    from = position + 1 + String(index + 1).length;
  });
  return text + sql.slice(from);
}
