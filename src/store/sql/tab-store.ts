import type { Kysely } from 'kysely';
import type { Database } from '../schema.js';
import type { TabStore } from '../stores.js';

/** Tab-to-session bindings in SQL. */
export class SqlTabStore implements TabStore {
  constructor(private readonly db: Kysely<Database>) {}

  async bind(tabId: string, sessionHash: string, now: number): Promise<'bound' | 'conflict'> {
    // Insert-if-absent, then read: the first session to register a tab keeps it, even under races.
    await this.db
      .insertInto('tabs')
      .values({ tab_id: tabId, session_hash: sessionHash, registered_at: now })
      .onConflict((oc) => oc.column('tab_id').doNothing())
      .execute();
    const owner = await this.sessionOf(tabId);
    return owner === sessionHash ? 'bound' : 'conflict';
  }

  async sessionOf(tabId: string): Promise<string | undefined> {
    const row = await this.db.selectFrom('tabs').select('session_hash').where('tab_id', '=', tabId).executeTakeFirst();
    return row?.session_hash;
  }

  async remove(tabId: string): Promise<void> {
    await this.db.deleteFrom('tabs').where('tab_id', '=', tabId).execute();
  }
}
