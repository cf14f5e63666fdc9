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
import { Checkpointer } from './checkpointer.js';
import { withStatementCache } from './statement-cache.js';

/** Opens (creating if needed) the embedded SQLite store and migrates it: one process, one file (docs/store.md). */
export async function openSqliteStore(file: string): Promise<Store> {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const sqlite = new SQLite(file);
  // WAL lets readers run beside the writer; NORMAL sync is durable across process crashes (not power loss).
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('busy_timeout = 5000');
  const db = new Kysely<Database>({ dialect: guardedDialect(new SqliteDialect({ database: withStatementCache(sqlite) }), sqliteUnavailable) });
  await migrate(db);
  // Checkpoints run in a worker from now on (checkpointer.ts); an in-memory database has no WAL.
  // If the worker fails, SQLite's own automatic checkpoints take over again: slower, never wrong.
  const checkpointer = file === ':memory:' ? undefined : new Checkpointer(file, () => sqlite.open && sqlite.pragma('wal_autocheckpoint = 1000'));
  if (checkpointer) sqlite.pragma('wal_autocheckpoint = 0');
  return createSqlStore(db, sqliteFlavour, async () => {
    await checkpointer?.stop();
    await db.destroy();
  });
}
