import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect } from 'kysely';
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

/** Opens (creating if needed) the embedded SQLite store and migrates it. */
export async function openSqliteStore(file: string): Promise<Store> {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const sqlite = new SQLite(file);
  // WAL lets readers run beside the writer; NORMAL sync is durable across process crashes (not power loss).
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('busy_timeout = 5000');
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) });
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
