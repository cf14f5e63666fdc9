import type { Kysely, Selectable } from 'kysely';
import type { ApiKeysTable, Database } from '../schema.js';
import type { ApiKey, ApiKeyStore } from '../stores.js';

const toKey = (row: Selectable<ApiKeysTable>): ApiKey => ({
  id: row.id,
  keyHash: row.key_hash,
  note: row.note,
  createdAt: Number(row.created_at),
  revokedAt: row.revoked_at === null ? null : Number(row.revoked_at),
});

/** Operator API keys (hashes only) in SQL. */
export class SqlApiKeyStore implements ApiKeyStore {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(k: ApiKey): Promise<void> {
    await this.db
      .insertInto('api_keys')
      .values({ id: k.id, key_hash: k.keyHash, note: k.note, created_at: k.createdAt, revoked_at: k.revokedAt })
      .execute();
  }

  async byHash(keyHash: string): Promise<ApiKey | undefined> {
    const row = await this.db.selectFrom('api_keys').selectAll().where('key_hash', '=', keyHash).executeTakeFirst();
    return row && toKey(row);
  }

  async list(): Promise<ApiKey[]> {
    return (await this.db.selectFrom('api_keys').selectAll().orderBy('created_at').orderBy('id').execute()).map(toKey);
  }

  async revoke(id: string, now: number): Promise<boolean> {
    const result = await this.db.updateTable('api_keys').set({ revoked_at: now }).where('id', '=', id).where('revoked_at', 'is', null).executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }
}
