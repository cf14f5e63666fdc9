import type { Kysely } from 'kysely';
import type { Database } from '../schema.js';
import type { WrittenResultStore } from '../written-result-store.js';

/** Keys per statement: a stop writes at most the results of the replay window, usually a handful. */
const KEYS_PER_STATEMENT = 500;

/** Written results in SQL (SQLite or PostgreSQL through Kysely). */
export class SqlWrittenResultStore implements WrittenResultStore {
  constructor(private readonly db: Kysely<Database>) {}

  async remember(written: readonly { key: string; expiresAt: number }[]): Promise<void> {
    for (let i = 0; i < written.length; i += KEYS_PER_STATEMENT) {
      const slice = written.slice(i, i + KEYS_PER_STATEMENT).map((w) => ({ publish_key: w.key, expires_at: w.expiresAt }));
      await this.db
        .insertInto('written_results')
        .values(slice)
        .onConflict((oc) => oc.column('publish_key').doUpdateSet((eb) => ({ expires_at: eb.ref('excluded.expires_at') })))
        .execute();
    }
  }

  async writtenAmong(keys: readonly string[], now: number): Promise<Set<string>> {
    const found = new Set<string>();
    for (let i = 0; i < keys.length; i += KEYS_PER_STATEMENT) {
      const rows = await this.db
        .selectFrom('written_results')
        .select('publish_key')
        .where('publish_key', 'in', keys.slice(i, i + KEYS_PER_STATEMENT))
        .where('expires_at', '>=', now)
        .execute();
      for (const r of rows) found.add(r.publish_key);
    }
    return found;
  }

  async deleteExpired(before: number): Promise<number> {
    const result = await this.db.deleteFrom('written_results').where('expires_at', '<', before).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
