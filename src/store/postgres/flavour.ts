import { sql } from 'kysely';
import type { SqlFlavour } from '../sql/flavour.js';

/**
 * PostgreSQL under READ COMMITTED with several nodes: each statement sees what was committed when it
 * started, so check-then-write needs row locks (`FOR UPDATE SKIP LOCKED` in claims) or a lock per key.
 */
export const postgresFlavour: SqlFlavour = {
  name: 'postgres',
  skipLocked: true,
  // As on SQLite: one commit (one WAL flush) and one pooled connection per batch instead of per write. A
  // batch is one transaction on one connection, which is all group-commit.ts needs. Measured against plain
  // pooled writes in docs/store.md "Group commit": writes alone go faster unbatched (the pool's connections
  // work side by side), but PostgreSQL, the one server every node shares, spends half the CPU per write
  // batched, and a cluster under load served more with batches.
  groupCommit: true,
  serialised: (db, key, work) =>
    db.transaction().execute(async (trx) => {
      // Held until the transaction ends; the statements after it start later, so they see the previous
      // holder's commit (a statement's snapshot is taken when it starts, READ COMMITTED).
      await sql`select pg_advisory_xact_lock(hashtextextended(${key}, 0))`.execute(trx);
      return work(trx);
    }),
};
