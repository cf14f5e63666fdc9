import type {
  CompiledQuery,
  DatabaseConnection,
  DatabaseIntrospector,
  Dialect,
  DialectAdapter,
  Driver,
  Kysely,
  QueryCompiler,
  QueryResult,
  TransactionSettings,
} from 'kysely';
import { TabwireError } from '../../errors.js';
import { checkQuery } from './column-rules.js';
import { FifoGate } from './fifo-gate.js';

/** Says whether an error of the database means it cannot be reached or cannot serve now (each dialect folder has one). */
export type UnavailableTest = (err: unknown) => boolean;

/** The error every store call fails with while its database is unreachable: 503 problem+json, retry soon. */
export function storeUnavailable(cause: unknown): TabwireError {
  return Object.assign(new TabwireError('store_unavailable', undefined, { retryAfter: 1 }), { cause });
}

/**
 * Wraps a Kysely dialect with what every backend shares, at the one place every statement passes:
 * - the column rules (column-rules.ts) are checked before a statement is sent, so SQLite refuses what
 *   PostgreSQL would;
 * - an error that means "the database is not there" (`isUnavailable`) becomes `store_unavailable`, so
 *   callers answer 503 on every backend without knowing driver error codes (docs/store.md "Outages");
 * - `oneConnection` (SQLite): callers wait for the one connection in a FIFO queue of ours (fifo-gate.ts).
 */
export function guardedDialect(inner: Dialect, isUnavailable: UnavailableTest, o: { oneConnection?: boolean } = {}): Dialect {
  return {
    createDriver: () => new GuardedDriver(inner.createDriver(), isUnavailable, o.oneConnection === true ? new FifoGate() : undefined),
    createQueryCompiler: (): QueryCompiler => inner.createQueryCompiler(),
    createAdapter: (): DialectAdapter => inner.createAdapter(),
    createIntrospector: (db: Kysely<any>): DatabaseIntrospector => inner.createIntrospector(db),
  };
}

class GuardedConnection implements DatabaseConnection {
  constructor(
    readonly inner: DatabaseConnection,
    private readonly isUnavailable: UnavailableTest,
  ) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    checkQuery(query);
    try {
      return await this.inner.executeQuery<R>(query);
    } catch (err) {
      throw this.isUnavailable(err) ? storeUnavailable(err) : err;
    }
  }

  streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    checkQuery(query);
    return this.inner.streamQuery<R>(query, chunkSize);
  }
}

/** Delegates to the dialect's driver; connections are wrapped on the way out and unwrapped on the way back. */
class GuardedDriver implements Driver {
  constructor(
    private readonly inner: Driver,
    private readonly isUnavailable: UnavailableTest,
    /** The one connection's queue (SQLite); undefined for a pool, whose connections serve side by side. */
    private readonly gate: FifoGate | undefined,
  ) {}

  private unwrap = (connection: DatabaseConnection): DatabaseConnection => (connection instanceof GuardedConnection ? connection.inner : connection);

  init(): Promise<void> {
    return this.inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    await this.gate?.acquire();
    try {
      return new GuardedConnection(await this.inner.acquireConnection(), this.isUnavailable);
    } catch (err) {
      this.gate?.release();
      throw this.isUnavailable(err) ? storeUnavailable(err) : err;
    }
  }

  // Transaction statements go through the guarded connection, so a failed BEGIN or COMMIT is classified too.
  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return this.inner.beginTransaction(connection, settings);
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return this.inner.commitTransaction(connection);
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return this.inner.rollbackTransaction(connection);
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    try {
      await this.inner.releaseConnection(this.unwrap(connection));
    } finally {
      this.gate?.release();
    }
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }
}
