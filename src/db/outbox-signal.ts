// Tells the worker when a commit wrote outbox work, so it wakes on work instead of polling. Kysely's
// driver is wrapped: a connection that inserts into `events` or `webhook_deliveries` is marked, and once
// its transaction commits (or right after the insert, outside a transaction) this process's listeners
// are called. Workers in other processes are told by PostgreSQL: triggers on both tables NOTIFY the
// schema's channel (migration 017), delivered at the commit and never after a rollback, which every
// worker LISTENs on (listen.ts); on SQLite they watch the database file's write-ahead log.
import { createHash } from 'node:crypto';
import {
  CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type QueryCompiler,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';
import { type WriteBehindConnection, WriteBuffer } from './write-behind.ts';

/**
 * What a signalled commit wrote: only events, deliveries to send (perhaps with events), or it is not
 * known (another process's commit seen as a change of SQLite's write-ahead log, a LISTEN connection
 * that has just (re)connected). A worker reads its due deliveries unless it is `events`.
 */
export type OutboxWrite = 'events' | 'deliveries' | 'unknown';

/**
 * Listeners called after a commit that wrote outbox rows (in this process); and, since every statement
 * passes through here, the count of statements and transactions this process ran (kassa_db_statements_total
 * and kassa_db_transactions_total in /metrics: `npm run bench` prints statements per operation from them).
 */
export class OutboxSignal {
  private readonly listeners = new Set<(wrote: OutboxWrite) => void>();
  /** Statements sent to the database, BEGIN, COMMIT and ROLLBACK included. */
  statements = 0;
  /** Transactions begun. */
  transactions = 0;
  /**
   * PostgreSQL: the backend process ids of this process's pool connections (connection.ts). Each of
   * this process's commits that writes outbox rows is signalled here at the commit, and heard again as
   * the NOTIFY its triggers send: the webhook loop lets a NOTIFY from one of these go (ownCommit), so
   * that a commit wakes the worker into one claim, not into a second that finds nothing.
   */
  readonly ownBackends = new Set<number>();

  /** Whether a NOTIFY from backend `processId` is of this process's own commit (signalled already). */
  ownCommit(processId: number | undefined): boolean {
    return processId !== undefined && this.ownBackends.has(processId);
  }

  subscribe(listener: (wrote: OutboxWrite) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  notify(wrote: OutboxWrite = 'unknown'): void {
    for (const listener of this.listeners) listener(wrote);
  }

  /**
   * SQLite only: whether another connection (another process: a worker, the CLI) committed since the
   * last call that said so. This process's own commits are signalled exactly where they happen (notify),
   * so a change of the write-ahead log they made is no news. Null on PostgreSQL (NOTIFY says who wrote).
   */
  committedElsewhere: (() => boolean) | null = null;
}

/**
 * The NOTIFY channel of one schema, as the triggers of migration 017 name it (two schemas on one server
 * do not wake each other): `kassa_events_<schema>`, or, when that is over 63 bytes (PostgreSQL's
 * longest name; pg_notify refuses more), `kassa_events_<MD5 of the schema's name>`.
 */
export function outboxChannel(schema: string): string {
  const channel = `kassa_events_${schema}`;
  return Buffer.byteLength(channel) > 63
    ? `kassa_events_${createHash('md5').update(schema).digest('hex')}`
    : channel;
}

/**
 * An insert into an outbox table, unless it is the worker recording what it sent: an upsert, or an
 * insert of deliveries from a SELECT (an INSERT … SELECT: the outcomes of a batch of sends, read from one
 * JSON parameter, webhooks/outcomes.ts). Those rows give no worker anything to send (a retry they
 * schedule wakes the worker that scheduled it); signalled, every flush of outcomes woke the worker
 * into a claim and a read of its due deliveries, for nothing. A delivery to send (a redelivery, a test
 * delivery) and an event are inserted from VALUES.
 */
export function writesOutbox(query: CompiledQuery): boolean {
  return outboxWriteOf(query) !== null;
}

/** What an insert into an outbox table (writesOutbox) writes, or null for any other statement. */
function outboxWriteOf(query: CompiledQuery): 'events' | 'deliveries' | null {
  const node = query.query;
  if (node.kind !== 'InsertQueryNode' || node.onConflict !== undefined) return null;
  const table = node.into?.table.identifier.name ?? '';
  if (table === 'events') return 'events';
  if (table === 'webhook_deliveries' && node.values?.kind === 'ValuesNode') return 'deliveries';
  return null;
}

class SignallingConnection implements WriteBehindConnection {
  inTransaction = false;
  /** What the transaction wrote to the outbox so far (null: nothing). */
  wroteOutbox: 'events' | 'deliveries' | null = null;
  readonly inner: DatabaseConnection;
  private readonly driver: SignallingDriver;
  /** The writes held back in the open transaction (write-behind.ts); null: every write runs at once. */
  private readonly held: WriteBuffer | null;

  constructor(inner: DatabaseConnection, driver: SignallingDriver) {
    this.inner = inner;
    this.driver = driver;
    this.held = driver.writeBehind ? new WriteBuffer() : null;
  }

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    await this.flush();
    this.driver.signal.statements++;
    const result = await this.inner.executeQuery<R>(query);
    this.noteOutboxWrite(query);
    return result;
  }

  async *streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    await this.flush();
    this.driver.signal.statements++;
    yield* this.inner.streamQuery<R>(query, chunkSize);
  }

  /** Holds `query` back until the transaction's next statement or its commit, or runs it now. */
  async deferWrite(query: CompiledQuery): Promise<void> {
    const write = this.held !== null && this.inTransaction ? WriteBuffer.heldWrite(query) : null;
    if (this.held === null || write === null) {
      await this.executeQuery(query);
      return;
    }
    if (this.held.mustFlushBefore(write)) await this.flush();
    this.held.hold(write);
    this.noteOutboxWrite(query);
  }

  /** Sends the held writes, as one statement. */
  async flush(): Promise<void> {
    const statement = this.held?.take();
    if (!statement) return;
    this.driver.signal.statements++;
    try {
      await this.inner.executeQuery(statement);
    } catch (error) {
      this.flushError = { error };
      throw error;
    }
  }

  /**
   * The error of a flush that failed, thrown again at the commit: the statement it surfaced at may have
   * been one whose caller catches its own errors (a unique violation taken for a concurrent insert), and
   * PostgreSQL answers a COMMIT of a failed transaction with a rollback, not an error.
   */
  flushError: { error: unknown } | null = null;

  /** Forgets the held writes (a rollback) and a failed flush. */
  dropHeldWrites(): void {
    this.held?.clear();
    this.flushError = null;
  }

  private noteOutboxWrite(query: CompiledQuery): void {
    const wrote = outboxWriteOf(query);
    if (wrote === null) return;
    if (!this.inTransaction) this.driver.signal.notify(wrote);
    else if (this.wroteOutbox !== 'deliveries') this.wroteOutbox = wrote;
  }
}

type Savepoint = (
  connection: DatabaseConnection,
  name: string,
  compileQuery: QueryCompiler['compileQuery'],
) => Promise<void>;

class SignallingDriver implements Driver {
  private readonly inner: Driver;
  readonly signal: OutboxSignal;
  readonly savepoint?: Savepoint;
  readonly rollbackToSavepoint?: Savepoint;
  readonly releaseSavepoint?: Savepoint;

  /** The statement that begins a transaction, when not the inner driver's. */
  private readonly begin: CompiledQuery | null;
  /** Transactions hold deferred writes back (write-behind.ts). */
  readonly writeBehind: boolean;

  constructor(inner: Driver, signal: OutboxSignal, options: SignallingOptions) {
    this.inner = inner;
    this.signal = signal;
    this.begin = options.begin === undefined ? null : CompiledQuery.raw(options.begin);
    this.writeBehind = options.writeBehind ?? false;
    const { savepoint, rollbackToSavepoint, releaseSavepoint } = inner;
    // Held writes go before a savepoint (a rollback to it must not undo them); those held after it are
    // dropped by a rollback to it, which undoes them.
    const delegate = (
      method: Savepoint | undefined,
      before: (connection: SignallingConnection) => Promise<void> | void,
    ): Savepoint | undefined =>
      method &&
      (async (connection, name, compile) => {
        if (connection instanceof SignallingConnection) await before(connection);
        return method.call(inner, unwrap(connection), name, compile);
      });
    this.savepoint = delegate(savepoint, (connection) => connection.flush());
    this.rollbackToSavepoint = delegate(rollbackToSavepoint, (connection) => connection.dropHeldWrites());
    this.releaseSavepoint = delegate(releaseSavepoint, () => {});
  }

  init(): Promise<void> {
    return this.inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    return new SignallingConnection(await this.inner.acquireConnection(), this);
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    if (this.begin) await unwrap(connection).executeQuery(this.begin);
    else await this.inner.beginTransaction(unwrap(connection), settings);
    this.signal.statements++;
    this.signal.transactions++;
    if (connection instanceof SignallingConnection) {
      connection.inTransaction = true;
      connection.wroteOutbox = null;
      connection.dropHeldWrites();
    }
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    // The held writes first: if they fail (now or at an earlier flush), COMMIT is not sent and Kysely
    // rolls the transaction back.
    if (connection instanceof SignallingConnection) {
      if (connection.flushError !== null) throw connection.flushError.error;
      await connection.flush();
    }
    const wrote = connection instanceof SignallingConnection ? connection.wroteOutbox : null;
    this.signal.statements++;
    await this.inner.commitTransaction(unwrap(connection));
    this.reset(connection);
    if (wrote !== null) this.signal.notify(wrote);
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    this.reset(connection);
    this.signal.statements++;
    await this.inner.rollbackTransaction(unwrap(connection));
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return this.inner.releaseConnection(unwrap(connection));
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }

  private reset(connection: DatabaseConnection): void {
    if (!(connection instanceof SignallingConnection)) return;
    connection.inTransaction = false;
    connection.wroteOutbox = null;
    connection.dropHeldWrites();
  }
}

function unwrap(connection: DatabaseConnection): DatabaseConnection {
  return connection instanceof SignallingConnection ? connection.inner : connection;
}

export interface SignallingOptions {
  /** The statement that begins a transaction (SQLite: BEGIN IMMEDIATE, see connection.ts). */
  begin?: string;
  /** Transactions hold deferred writes back and send them as one statement (PostgreSQL: write-behind.ts). */
  writeBehind?: boolean;
}

/**
 * `dialect`, with commits that write outbox rows signalled to this process's listeners, every
 * statement counted, and the `options` above.
 */
export function signallingDialect(
  dialect: Dialect,
  signal: OutboxSignal,
  options: SignallingOptions = {},
): Dialect {
  return {
    createAdapter: () => dialect.createAdapter(),
    createDriver: () => new SignallingDriver(dialect.createDriver(), signal, options),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createIntrospector: (db) => dialect.createIntrospector(db),
  };
}
