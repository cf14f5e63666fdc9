import type { Kysely, Selectable } from 'kysely';
import type { CallbacksTable, Database } from '../schema.js';
import type { Callback, CallbackState, CallbackStore } from '../stores.js';

const toCallback = (row: Selectable<CallbacksTable>): Callback => ({
  id: row.id,
  serviceId: row.service_id,
  tabId: row.tab_id,
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

/** The durable callback outbox in SQL. Claims are conditional UPDATEs, so several nodes can share it. */
export class SqlCallbackStore implements CallbackStore {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(c: Callback): Promise<boolean> {
    const result = await this.db
      .insertInto('callbacks')
      .values({
        id: c.id,
        service_id: c.serviceId,
        tab_id: c.tabId,
        url: c.url,
        body: c.body,
        webhook_secret: c.webhookSecret,
        state: c.state,
        attempts: c.attempts,
        next_attempt_at: c.nextAttemptAt,
        deadline: c.deadline,
        lease_until: null,
        last_error: c.lastError,
        created_at: c.createdAt,
        delivered_at: c.deliveredAt,
      })
      .onConflict((oc) => oc.column('id').doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0n) === 1;
  }

  async get(id: string): Promise<Callback | undefined> {
    const row = await this.db.selectFrom('callbacks').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toCallback(row);
  }

  async remove(id: string): Promise<void> {
    await this.db.deleteFrom('callbacks').where('id', '=', id).execute();
  }

  async claimDue(now: number, leaseMs: number, limit: number): Promise<Callback[]> {
    const candidates = await this.db
      .selectFrom('callbacks')
      .select('id')
      .where('state', '=', 'pending')
      .where('next_attempt_at', '<=', now)
      .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
      .orderBy('next_attempt_at')
      .limit(limit)
      .execute();
    const claimed: Callback[] = [];
    for (const { id } of candidates) {
      const result = await this.db
        .updateTable('callbacks')
        .set({ lease_until: now + leaseMs })
        .where('id', '=', id)
        .where('state', '=', 'pending')
        .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
        .executeTakeFirst();
      if (Number(result.numUpdatedRows) !== 1) continue; // another node took it
      const row = await this.get(id);
      if (row) claimed.push(row);
    }
    return claimed;
  }

  async markDelivered(id: string, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable('callbacks')
      .set({ state: 'delivered', delivered_at: now, lease_until: null })
      .where('id', '=', id)
      .where('state', '=', 'pending')
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  async reschedule(id: string, attempts: number, nextAttemptAt: number, error: string): Promise<void> {
    await this.db
      .updateTable('callbacks')
      .set({ attempts, next_attempt_at: nextAttemptAt, last_error: error, lease_until: null })
      .where('id', '=', id)
      .where('state', '=', 'pending')
      .execute();
  }

  async finish(id: string, state: 'gone' | 'expired', attempts: number, error: string): Promise<void> {
    await this.db
      .updateTable('callbacks')
      .set({ state, attempts, last_error: error, lease_until: null })
      .where('id', '=', id)
      .where('state', '=', 'pending')
      .execute();
  }
}
