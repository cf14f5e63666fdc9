import type { CompiledQuery } from 'kysely';
import { checkQuery } from '../sql/column-rules.js';
import type { SyncWriter } from '../sql/flavour.js';
import { withParameters } from '../sql/group-commit.js';
import { storeUnavailable } from '../sql/guarded-dialect.js';
import { sqliteUnavailable } from './errors.js';
import type { StatementCache } from './statement-cache.js';

/**
 * The group-committed writes' synchronous path on SQLite (sql/flavour.ts SyncWriter): better-sqlite3 runs a
 * statement on the calling thread anyway, so a batch of them needs no promise each. Every statement is
 * checked as Kysely's are (the column rules; a locked database is `store_unavailable`).
 */
export function sqliteSyncWriter(cache: StatementCache): SyncWriter {
  // better-sqlite3's transaction function: BEGIN, then COMMIT when `work` returns or ROLLBACK when it throws.
  const inTransaction = cache.sqlite.transaction((work: () => unknown) => work());
  return {
    transaction: <T>(work: () => T): T => {
      try {
        return inTransaction(work) as T;
      } catch (err) {
        throw sqliteUnavailable(err) ? storeUnavailable(err) : err;
      }
    },
    run(sql: string | CompiledQuery, params: readonly unknown[]): number {
      const query = withParameters(sql, params);
      checkQuery(query);
      try {
        return cache.prepared(query.sql).run(params as unknown[]).changes;
      } catch (err) {
        throw sqliteUnavailable(err) ? storeUnavailable(err) : err;
      }
    },
  };
}
