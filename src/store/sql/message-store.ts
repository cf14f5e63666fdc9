import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../schema.js';
import type { MessageStore, StoredMessage } from '../stores.js';

let lastMs = 0;
let counter = 0;
/**
 * Ids that sort in arrival order as plain strings, portable to every backend (no autoincrement):
 * milliseconds, a per-millisecond counter, and randomness so two nodes never collide.
 */
function orderedId(now: number): string {
  counter = now === lastMs ? counter + 1 : 0;
  lastMs = now;
  return `${now.toString(36).padStart(9, '0')}-${counter.toString(36).padStart(4, '0')}-${randomBytes(6).toString('hex')}`;
}

/** Offline messages in SQL. */
export class SqlMessageStore implements MessageStore {
  constructor(private readonly db: Kysely<Database>) {}

  async append(m: Omit<StoredMessage, 'id'>, quota: number): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const { n } = await trx
        .selectFrom('offline_messages')
        .select((eb) => eb.fn.countAll<number | string>().as('n'))
        .where('account_id', '=', m.accountId)
        .executeTakeFirstOrThrow();
      if (Number(n) >= quota) return false;
      await trx
        .insertInto('offline_messages')
        .values({ id: orderedId(m.createdAt), account_id: m.accountId, from_jid: m.from, to_jid: m.to, type: m.type, content: m.content, created_at: m.createdAt })
        .execute();
      return true;
    });
  }

  async pop(accountId: string, max: number): Promise<StoredMessage[]> {
    return this.db.transaction().execute(async (trx) => {
      const rows = await trx.selectFrom('offline_messages').selectAll().where('account_id', '=', accountId).orderBy('id').limit(max).execute();
      if (rows.length > 0) await trx.deleteFrom('offline_messages').where('id', 'in', rows.map((r) => r.id)).execute();
      return rows.map((r) => ({ id: r.id, accountId: r.account_id, from: r.from_jid, to: r.to_jid, type: r.type, content: r.content, createdAt: Number(r.created_at) }));
    });
  }

  async count(accountId: string): Promise<number> {
    const { n } = await this.db
      .selectFrom('offline_messages')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('account_id', '=', accountId)
      .executeTakeFirstOrThrow();
    return Number(n);
  }
}
