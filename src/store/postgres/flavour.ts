import { sql } from 'kysely';
import type { SqlFlavour } from '../sql/flavour.js';

/**
 * PostgreSQL under READ COMMITTED with several nodes: each statement sees what was committed when it
 * started, so check-then-write needs row locks (`FOR UPDATE SKIP LOCKED` in claims) or a lock per key.
 */
export const postgresFlavour: SqlFlavour = {
  name: 'postgres',
  skipLocked: true,
  // Measured (docs/store.md "Group commit"): PostgreSQL commits concurrent transactions together itself,
  // and a batch holds one pooled connection for several round trips; plain writes on the pool are faster.
  groupCommit: false,
  serialised: (db, key, work) =>
    db.transaction().execute(async (trx) => {
      // Held until the transaction ends; the statements after it start later, so they see the previous
      // holder's commit (a statement's snapshot is taken when it starts, READ COMMITTED).
      await sql`select pg_advisory_xact_lock(hashtextextended(${key}, 0))`.execute(trx);
      return work(trx);
    }),
};
