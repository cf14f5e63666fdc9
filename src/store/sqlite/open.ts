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
  return createSqlStore(db, sqliteFlavour, () => db.destroy());
}
