/**
 * @module PostgreSQL's driver with a guard for lost connections. A statement that fails because
 * the database did not answer is retried once on a fresh connection when that is safe (a read
 * outside a transaction); otherwise, and when the retry fails too, it fails with
 * `DatabaseUnavailableError`, which the API answers 503 `unavailable`. A connection that cannot
 * be opened fails the same way. Every other error passes unchanged.
 */
import type { CompiledQuery, DatabaseConnection, Dialect, Driver, QueryResult, TransactionSettings } from 'kysely';
import { DatabaseUnavailableError, isLostConnection } from './errors';

const isRead = (q: CompiledQuery) => /^\s*select\b/i.test(q.sql);

class GuardedConnection implements DatabaseConnection {
  inTransaction = false;
  constructor(
    readonly inner: DatabaseConnection,
    private readonly driver: Driver,
  ) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    try {
      return await this.inner.executeQuery<R>(query);
    } catch (err) {
      if (!isLostConnection(err)) throw err;
      if (this.inTransaction || !isRead(query)) throw new DatabaseUnavailableError(err);
      return this.retry<R>(query);
    }
  }

  private async retry<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const fresh = await acquire(this.driver);
    try {
      return await fresh.executeQuery<R>(query);
    } catch (err) {
      throw isLostConnection(err) ? new DatabaseUnavailableError(err) : err;
    } finally {
      await this.driver.releaseConnection(fresh);
    }
  }

  streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    return this.inner.streamQuery<R>(query, chunkSize);
  }
}

async function acquire(driver: Driver): Promise<DatabaseConnection> {
  try {
    return await driver.acquireConnection();
  } catch (err) {
    throw isLostConnection(err) ? new DatabaseUnavailableError(err) : err;
  }
}

/** Turns a lost connection during BEGIN, COMMIT or ROLLBACK into `DatabaseUnavailableError`. */
async function guarded(step: Promise<void>): Promise<void> {
  try {
    await step;
  } catch (err) {
    throw isLostConnection(err) ? new DatabaseUnavailableError(err) : err;
  }
}

class GuardedDriver implements Driver {
  constructor(private readonly inner: Driver) {}
  init = () => this.inner.init();
  destroy = () => this.inner.destroy();
  async acquireConnection(): Promise<DatabaseConnection> {
    return new GuardedConnection(await acquire(this.inner), this.inner);
  }
  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const c = connection as GuardedConnection;
    c.inTransaction = true;
    await guarded(this.inner.beginTransaction(c.inner, settings));
  }
  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const c = connection as GuardedConnection;
    c.inTransaction = false;
    await guarded(this.inner.commitTransaction(c.inner));
  }
  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    const c = connection as GuardedConnection;
    c.inTransaction = false;
    await guarded(this.inner.rollbackTransaction(c.inner));
  }
  releaseConnection = (connection: DatabaseConnection) => this.inner.releaseConnection((connection as GuardedConnection).inner);
}

/** `dialect` with its driver guarded (PostgreSQL's; SQLite's connection is a file and cannot be lost). */
export function guardedDialect(dialect: Dialect): Dialect {
  return {
    createDriver: () => new GuardedDriver(dialect.createDriver()),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createAdapter: () => dialect.createAdapter(),
    createIntrospector: (db) => dialect.createIntrospector(db),
  };
}
