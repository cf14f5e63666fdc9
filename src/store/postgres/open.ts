import { Kysely, PostgresDialect } from 'kysely';
import type { Database } from '../schema.js';
import { guardedDialect } from '../sql/guarded-dialect.js';
import { createSqlStore } from '../sql/sql-store.js';
import type { Store } from '../stores.js';
import { postgresUnavailable } from './errors.js';
import { postgresFlavour } from './flavour.js';
import { migrateLocked } from './migrate-lock.js';
import { createPool, type PoolOptions } from './pool.js';

/**
 * Batches one commit queue may run at once (CommitQueue): a quarter of the pool, 1 to 4. A node has four
 * hot-path queues (QR codes, callbacks, the outbox, tab bindings), so under load their batches hold at most the
 * whole pool and other queries still get their turn in its queue. Measured with 1, 2 and 4 in docs/store.md
 * "Group commit".
 */
export const groupCommitBatchesFor = (poolSize: number): number => Math.max(1, Math.min(4, Math.floor(poolSize / 4)));

/**
 * Opens the cluster store on PostgreSQL (`url`: postgres://user@host:port/db) and migrates it; every node
 * of a cluster opens the same database. Fails when PostgreSQL cannot be reached at start (docs/store.md).
 */
export async function openPostgresStore(url: string, options: PoolOptions): Promise<Store> {
  const pool = createPool(url, options);
  const db = new Kysely<Database>({ dialect: guardedDialect(new PostgresDialect({ pool }), postgresUnavailable) });
  try {
    await migrateLocked(db);
  } catch (err) {
    await db.destroy();
    throw err;
  }
  return createSqlStore(db, { ...postgresFlavour, groupCommitBatches: groupCommitBatchesFor(options.size) }, () => db.destroy());
}
