import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, inject } from 'vitest';
import { openPostgresStore } from '../../src/store/postgres/open.js';
import { openSqliteStore } from '../../src/store/sqlite/open.js';
import type { Store } from '../../src/store/stores.js';
import { createDatabase } from './postgres.js';

/** Two nodes' views of one fresh database. */
export interface Stores {
  /** Node A's store. */
  store: Store;
  /**
   * Node B's store on the same database: another pool on PostgreSQL. On SQLite, the same store: SQLite is
   * the store of one process (a second connection to the file from the same process would block the event
   * loop on the file lock while the first waits for that loop), so "two nodes" are concurrent calls on it.
   */
  other: Store;
  close(): Promise<void>;
}

export interface Backend {
  name: 'sqlite' | 'postgres';
  /** A fresh database, migrated, opened as two nodes. */
  open(): Promise<Stores>;
}

/** Every backend the contract suites run on: `describe.each(BACKENDS)('… on $name', (backend) => { const s = useStores(backend); … })`. */
export const BACKENDS: readonly Backend[] = [
  {
    name: 'sqlite',
    async open() {
      const dir = mkdtempSync(join(tmpdir(), 'tabwire-contract-'));
      const store = await openSqliteStore(join(dir, 'db.sqlite'));
      return {
        store,
        other: store,
        async close() {
          await store.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  },
  {
    name: 'postgres',
    async open() {
      const url = await postgresDatabase();
      // Both open (and migrate) at once, as two nodes starting together would.
      const [store, other] = await Promise.all([openPostgresStore(url, { size: 10 }), openPostgresStore(url, { size: 10 })]);
      return {
        store,
        other,
        async close() {
          await Promise.all([store.close(), other.close()]);
        },
      };
    },
  },
];

/**
 * Opens a fresh database on `backend` before the tests of the calling describe block and closes it after
 * them; the returned Stores are filled in once beforeAll has run.
 */
export function useStores(backend: Backend): Stores {
  const stores = {} as Stores;
  beforeAll(async () => {
    Object.assign(stores, await backend.open());
  });
  afterAll(async () => {
    await stores.close();
  });
  return stores;
}

/** A new database on the run's PostgreSQL (test/setup/postgres.ts); its URL. */
export const postgresDatabase = (): Promise<string> => createDatabase(inject('postgresUrl'));
