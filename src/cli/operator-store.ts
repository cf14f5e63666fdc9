import { existsSync } from 'node:fs';
import { openStore, type StoreConfig } from '../store/open.js';
import type { Store } from '../store/stores.js';

/**
 * Opens the store the service uses, found by the same configuration (a relative `sqliteFile` is resolved
 * against the installation folder, whatever the current folder: docs/configuration.md). An operator
 * command that would create a new SQLite file says which, so a mistyped TABWIRE_SQLITE_FILE is noticed
 * instead of silently listing an empty store.
 */
export async function openOperatorStore(config: StoreConfig, stderr: NodeJS.WritableStream = process.stderr): Promise<Store> {
  if (config.databaseUrl === undefined && config.sqliteFile !== ':memory:' && !existsSync(config.sqliteFile)) {
    stderr.write(`tabwire: no store at ${config.sqliteFile} yet; it is created now (the service uses the same file; TABWIRE_SQLITE_FILE names another)\n`);
  }
  return openStore(config);
}
