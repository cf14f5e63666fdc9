import { Migrator, type Kysely } from 'kysely';
import { migrationProvider } from './migrations.js';
import type { Database } from './schema.js';

/**
 * Runs pending migrations; throws with the failing migration's name. Kysely's Migrator keeps its own
 * lock row; a dialect that has several nodes starting at once adds a lock of its own around this call
 * (postgres/migrate-lock.ts).
 */
export async function migrate(db: Kysely<Database>): Promise<void> {
  const { error, results } = await new Migrator({ db, provider: migrationProvider }).migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new Error(`database migration ${failed} failed: ${(error as Error).message ?? String(error)}`, { cause: error });
  }
}
