import type { SqlFlavour, SyncWriter } from '../sql/flavour.js';

/**
 * SQLite: one connection per process and one writer per database file, so a single statement is
 * atomic with everything it reads (a writing statement takes the write lock before it reads).
 * `syncWriter` runs group-committed batches on that connection without Kysely (sync-writer.ts).
 */
export const sqliteFlavour = (syncWriter: SyncWriter | undefined): SqlFlavour => ({
  name: 'sqlite',
  skipLocked: false,
  // A commit is most of a small write's cost (docs/benchmarks.md#group-commit): many callers share one.
  groupCommit: true,
  syncWriter,
  serialised: (db, _key, work) => work(db),
});
