import { Kysely, PostgresDialect } from 'kysely';
import type { Database } from '../schema.js';
import { guardedDialect } from '../sql/guarded-dialect.js';
import { createSqlStore } from '../sql/sql-store.js';
import type { Store } from '../stores.js';
import { postgresUnavailable } from './errors.js';
import { postgresFlavour } from './flavour.js';
import { migrateLocked } from './migrate-lock.js';
import { createPool, type PoolOptions } from './pool.js';
import { preparedStatementsPool, StatementNames } from './prepared-statements.js';

/** Config `databasePreparedStatements` (default true); `statementNames`: the process's names, for tests. */
interface PreparedOptions {
  preparedStatements?: boolean;
  statementNames?: StatementNames;
}

/**
 * The query builder over a node's pool of `url`, as every node sends its statements. Statements go as named
 * prepared statements, parsed and planned once per connection (prepared-statements.ts), unless the operator
 * turned them off (a pooler that does not keep them). Exported for the benchmarks, which must measure what a
 * node sends.
 */
export function postgresQueryBuilder(url: string, options: PoolOptions & PreparedOptions): Kysely<Database> {
  const pool = createPool(url, options);
  const dialect = new PostgresDialect({ pool: options.preparedStatements === false ? pool : preparedStatementsPool(pool, options.statementNames) });
  return new Kysely<Database>({ dialect: guardedDialect(dialect, postgresUnavailable) });
}

/**
 * Opens the cluster store on PostgreSQL (`url`: postgres://user@host:port/db) and migrates it; every node
 * of a cluster opens the same database. Fails when PostgreSQL cannot be reached at start (docs/store.md).
 */
export async function openPostgresStore(url: string, options: PoolOptions & PreparedOptions): Promise<Store> {
  const db = postgresQueryBuilder(url, options);
  try {
    await migrateLocked(db);
  } catch (err) {
    await db.destroy();
    throw err;
  }
  return createSqlStore(db, postgresFlavour, () => db.destroy());
}
