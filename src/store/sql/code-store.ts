import type { CompiledQuery, Insertable, Kysely, Selectable } from 'kysely';
import type { CodesTable, Database } from '../schema.js';
import { MARKS_PER_CALL, type CodeState, type CodeStore, type LoginCode, type Settlement, type TabEventRecord, type UnpublishedResult } from '../stores.js';
import { callbackInsertSql, toCallbackRow } from './callback-store.js';
import type { SqlFlavour } from './flavour.js';
import { commitQueue, GroupCommit, outboxCommitQueue, rowsChanged, withParameters } from './group-commit.js';

/** Any complete code: only its shape matters for compiling the insert. */
const PLACEHOLDER: LoginCode = {
  code: '', tabId: '', sessionHash: '', origin: '', purpose: '', propertyFilter: '', attachmentFilter: '', serviceId: '',
  agentApiTimeout: 0, nonce: '', createdAt: 0, expiresAt: 0, state: 'pending', legalId: '', signedAt: 0,
  scanSeconds: 0, fetchedAt: 0, bindingHash: '',
};

const toCode = (row: Selectable<CodesTable>): LoginCode => ({
  code: row.code,
  tabId: row.tab_id,
  sessionHash: row.session_hash,
  origin: row.origin,
  purpose: row.purpose,
  propertyFilter: row.property_filter,
  attachmentFilter: row.attachment_filter,
  serviceId: row.service_id,
  agentApiTimeout: row.agent_api_timeout === null ? null : Number(row.agent_api_timeout),
  nonce: row.nonce,
  createdAt: Number(row.created_at),
  expiresAt: Number(row.expires_at),
  state: row.state as CodeState,
  legalId: row.legal_id,
  signedAt: row.signed_at === null ? null : Number(row.signed_at),
  scanSeconds: row.scan_seconds === null ? null : Number(row.scan_seconds),
  fetchedAt: row.fetched_at === null ? null : Number(row.fetched_at),
  bindingHash: row.binding_hash,
  // Only a settled code has these (a pending one reads as it was inserted).
  ...(row.tab_event === null ? {} : { tabEvent: JSON.parse(row.tab_event) as TabEventRecord['event'] }),
  ...(row.signed_at === null ? {} : { published: row.announced_at !== null }),
});

const toRow = (c: LoginCode): Insertable<CodesTable> => ({
  code: c.code,
  tab_id: c.tabId,
  session_hash: c.sessionHash,
  origin: c.origin,
  purpose: c.purpose,
  property_filter: c.propertyFilter,
  attachment_filter: c.attachmentFilter,
  service_id: c.serviceId,
  agent_api_timeout: c.agentApiTimeout,
  nonce: c.nonce,
  created_at: c.createdAt,
  expires_at: c.expiresAt,
  state: c.state,
  legal_id: c.legalId,
  signed_at: c.signedAt,
  tab_event: null,
  scan_seconds: c.scanSeconds,
  fetched_at: c.fetchedAt,
  binding_hash: c.bindingHash,
  announced_at: null,
});

/** Expired codes deleted per statement by the purge (a few ms of SQLite each). */
const PURGE_SLICE = 2_000;

/** A tab gets at most this many re-derived events on reconnect (a tab asks for one code at a time). */
const RECENT_EVENTS_LIMIT = 20;

/** Login codes in SQL (SQLite or PostgreSQL through Kysely). */
export class SqlCodeStore implements CodeStore {
  /**
   * The insert runs on the QR hot path (a new code every 2 s per waiting tab), so Kysely builds and
   * compiles it once; each insert only binds new parameters, in the column order of `toRow`, and is
   * group-committed where the flavour does that.
   */
  private readonly inserts: GroupCommit;
  /**
   * A login writes a code three times: its row at the first fetch of a derived code, its settlement, and the
   * mark that its result was published. The first is group-committed too, with the same queue, so logins
   * arriving together share commits (docs/store.md "Group commit"). The marks come in lists of up to
   * MARKS_PER_CALL codes a statement, one list per half second at most (quicklogin/published-marks.ts), and
   * run on their own: in the queue, one slow mark statement would hold up every code insert behind it.
   */
  private readonly insertsIfAbsent: GroupCommit;
  private readonly publishedMarks: CompiledQuery;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly flavour: SqlFlavour,
  ) {
    const queue = commitQueue(db, flavour, 'turn');
    this.inserts = new GroupCommit(db.insertInto('codes').values(toRow(PLACEHOLDER)).compile(), queue);
    this.insertsIfAbsent = new GroupCommit(
      db.insertInto('codes').values(toRow(PLACEHOLDER)).onConflict((oc) => oc.column('code').doNothing()).compile(),
      queue,
    );
    this.publishedMarks = db
      .updateTable('codes')
      .set({ announced_at: 0 })
      .where('code', 'in', Array.from({ length: MARKS_PER_CALL }, () => ''))
      .where('announced_at', 'is', null)
      .compile();
  }

  async insert(c: LoginCode): Promise<void> {
    await this.inserts.run(Object.values(toRow(c)));
  }

  async insertIfAbsent(c: LoginCode): Promise<boolean> {
    // ON CONFLICT DO NOTHING: on PostgreSQL a concurrent insert of the same code waits for the first's commit and
    // inserts nothing, so two nodes resolving one derived code at once converge on one row.
    return (await this.insertsIfAbsent.run(Object.values(toRow(c)))) === 1;
  }

  async get(code: string): Promise<LoginCode | undefined> {
    const row = await this.db.selectFrom('codes').selectAll().where('code', '=', code).executeTakeFirst();
    return row && toCode(row);
  }

  async settle(code: string, o: Settlement): Promise<boolean> {
    // One conditional UPDATE: the database decides which of concurrent signatures wins. On PostgreSQL the
    // second of two concurrent updates waits for the first's row lock, then re-checks `state = 'pending'`
    // on the committed row (READ COMMITTED) and changes nothing: exactly one wins on any number of nodes.
    // A tab event is owed from this commit on (announced_at null: the result outbox), whatever happens next.
    // The column keeps the name deployed databases have (migration 0012); it marks the event published.
    const publishedAt = o.tabEvent === undefined ? o.now : null;
    const settle = (db: Kysely<Database>) =>
      db
        .updateTable('codes')
        .set({ state: o.state, legal_id: o.legalId, signed_at: o.now, tab_event: o.tabEvent === undefined ? null : JSON.stringify(o.tabEvent), announced_at: publishedAt })
        .where('code', '=', code)
        .where('state', '=', 'pending')
        .where('expires_at', '>', o.now)
        .executeTakeFirst();
    const { callback } = o;
    if (!callback) return Number((await settle(this.db)).numUpdatedRows) === 1;
    // Backend mode: the callback exists exactly when the code is approved, so none is ever sent for a
    // code that ends rejected or won by another signature, and none is lost to a crash in between.
    // Every backend-mode signature takes this path: group-committed with the outbox's other writes (one
    // commit per loop turn under load), both statements compiled once (docs/benchmarks.md#group-commit).
    const sql = this.settleSql();
    const tabEvent = o.tabEvent === undefined ? null : JSON.stringify(o.tabEvent);
    const [settled] = await outboxCommitQueue(this.db, this.flavour).write([
      // Parameters in the compiled statement's order: set state, legal_id, signed_at, tab_event, announced_at; where code, state, expires_at.
      { sql: sql.settle, params: [o.state, o.legalId, o.now, tabEvent, publishedAt, code, 'pending', o.now] },
      // Runs only when the code was settled (see Write).
      { sql: sql.insertCallback, params: Object.values(toCallbackRow(callback.callback, callback.leaseUntil ?? null)) },
    ]);
    return settled === 1;
  }

  async bind(code: string, bindingHash: string, now: number): Promise<boolean> {
    // One conditional UPDATE, like settle: of two apps fetching at once, the database lets exactly one
    // set the hash (on PostgreSQL the second waits for the row lock, then sees binding_hash set and
    // changes nothing), so exactly one of them holds a token that the signature POST will accept.
    const result = await this.db
      .updateTable('codes')
      .set({ binding_hash: bindingHash, fetched_at: now })
      .where('code', '=', code)
      .where('state', '=', 'pending')
      .where('binding_hash', 'is', null)
      .where('expires_at', '>', now)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  private compiledSettle: { settle: CompiledQuery; insertCallback: CompiledQuery } | undefined;
  private settleSql(): { settle: CompiledQuery; insertCallback: CompiledQuery } {
    this.compiledSettle ??= {
      settle: this.db
        .updateTable('codes')
        .set({ state: 'approved', legal_id: '', signed_at: 0, tab_event: null, announced_at: 0 })
        .where('code', '=', '')
        .where('state', '=', 'pending')
        .where('expires_at', '>', 0)
        .compile(),
      insertCallback: callbackInsertSql(this.db),
    };
    return this.compiledSettle;
  }

  async recentTabEvents(tabId: string, sessionHash: string, since: number): Promise<TabEventRecord[]> {
    // Parameters in the compiled statement's order: where tab_id, session_hash, signed_at; limit.
    const { rows } = await this.db.executeQuery(withParameters(this.recentSql(), [tabId, sessionHash, since, RECENT_EVENTS_LIMIT]));
    return rows.map((r) => ({ code: r.code, signedAt: Number(r.signed_at), event: JSON.parse(r.tab_event!) as TabEventRecord['event'] }));
  }

  async unpublished(since: number, before: number, limit: number): Promise<UnpublishedResult[]> {
    // The partial index codes_unannounced holds exactly the owed rows, so this reads only those.
    const rows = await this.db
      .selectFrom('codes')
      .select(['code', 'tab_id', 'session_hash', 'signed_at', 'tab_event'])
      .where('signed_at', 'is not', null)
      .where('announced_at', 'is', null)
      .where('session_hash', 'is not', null)
      .where('signed_at', '>=', since)
      .where('signed_at', '<', before)
      .orderBy('signed_at')
      .limit(limit)
      .execute();
    return rows.flatMap((r) =>
      r.tab_event === null || r.session_hash === null
        ? []
        : [{ code: r.code, tabId: r.tab_id, sessionHash: r.session_hash, signedAt: Number(r.signed_at), event: JSON.parse(r.tab_event) as TabEventRecord['event'] }],
    );
  }

  async markPublished(codes: readonly string[], now: number): Promise<void> {
    if (codes.length === 0) return;
    if (codes.length > MARKS_PER_CALL) throw new RangeError(`at most ${MARKS_PER_CALL} codes are marked at once`);
    // Padded with the last code to the one length the statement was compiled for: one statement text, prepared once.
    const padded = Array.from({ length: MARKS_PER_CALL }, (_, i) => codes[Math.min(i, codes.length - 1)]!);
    await rowsChanged(this.db, this.publishedMarks, [now, ...padded]);
  }

  /**
   * Asked at every `Register`: each page that arrives, and every page again when the node restarts. Built
   * and compiled once, like the hot writes (the build was most of its CPU).
   */
  private compiledRecent: CompiledQuery<Pick<Selectable<CodesTable>, 'code' | 'signed_at' | 'tab_event'>> | undefined;
  private recentSql(): CompiledQuery<Pick<Selectable<CodesTable>, 'code' | 'signed_at' | 'tab_event'>> {
    this.compiledRecent ??= this.db
      .selectFrom('codes')
      .select(['code', 'signed_at', 'tab_event'])
      .where('tab_id', '=', '')
      .where('session_hash', '=', '')
      .where('signed_at', '>=', 0)
      .where('tab_event', 'is not', null)
      .orderBy('signed_at')
      .orderBy('code')
      .limit(RECENT_EVENTS_LIMIT)
      .compile();
    return this.compiledRecent;
  }

  /**
   * In slices of PURGE_SLICE rows, with the event loop free between them: a busy node stores a code per
   * QR refresh (6,000 a second with 12,000 waiting pages), so one purge run finds hundreds of thousands of
   * codes, and SQLite runs a statement on the event loop's thread.
   */
  async deleteExpired(before: number): Promise<number> {
    let deleted = 0;
    for (;;) {
      const slice = this.db.selectFrom('codes').select('code').where('expires_at', '<', before).limit(PURGE_SLICE);
      const result = await this.db.deleteFrom('codes').where('code', 'in', slice).executeTakeFirst();
      const n = Number(result.numDeletedRows);
      deleted += n;
      if (n < PURGE_SLICE) return deleted;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
}
