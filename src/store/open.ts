import type { Config } from '../config/schema.js';
import { openPostgresStore } from './postgres/open.js';
import type { PoolLog } from './postgres/pool.js';
import { openSqliteStore } from './sqlite/open.js';
import type { Store } from './stores.js';

/** What opening the store reads of the configuration (tests and tools may leave `databasePreparedStatements` out: on). */
export type StoreConfig = Pick<Config, 'databaseUrl' | 'databasePoolSize' | 'sqliteFile'> & Partial<Pick<Config, 'databasePreparedStatements'>>;

/**
 * The store a node runs on, as the configuration says: PostgreSQL when `databaseUrl` is set (cluster
 * mode), else the embedded SQLite file `sqliteFile`. The service and the CLI both open it here.
 */
export function openStore(config: StoreConfig, log?: PoolLog): Promise<Store> {
  if (config.databaseUrl !== undefined) {
    return openPostgresStore(config.databaseUrl, { size: config.databasePoolSize, log, preparedStatements: config.databasePreparedStatements ?? true });
  }
  return openSqliteStore(config.sqliteFile);
}
