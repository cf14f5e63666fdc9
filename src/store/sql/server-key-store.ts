import type { Kysely, Selectable } from 'kysely';
import type { Database, ServerKeysTable } from '../schema.js';
import type { ServerKey, ServerKeyStore } from '../stores.js';
import { checkRow } from './column-rules.js';

const toKey = (r: Selectable<ServerKeysTable>): ServerKey => ({
  kid: r.kid,
  purpose: r.purpose,
  privateKey: r.private_key,
  publicKey: r.public_key,
  createdAt: Number(r.created_at),
});

/** Rotations racing for one place in a ring retry this often before giving up (each loser of a race retries once). */
const ROTATION_ATTEMPTS = 20;

/**
 * The service's own signing keys in SQL. The unique (purpose, generation) index decides races: a first
 * key is generation 0, so only one node's insert of it succeeds; a rotation takes the next generation and
 * tries again if another rotation took it meanwhile.
 */
export class SqlServerKeyStore implements ServerKeyStore {
  constructor(private readonly db: Kysely<Database>) {}

  async list(purpose: string): Promise<ServerKey[]> {
    const rows = await this.db.selectFrom('server_keys').selectAll().where('purpose', '=', purpose).orderBy('generation', 'desc').execute();
    return rows.map(toKey);
  }

  async insertFirst(key: ServerKey): Promise<boolean> {
    const result = await this.db
      .insertInto('server_keys')
      .values({ kid: key.kid, purpose: key.purpose, private_key: key.privateKey, public_key: key.publicKey, created_at: key.createdAt, generation: 0 })
      // No conflict target: the ring's generation 0 or the kid, whichever exists, means someone else's key is first.
      .onConflict((oc) => oc.doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0n) === 1;
  }

  async insert(key: ServerKey): Promise<void> {
    checkRow('server_keys', { kid: key.kid, purpose: key.purpose, private_key: key.privateKey, public_key: key.publicKey, created_at: key.createdAt });
    for (let attempt = 0; attempt < ROTATION_ATTEMPTS; attempt++) {
      // One statement: the next generation is read and written together. Under READ COMMITTED two
      // rotations may read the same maximum; the unique index lets one in and the other does nothing.
      // Parameters are cast because PostgreSQL does not type parameters in an INSERT's SELECT list.
      const result = await this.db
        .insertInto('server_keys')
        .columns(['kid', 'purpose', 'private_key', 'public_key', 'created_at', 'generation'])
        .expression((eb) =>
          eb
            .selectFrom('server_keys')
            .select([
              eb.cast<string>(eb.val(key.kid), 'text').as('kid'),
              eb.cast<string>(eb.val(key.purpose), 'text').as('purpose'),
              eb.cast<string>(eb.val(key.privateKey), 'text').as('private_key'),
              eb.cast<string>(eb.val(key.publicKey), 'text').as('public_key'),
              eb.cast<number>(eb.val(key.createdAt), 'bigint').as('created_at'),
              eb(eb.fn.coalesce(eb.fn.max('generation'), eb.lit(-1)), '+', 1).as('generation'),
            ])
            .where('purpose', '=', key.purpose),
        )
        .onConflict((oc) => oc.doNothing())
        .executeTakeFirst();
      if (Number(result.numInsertedOrUpdatedRows ?? 0n) === 1) return;
      const existing = await this.db.selectFrom('server_keys').select('kid').where('kid', '=', key.kid).executeTakeFirst();
      if (existing) return;
    }
    throw new Error(`could not add key ${key.kid} to the ${key.purpose} ring: too many concurrent rotations`);
  }
}
