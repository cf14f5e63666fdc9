import pg from 'pg';

/** Where pool trouble is reported; a pino logger fits. */
export interface PoolLog {
  warn(obj: object, msg: string): void;
}

export interface PoolOptions {
  /** Connections this node keeps at most (config `databasePoolSize`). */
  size: number;
  log?: PoolLog;
}

/** PostgreSQL type OID of `bigint` (int8), which `pg` returns as a string so as not to lose precision. */
const INT8_OID = 20;

/**
 * Every bigint here is a time in milliseconds or a count: far below 2^53, and the column rules refuse a
 * number that is not a safe integer on the way in. Parsed per pool, not with pg's global `types`.
 */
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

/**
 * A `pg` pool for one node. The pool reconnects by itself: a connection that broke is dropped when it is
 * released (pg-pool checks it), and the next request opens a new one. What this adds:
 * - error listeners on the pool and on every client, so a connection dying while idle or while held
 *   between two statements is logged instead of crashing the process (an EventEmitter 'error' without
 *   a listener throws);
 * - a bound on waiting for a connection, so requests fail fast (503) instead of queueing while
 *   PostgreSQL is down or every connection is busy.
 */
export function createPool(url: string, options: PoolOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.size,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
    keepAlive: true,
    application_name: 'tabwire',
    types,
  });
  const report = (err: Error) => options.log?.warn({ err }, 'PostgreSQL connection error');
  pool.on('error', report);
  pool.on('connect', (client) => client.on('error', report));
  return pool;
}
