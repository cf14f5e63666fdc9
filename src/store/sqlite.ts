import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect, type SqliteDatabase, type SqliteStatement } from 'kysely';
import { migrationProvider } from './migrations.js';
import type { Database } from './schema.js';
import { SqlAccountStore } from './sql/account-store.js';
import { SqlApiKeyStore } from './sql/api-key-store.js';
import { SqlAttachmentStore } from './sql/attachment-store.js';
import { SqlCallbackStore } from './sql/callback-store.js';
import { SqlCodeStore } from './sql/code-store.js';
import { SqlMessageStore } from './sql/message-store.js';
import { SqlServiceRegistrationStore } from './sql/service-registration-store.js';
import { SqlIdentityStore } from './sql/identity-store.js';
import { SqlServerKeyStore } from './sql/server-key-store.js';
import { SqlTabStore } from './sql/tab-store.js';
import type { Store } from './stores.js';

/** Runs pending migrations; throws with the failing migration's name. */
export async function migrate(db: Kysely<Database>): Promise<void> {
  const { error, results } = await new Migrator({ db, provider: migrationProvider }).migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new Error(`database migration ${failed} failed: ${(error as Error).message ?? String(error)}`);
  }
}

const STATEMENT_CACHE_SIZE = 512;

/**
 * better-sqlite3 as Kysely's SqliteDatabase, with prepared statements kept by SQL text. Kysely's
 * SQLite driver prepares every query anew; on the hot paths (QR codes, callbacks, routing) the same
 * few statements run thousands of times a second, and preparing was a sixth of the callback
 * outbox's CPU (docs/benchmarks.md). Statements run synchronously on Kysely's one connection, so a
 * cached statement is never used by two queries at once; `iterate` (streaming) gets a fresh one.
 */
function withStatementCache(sqlite: SQLite.Database): SqliteDatabase {
  const cache = new Map<string, SqliteStatement>();
  return {
    close: () => sqlite.close(),
    prepare(sql: string): SqliteStatement {
      let statement = cache.get(sql);
      if (!statement) {
        const prepared = sqlite.prepare(sql);
        statement = {
          reader: prepared.reader,
          all: (parameters) => prepared.all(parameters),
          run: (parameters) => prepared.run(parameters),
          iterate: (parameters) => sqlite.prepare(sql).iterate(parameters),
        };
        // Queries with varying shapes (IN lists) make new texts: bound the cache simply.
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.clear();
        cache.set(sql, statement);
      }
      return statement;
    },
  };
}

/** Opens (creating if needed) the embedded SQLite store and migrates it. */
export async function openSqliteStore(file: string): Promise<Store> {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const sqlite = new SQLite(file);
  // WAL lets readers run beside the writer; NORMAL sync is durable across process crashes (not power loss).
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('busy_timeout = 5000');
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) });
  await migrate(db);
  return {
    codes: new SqlCodeStore(db),
    tabs: new SqlTabStore(db),
    identities: new SqlIdentityStore(db),
    serverKeys: new SqlServerKeyStore(db),
    accounts: new SqlAccountStore(db),
    apiKeys: new SqlApiKeyStore(db),
    attachments: new SqlAttachmentStore(db),
    services: new SqlServiceRegistrationStore(db),
    callbacks: new SqlCallbackStore(db),
    messages: new SqlMessageStore(db),
    close: () => db.destroy(),
  };
}
