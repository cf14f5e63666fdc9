import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { migrate } from '../migrate.js';
import type { Database } from '../schema.js';
import { guardedDialect } from '../sql/guarded-dialect.js';
import { createSqlStore } from '../sql/sql-store.js';
import type { Store } from '../stores.js';
import { sqliteUnavailable } from './errors.js';
import { sqliteFlavour } from './flavour.js';
import { Checkpointer, WAL_FILE_LIMIT_BYTES } from './checkpointer.js';
import { StatementCache, withStatementCache } from './statement-cache.js';
import { sqliteSyncWriter } from './sync-writer.js';

/**
 * Migrates, tolerating another process that migrates the same file at the same moment (several nodes
 * started together on one file, e.g. `scripts/cluster --store sqlite`): SQLite has no advisory lock, so
 * the loser's migration fails on what the winner just created; the winner's migrations are recorded by
 * then, and a second attempt finds nothing left to do.
 */
async function migrateBesideOthers(db: Kysely<Database>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await migrate(db);
    } catch (err) {
      if (attempt >= 3) throw err;
      await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
    }
  }
}

/**
 * Puts the file in WAL mode, tolerating another process that opens the same new file at the same moment:
 * the switch needs the file to itself, and SQLite answers SQLITE_BUSY at once rather than waiting
 * (`busy_timeout` does not apply: waiting could deadlock two connections that both hold a shared lock).
 * Once one process has switched it, the others find the file in WAL mode already.
 */
async function enterWalMode(sqlite: SQLite.Database): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      sqlite.pragma('journal_mode = WAL');
      return;
    } catch (err) {
      if (!sqliteUnavailable(err) || attempt >= 20) throw err;
      await new Promise((resolve) => setTimeout(resolve, 25 * attempt));
    }
  }
}

/** Opens (creating if needed) the embedded SQLite store and migrates it: one process, one file (docs/store.md). */
export async function openSqliteStore(file: string): Promise<Store> {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const sqlite = new SQLite(file);
  sqlite.pragma('busy_timeout = 5000');
  // WAL lets readers run beside the writer; NORMAL sync is durable across process crashes (not power loss).
  await enterWalMode(sqlite);
  sqlite.pragma('synchronous = NORMAL');
  const statements = new StatementCache(sqlite);
  const db = new Kysely<Database>({ dialect: guardedDialect(new SqliteDialect({ database: withStatementCache(statements) }), sqliteUnavailable, { oneConnection: true }) });
  await migrateBesideOthers(db);
  // Checkpoints run in a worker from now on (checkpointer.ts); an in-memory database has no WAL.
  // If the worker fails, SQLite's own automatic checkpoints take over again: slower, never wrong.
  const hold = (work: () => Promise<void>) => db.connection().execute(work);
  const checkpointer = file === ':memory:' ? undefined : new Checkpointer(file, hold, () => sqlite.open && sqlite.pragma('wal_autocheckpoint = 1000'));
  if (checkpointer) {
    sqlite.pragma('wal_autocheckpoint = 0');
    sqlite.pragma(`journal_size_limit = ${WAL_FILE_LIMIT_BYTES}`);
  }
  return createSqlStore(db, sqliteFlavour(sqliteSyncWriter(statements)), async () => {
    await checkpointer?.stop();
    await db.destroy();
  });
}
