import type { CompiledQuery, Kysely } from 'kysely';
import type { Database } from '../schema.js';

/**
 * What the shared SQL stores need to know about the database under them (one per dialect folder:
 * sqlite/flavour.ts, postgres/flavour.ts). Everything else is the same SQL on every backend.
 */
export interface SqlFlavour {
  readonly name: 'sqlite' | 'postgres';
  /**
   * Whether claim subqueries take `FOR UPDATE SKIP LOCKED` (PostgreSQL). Several transactions of several
   * nodes run at once there, so a claim must lock the rows it takes and pass over rows another claim
   * holds; SQLite runs one writing statement at a time and has no row locks (nor the syntax).
   */
  readonly skipLocked: boolean;
  /**
   * Whether the hot-path writes (QR codes, the callback outbox) are group-committed (sql/group-commit.ts):
   * one transaction for the writes of many callers. See docs/store.md "Group commit" for the measurements.
   */
  readonly groupCommit: boolean;
  /**
   * A way to run a batch of the group-committed writes without a promise per statement, where the driver
   * is synchronous (SQLite): see SyncWriter. Undefined on PostgreSQL, whose statements cross the network.
   */
  readonly syncWriter?: SyncWriter;
  /**
   * Runs `work` so that no other `serialised` work with the same `key` runs at the same time, on any node,
   * and a statement of `work` sees what the previous holder committed. SQLite: one writer per database
   * already, and `work` is one statement; PostgreSQL: a transaction holding an advisory lock on the key.
   */
  serialised<T>(db: Kysely<Database>, key: string, work: (executor: Kysely<Database>) => Promise<T>): Promise<T>;
}

/**
 * Runs statements synchronously on the database's one connection. Only for a caller that holds Kysely's
 * connection meanwhile (group-commit.ts), so no Kysely statement or transaction can be in between.
 * Statements pass the same checks as Kysely's (column rules, unavailable errors: guarded-dialect.ts).
 */
export interface SyncWriter {
  /** Runs `work` in one transaction: committed when it returns, rolled back when it throws. */
  transaction<T>(work: () => T): T;
  /** Runs one statement with these parameters; returns the rows it changed. */
  run(sql: string | CompiledQuery, params: readonly unknown[]): number;
}
