import type { Kysely } from 'kysely';
import type { FoundOidcEntry, OidcEntry, OidcEntryStore } from '../oidc-store.js';
import type { Database } from '../schema.js';

const found = (row: { payload: string; consumed_at: number | string | null }): FoundOidcEntry => ({
  payload: row.payload,
  consumedAt: row.consumed_at === null ? null : Number(row.consumed_at),
});

/** The OpenID Provider's records in SQL (store/oidc-store.ts). */
export class SqlOidcEntryStore implements OidcEntryStore {
  constructor(private readonly db: Kysely<Database>) {}

  async upsert(e: OidcEntry): Promise<void> {
    // One statement on both backends: a replaced record takes the new values (from `excluded`, so the
    // column rules check them once, as the inserted row) and starts unconsumed.
    await this.db
      .insertInto('oidc_entries')
      .values({ model: e.model, id: e.id, payload: e.payload, grant_id: e.grantId, uid: e.uid, expires_at: e.expiresAt, consumed_at: null })
      .onConflict((oc) =>
        oc.columns(['model', 'id']).doUpdateSet((eb) => ({
          payload: eb.ref('excluded.payload'),
          grant_id: eb.ref('excluded.grant_id'),
          uid: eb.ref('excluded.uid'),
          expires_at: eb.ref('excluded.expires_at'),
          consumed_at: eb.ref('excluded.consumed_at'),
        })),
      )
      .execute();
  }

  async find(model: string, id: string, now: number): Promise<FoundOidcEntry | undefined> {
    const row = await this.db
      .selectFrom('oidc_entries')
      .select(['payload', 'consumed_at'])
      .where('model', '=', model)
      .where('id', '=', id)
      .where('expires_at', '>', now)
      .executeTakeFirst();
    return row && found(row);
  }

  async findByUid(model: string, uid: string, now: number): Promise<FoundOidcEntry | undefined> {
    const row = await this.db
      .selectFrom('oidc_entries')
      .select(['payload', 'consumed_at'])
      .where('model', '=', model)
      .where('uid', '=', uid)
      .where('expires_at', '>', now)
      .orderBy('expires_at', 'desc')
      .limit(1)
      .executeTakeFirst();
    return row && found(row);
  }

  async consume(model: string, id: string, now: number): Promise<boolean> {
    // One conditional UPDATE: on PostgreSQL a concurrent second UPDATE of the row waits for the first to
    // commit, then re-checks the WHERE on the committed row (READ COMMITTED) and changes nothing; SQLite runs
    // one writer at a time. So of any number of callers on any nodes exactly one sees a changed row.
    const result = await this.db
      .updateTable('oidc_entries')
      .set({ consumed_at: now })
      .where('model', '=', model)
      .where('id', '=', id)
      .where('consumed_at', 'is', null)
      .where('expires_at', '>', now)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  async destroy(model: string, id: string): Promise<void> {
    await this.db.deleteFrom('oidc_entries').where('model', '=', model).where('id', '=', id).execute();
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    await this.db.deleteFrom('oidc_entries').where('grant_id', '=', grantId).execute();
  }

  async deleteExpired(before: number): Promise<number> {
    const result = await this.db.deleteFrom('oidc_entries').where('expires_at', '<', before).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
