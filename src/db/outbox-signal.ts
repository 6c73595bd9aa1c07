// Tells the worker when a commit wrote outbox work, so it wakes on work instead of polling. Kysely's
// driver is wrapped: a connection that inserts into `events` or `webhook_deliveries` is marked, and once
// its transaction commits (or right after the insert, outside a transaction) this process's listeners
// are called. On PostgreSQL a NOTIFY on the schema's channel goes out in the same transaction, so
// workers in other processes (LISTEN, see listen.ts) wake at the commit too; a rollback sends nothing.
// For `events` the database sends it (a trigger, migration 017); for a delivery inserted to be sent
// again (a redelivery, a test delivery: rare) the driver sends it before the commit.
import {
  CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type QueryCompiler,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';

/** The tables whose new rows a worker sends: new events, and redeliveries or test deliveries. */
const OUTBOX_TABLES = new Set(['events', 'webhook_deliveries']);

/**
 * Listeners called after a commit that wrote outbox rows (in this process); and, since every statement
 * passes through here, the count of statements and transactions this process ran (kassa_db_statements_total
 * and kassa_db_transactions_total in /metrics: `npm run bench` prints statements per operation from them).
 */
export class OutboxSignal {
  private readonly listeners = new Set<() => void>();
  /** Statements sent to the database, BEGIN, COMMIT, ROLLBACK and NOTIFY included. */
  statements = 0;
  /** Transactions begun. */
  transactions = 0;

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  notify(): void {
    for (const listener of this.listeners) listener();
  }
}

/**
 * The NOTIFY channel of one schema (two schemas on one server do not wake each other). Cut to 63
 * characters, PostgreSQL's longest name (pg_notify refuses a longer one): two schemas whose names share
 * their first 50 characters share a channel, which costs each a wake-up it did not need, nothing more.
 */
export function outboxChannel(schema: string | null): string {
  return (schema ? `kassa_events_${schema}` : 'kassa_events').slice(0, 63);
}

/**
 * An insert into an outbox table, unless it is an upsert: the one upsert there is the worker recording
 * an event's first delivery after its send (webhooks/outcomes.ts), which gives no worker anything to
 * send (its retry, if any, wakes the worker that scheduled it). Signalling it would wake every
 * worker at every batch of outcomes.
 */
export function writesOutbox(query: CompiledQuery): boolean {
  return outboxTableOf(query) !== null;
}

/** The outbox table `query` inserts into (writesOutbox), or null. */
function outboxTableOf(query: CompiledQuery): string | null {
  const node = query.query;
  if (node.kind !== 'InsertQueryNode' || node.onConflict !== undefined) return null;
  const table = node.into?.table.identifier.name ?? '';
  return OUTBOX_TABLES.has(table) ? table : null;
}

class SignallingConnection implements DatabaseConnection {
  inTransaction = false;
  wroteOutbox = false;
  /** The transaction inserted a delivery: the driver NOTIFYs before its commit (events: the trigger). */
  needsNotify = false;
  readonly inner: DatabaseConnection;
  private readonly driver: SignallingDriver;

  constructor(inner: DatabaseConnection, driver: SignallingDriver) {
    this.inner = inner;
    this.driver = driver;
  }

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    this.driver.signal.statements++;
    const result = await this.inner.executeQuery<R>(query);
    const table = outboxTableOf(query);
    if (table !== null) {
      const notify = table !== 'events';
      if (!this.inTransaction) await this.driver.committed(this.inner, notify);
      else {
        this.wroteOutbox = true;
        if (notify) this.needsNotify = true;
      }
    }
    return result;
  }

  streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    this.driver.signal.statements++;
    return this.inner.streamQuery<R>(query, chunkSize);
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
  private readonly notify: CompiledQuery | null;
  readonly savepoint?: Savepoint;
  readonly rollbackToSavepoint?: Savepoint;
  readonly releaseSavepoint?: Savepoint;

  /** The statement that begins a transaction, when not the inner driver's. */
  private readonly begin: CompiledQuery | null;

  constructor(inner: Driver, signal: OutboxSignal, channel: string | null, begin: string | null) {
    this.inner = inner;
    this.signal = signal;
    this.begin = begin === null ? null : CompiledQuery.raw(begin);
    this.notify = channel === null ? null : CompiledQuery.raw(`NOTIFY "${channel}"`);
    const { savepoint, rollbackToSavepoint, releaseSavepoint } = inner;
    const delegate = (method: Savepoint | undefined): Savepoint | undefined =>
      method && ((connection, name, compile) => method.call(inner, unwrap(connection), name, compile));
    this.savepoint = delegate(savepoint);
    this.rollbackToSavepoint = delegate(rollbackToSavepoint);
    this.releaseSavepoint = delegate(releaseSavepoint);
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
      connection.wroteOutbox = false;
      connection.needsNotify = false;
    }
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const wrote = connection instanceof SignallingConnection && connection.wroteOutbox;
    // NOTIFY inside the transaction: PostgreSQL delivers it at the commit, and not on a rollback.
    if (connection instanceof SignallingConnection && connection.needsNotify && this.notify) {
      this.signal.statements++;
      await unwrap(connection).executeQuery(this.notify);
    }
    this.signal.statements++;
    await this.inner.commitTransaction(unwrap(connection));
    this.reset(connection);
    if (wrote) this.signal.notify();
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

  /** An insert outside a transaction has committed already (`notify`: no trigger sent its NOTIFY). */
  async committed(connection: DatabaseConnection, notify: boolean): Promise<void> {
    if (notify && this.notify) {
      this.signal.statements++;
      await connection.executeQuery(this.notify);
    }
    this.signal.notify();
  }

  private reset(connection: DatabaseConnection): void {
    if (!(connection instanceof SignallingConnection)) return;
    connection.inTransaction = false;
    connection.wroteOutbox = false;
    connection.needsNotify = false;
  }
}

function unwrap(connection: DatabaseConnection): DatabaseConnection {
  return connection instanceof SignallingConnection ? connection.inner : connection;
}

/**
 * `dialect`, with commits that write outbox rows signalled (and NOTIFYed on `channel` if given), and
 * transactions begun with `begin` when given (SQLite: BEGIN IMMEDIATE, see connection.ts).
 */
export function signallingDialect(
  dialect: Dialect,
  signal: OutboxSignal,
  channel: string | null,
  begin: string | null = null,
): Dialect {
  return {
    createAdapter: () => dialect.createAdapter(),
    createDriver: () => new SignallingDriver(dialect.createDriver(), signal, channel, begin),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createIntrospector: (db) => dialect.createIntrospector(db),
  };
}
