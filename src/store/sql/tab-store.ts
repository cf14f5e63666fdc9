import type { Kysely } from 'kysely';
import type { Database } from '../schema.js';
import type { BindOutcome, TabStore } from '../stores.js';
import type { SqlFlavour } from './flavour.js';
import { commitQueue, GroupCommit } from './group-commit.js';

/** Rows per refresh statement: keeps the IN list well under every backend's parameter limit. */
const REFRESH_CHUNK = 500;
/** Insert-then-read rounds a bind tries while a racing release keeps removing the row it found. */
const MAX_BIND_ATTEMPTS = 5;

/** Tab-to-session bindings in SQL. */
export class SqlTabStore implements TabStore {
  /**
   * Every page that opens registers a tab and every page that is left releases it: with people coming and
   * going, one each per arrival. Both statements are compiled once and group-committed (a commit was most of
   * their cost; docs/benchmarks.md#group-commit).
   */
  private readonly inserts: GroupCommit;
  private readonly removals: GroupCommit;

  constructor(
    private readonly db: Kysely<Database>,
    flavour: SqlFlavour,
  ) {
    const queue = commitQueue(db, flavour, 'turn');
    this.inserts = new GroupCommit(
      db.insertInto('tabs').values({ tab_id: '', session_hash: '', registered_at: 0, seen_at: 0, origin: null }).onConflict((oc) => oc.column('tab_id').doNothing()).compile(),
      queue,
    );
    this.removals = new GroupCommit(db.deleteFrom('tabs').where('tab_id', '=', '').where('session_hash', '=', '').compile(), queue);
  }

  async bind(tabId: string, sessionHash: string, now: number, origin: string | null = null): Promise<BindOutcome> {
    // Insert-if-absent, then read: the first session to register a tab keeps it, even under races (of two
    // inserts in one batch, the second finds the row and changes nothing). Parameters in the values' order.
    // The row the insert found may be gone by the read (its session's release on another node, the purge):
    // then nobody holds the tab and the insert is tried again. Reporting that as a conflict would tell the
    // owning session its own tab is another's (a 4403, and its page takes a new tab id).
    for (let attempt = 1; ; attempt++) {
      if ((await this.inserts.run([tabId, sessionHash, now, now, origin])) === 1) return 'created';
      const binding = await this.bindingOf(tabId);
      if (binding !== undefined) return this.boundTo(binding, tabId, sessionHash, origin);
      // Each round needs a release racing it anew; this many in a row is a fault, not a race.
      if (attempt === MAX_BIND_ATTEMPTS) throw new Error(`tab ${tabId}: its binding vanished between insert and read ${attempt} times`);
    }
  }

  /** The outcome for `sessionHash` of a tab the store found bound to `binding`. */
  private async boundTo(binding: { session: string; origin: string | null }, tabId: string, sessionHash: string, origin: string | null): Promise<BindOutcome> {
    if (binding.session !== sessionHash) return 'conflict';
    // The same session from another page location (it navigated): cookie-less requests follow the new origin.
    if (origin !== null && binding.origin !== origin) {
      await this.db.updateTable('tabs').set({ origin }).where('tab_id', '=', tabId).where('session_hash', '=', sessionHash).execute();
    }
    return 'bound';
  }

  async sessionOf(tabId: string): Promise<string | undefined> {
    return (await this.bindingOf(tabId))?.session;
  }

  async bindingOf(tabId: string): Promise<{ session: string; origin: string | null } | undefined> {
    const row = await this.db.selectFrom('tabs').select(['session_hash', 'origin']).where('tab_id', '=', tabId).executeTakeFirst();
    return row && { session: row.session_hash, origin: row.origin };
  }

  async remove(tabId: string, sessionHash: string): Promise<void> {
    await this.removals.run([tabId, sessionHash]);
  }

  async refresh(tabIds: readonly string[], now: number): Promise<void> {
    for (let i = 0; i < tabIds.length; i += REFRESH_CHUNK) {
      await this.db.updateTable('tabs').set({ seen_at: now }).where('tab_id', 'in', tabIds.slice(i, i + REFRESH_CHUNK)).execute();
    }
  }

  async purgeUnseen(before: number): Promise<number> {
    const result = await this.db
      .deleteFrom('tabs')
      .where((eb) => eb.or([eb('seen_at', '<', before), eb.and([eb('seen_at', 'is', null), eb('registered_at', '<', before)])]))
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
