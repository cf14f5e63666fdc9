import type { CompiledQuery, Insertable, Kysely, Selectable } from 'kysely';
import type { CallbacksTable, Database } from '../schema.js';
import type { Callback, CallbackState, CallbackStore } from '../stores.js';
import type { SqlFlavour } from './flavour.js';
import { commitQueue, GroupCommit, outboxCommitQueue } from './group-commit.js';

const toCallback = (row: Selectable<CallbacksTable>): Callback => ({
  id: row.id,
  serviceId: row.service_id,
  tabId: row.tab_id,
  tabSession: row.tab_session,
  url: row.url,
  body: row.body,
  webhookSecret: row.webhook_secret,
  state: row.state as CallbackState,
  attempts: Number(row.attempts),
  nextAttemptAt: Number(row.next_attempt_at),
  deadline: Number(row.deadline),
  lastError: row.last_error,
  createdAt: Number(row.created_at),
  deliveredAt: row.delivered_at === null ? null : Number(row.delivered_at),
});

/** The row of a callback; exported for the code store, which inserts it in the transaction that settles its code. */
export const toCallbackRow = (c: Callback, leaseUntil: number | null): Insertable<CallbacksTable> => ({
  id: c.id,
  service_id: c.serviceId,
  tab_id: c.tabId,
  tab_session: c.tabSession,
  url: c.url,
  body: c.body,
  webhook_secret: c.webhookSecret,
  state: c.state,
  attempts: c.attempts,
  next_attempt_at: c.nextAttemptAt,
  deadline: c.deadline,
  lease_until: leaseUntil,
  last_error: c.lastError,
  created_at: c.createdAt,
  delivered_at: c.deliveredAt,
});

const PLACEHOLDER: Callback = {
  id: '', serviceId: '', tabId: '', tabSession: '', url: '', body: '', webhookSecret: '', state: 'pending', attempts: 0,
  nextAttemptAt: 0, deadline: 0, lastError: '', createdAt: 0, deliveredAt: 0,
};

/** The callbacks insert (a new id only), compiled once per database; parameters in `toCallbackRow`'s order. */
const insertSql = new WeakMap<Kysely<Database>, CompiledQuery>();
export function callbackInsertSql(db: Kysely<Database>): CompiledQuery {
  let compiled = insertSql.get(db);
  if (compiled === undefined) {
    compiled = db.insertInto('callbacks').values(toCallbackRow(PLACEHOLDER, 0)).onConflict((oc) => oc.column('id').doNothing()).compile();
    insertSql.set(db, compiled);
  }
  return compiled;
}

/** PostgreSQL text cannot hold U+0000; an error text from the network is diagnostics, so it is kept with the character replaced. */
const storableError = (error: string): string => error.replace(/\u0000/g, '\uFFFD');

/** The durable callback outbox in SQL. Claims are conditional UPDATEs, so several nodes can share it. */
export class SqlCallbackStore implements CallbackStore {
  // The two writes every callback makes (stored, delivered) are group-committed (see group-commit.ts); in
  // backend mode the store is the code store's settlement, which shares the deliveries' queue.
  private readonly inserts: GroupCommit;
  private readonly deliveries: GroupCommit;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly flavour: SqlFlavour,
  ) {
    this.inserts = new GroupCommit(callbackInsertSql(db), commitQueue(db, flavour, 'immediate'));
    this.deliveries = new GroupCommit(
      db.updateTable('callbacks').set({ state: 'delivered', delivered_at: 0, lease_until: null }).where('id', '=', '').where('state', '=', 'pending').compile(),
      // Answers arrive from many backends' sockets at once: one commit per loop turn, shared with the
      // code settlements that store callbacks (see group-commit.ts).
      outboxCommitQueue(db, flavour),
    );
  }

  async insert(c: Callback, leaseUntil?: number): Promise<boolean> {
    return (await this.inserts.run(Object.values(toCallbackRow(c, leaseUntil ?? null)))) === 1;
  }

  async get(id: string): Promise<Callback | undefined> {
    const row = await this.db.selectFrom('callbacks').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toCallback(row);
  }

  async remove(id: string): Promise<void> {
    await this.db.deleteFrom('callbacks').where('id', '=', id).execute();
  }

  async claimDue(now: number, leaseMs: number, limit: number): Promise<Callback[]> {
    // One statement: the rows leased are the rows returned. On PostgreSQL the subquery locks what it takes
    // and passes over rows another node's claim holds; a row another claim leased and committed after this
    // statement started is re-checked against the WHERE when locked (READ COMMITTED), so it is left out.
    const rows = await this.db
      .updateTable('callbacks')
      .set({ lease_until: now + leaseMs })
      .where('id', 'in', (eb) => {
        const due = eb
          .selectFrom('callbacks')
          .select('id')
          .where('state', '=', 'pending')
          .where('next_attempt_at', '<=', now)
          .where((w) => w.or([w('lease_until', 'is', null), w('lease_until', '<', now)]))
          .orderBy('next_attempt_at')
          .limit(limit);
        return this.flavour.skipLocked ? due.forUpdate().skipLocked() : due;
      })
      .returningAll()
      .execute();
    // RETURNING has no order of its own: oldest due first, as the subquery chose them.
    return rows.map(toCallback).sort((a, b) => a.nextAttemptAt - b.nextAttemptAt);
  }

  async renewLease(id: string, heldUntil: number, until: number): Promise<boolean> {
    const result = await this.db
      .updateTable('callbacks')
      .set({ lease_until: until })
      .where('id', '=', id)
      .where('state', '=', 'pending')
      .where('lease_until', '=', heldUntil)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  async markDelivered(id: string, now: number): Promise<boolean> {
    // Parameters in the compiled statement's order: set state, delivered_at, lease_until; where id, state.
    return (await this.deliveries.run(['delivered', now, null, id, 'pending'])) === 1;
  }

  async reschedule(id: string, attempts: number, nextAttemptAt: number, error: string): Promise<void> {
    await this.db
      .updateTable('callbacks')
      .set({ attempts, next_attempt_at: nextAttemptAt, last_error: storableError(error), lease_until: null })
      .where('id', '=', id)
      .where('state', '=', 'pending')
      .execute();
  }

  async deleteEnded(before: number): Promise<number> {
    const result = await this.db.deleteFrom('callbacks').where('deadline', '<', before).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  async finish(id: string, state: 'gone' | 'expired', attempts: number, error: string): Promise<void> {
    await this.db
      .updateTable('callbacks')
      .set({ state, attempts, last_error: storableError(error), lease_until: null })
      .where('id', '=', id)
      .where('state', '=', 'pending')
      .execute();
  }
}
