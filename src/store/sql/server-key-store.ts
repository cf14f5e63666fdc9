import type { Kysely } from 'kysely';
import type { Database } from '../schema.js';
import type { ServerKey, ServerKeyStore } from '../stores.js';

/** The service's own signing keys in SQL. */
export class SqlServerKeyStore implements ServerKeyStore {
  constructor(private readonly db: Kysely<Database>) {}

  async list(purpose: string): Promise<ServerKey[]> {
    const rows = await this.db
      .selectFrom('server_keys')
      .selectAll()
      .where('purpose', '=', purpose)
      .orderBy('created_at', 'desc')
      .execute();
    return rows.map((r) => ({
      kid: r.kid,
      purpose: r.purpose,
      privateKey: r.private_key,
      publicKey: r.public_key,
      createdAt: Number(r.created_at),
    }));
  }

  async insert(key: ServerKey): Promise<void> {
    await this.db
      .insertInto('server_keys')
      .values({
        kid: key.kid,
        purpose: key.purpose,
        private_key: key.privateKey,
        public_key: key.publicKey,
        created_at: key.createdAt,
      })
      .onConflict((oc) => oc.column('kid').doNothing())
      .execute();
  }
}
