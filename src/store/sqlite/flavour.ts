import type { SqlFlavour } from '../sql/flavour.js';

/**
 * SQLite: one connection per process and one writer per database file, so a single statement is
 * atomic with everything it reads (a writing statement takes the write lock before it reads).
 */
export const sqliteFlavour: SqlFlavour = {
  name: 'sqlite',
  skipLocked: false,
  // A commit is most of a small write's cost (docs/benchmarks.md): many callers share one.
  groupCommit: true,
  serialised: (db, _key, work) => work(db),
};
