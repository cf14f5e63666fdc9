import { sql, type Kysely } from 'kysely';
import { migrate } from '../migrate.js';
import type { Database } from '../schema.js';

/** Advisory lock key of tabwire's migrations (any constant other applications on the database do not use). */
const MIGRATION_LOCK = 0x7461_6277_6972_65n; // "tabwire"

/**
 * Migrates with several nodes starting at once: the first takes a session-level advisory lock and
 * migrates, the others wait for it and then find nothing left to do. The lock and the migrations share
 * one connection, so a pool of one connection cannot deadlock. (Kysely's Migrator also locks inside its
 * transaction; this lock covers the creation of its own bookkeeping tables as well.)
 */
export async function migrateLocked(db: Kysely<Database>): Promise<void> {
  await db.connection().execute(async (connection) => {
    await sql`select pg_advisory_lock(${sql.lit(MIGRATION_LOCK)})`.execute(connection);
    try {
      await migrate(connection);
    } finally {
      await sql`select pg_advisory_unlock(${sql.lit(MIGRATION_LOCK)})`.execute(connection);
    }
  });
}
