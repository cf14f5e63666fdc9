import { CompiledQuery, type Insertable, type Kysely, type Selectable } from 'kysely';
import type { CodesTable, Database } from '../schema.js';
import type { CodeState, CodeStore, LoginCode } from '../stores.js';

/** Any complete code: only its shape matters for compiling the insert. */
const PLACEHOLDER: LoginCode = {
  code: '', tabId: '', sessionHash: '', origin: '', purpose: '', propertyFilter: '', attachmentFilter: '', serviceId: '',
  agentApiTimeout: 0, nonce: '', createdAt: 0, expiresAt: 0, state: 'pending', legalId: '', signedAt: 0,
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
});

/** Login codes in SQL (SQLite or PostgreSQL through Kysely). */
export class SqlCodeStore implements CodeStore {
  /**
   * The insert runs on the QR hot path (a new code every 2 s per waiting tab), so Kysely builds and
   * compiles it once; each insert only binds new parameters, in the column order of `toRow`.
   */
  private readonly insertSql: string;
  /** Inserts waiting for the next group commit. */
  private pending: { params: unknown[]; resolve: () => void; reject: (err: unknown) => void }[] = [];

  constructor(private readonly db: Kysely<Database>) {
    this.insertSql = db.insertInto('codes').values(toRow(PLACEHOLDER)).compile().sql;
  }

  /**
   * Group commit: inserts that arrive in the same event-loop turn share one transaction, so under
   * load a commit (the dominant cost of a small insert) is paid once per batch, not per code. Each
   * caller still resolves only once its row is committed.
   */
  insert(c: LoginCode): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending.push({ params: Object.values(toRow(c)), resolve, reject });
      if (this.pending.length === 1) setImmediate(() => void this.flush());
    });
  }

  private async flush(): Promise<void> {
    const batch = this.pending;
    this.pending = [];
    const run = (executor: Pick<Kysely<Database>, 'executeQuery'>, params: unknown[]) => executor.executeQuery(CompiledQuery.raw(this.insertSql, params));
    if (batch.length > 1) {
      try {
        await this.db.transaction().execute(async (trx) => {
          for (const item of batch) await run(trx, item.params);
        });
        for (const item of batch) item.resolve();
        return;
      } catch {
        // One bad row must not fail its neighbours: retry them one by one below.
      }
    }
    for (const item of batch) await run(this.db, item.params).then(item.resolve, item.reject);
  }

  async get(code: string): Promise<LoginCode | undefined> {
    const row = await this.db.selectFrom('codes').selectAll().where('code', '=', code).executeTakeFirst();
    return row && toCode(row);
  }

  async settle(code: string, state: Exclude<CodeState, 'pending'>, legalId: string, now: number): Promise<boolean> {
    // One conditional UPDATE: the database decides which of concurrent signatures wins.
    const result = await this.db
      .updateTable('codes')
      .set({ state, legal_id: legalId, signed_at: now })
      .where('code', '=', code)
      .where('state', '=', 'pending')
      .where('expires_at', '>', now)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  async deleteExpired(before: number): Promise<number> {
    const result = await this.db.deleteFrom('codes').where('expires_at', '<', before).executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
