import { randomBytes } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import type { Database, OfflineMessagesTable } from '../schema.js';
import type { MessageStore, StoredMessage } from '../stores.js';
import { checkRow } from './column-rules.js';
import type { SqlFlavour } from './flavour.js';

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

const toMessage = (r: Selectable<OfflineMessagesTable>): StoredMessage => ({
  id: r.id,
  accountId: r.account_id,
  from: r.from_jid,
  to: r.to_jid,
  type: r.type,
  content: r.content,
  createdAt: Number(r.created_at),
});

/** Offline messages in SQL; safe with several nodes on one database (docs/store.md "Concurrency"). */
export class SqlMessageStore implements MessageStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly flavour: SqlFlavour,
  ) {}

  async append(m: Omit<StoredMessage, 'id'>, quota: number): Promise<boolean> {
    const row = { id: orderedId(m.createdAt), account_id: m.accountId, from_jid: m.from, to_jid: m.to, type: m.type, content: m.content, created_at: m.createdAt };
    checkRow('offline_messages', row);
    // One statement counts and inserts. That alone is atomic on SQLite (one writer); under READ COMMITTED
    // two such statements may both count quota - 1 (neither sees the other's uncommitted row), so on
    // PostgreSQL appends to one account are serialised by a lock on the account (flavour.serialised).
    return this.flavour.serialised(this.db, `tabwire.mailbox:${m.accountId}`, async (db) => {
      const result = await db
        .insertInto('offline_messages')
        .columns(['id', 'account_id', 'from_jid', 'to_jid', 'type', 'content', 'created_at'])
        .expression(
          db
            .selectNoFrom((eb) => [
              // PostgreSQL does not type parameters in an INSERT's SELECT list: cast each.
              eb.cast<string>(eb.val(row.id), 'text').as('id'),
              eb.cast<string>(eb.val(row.account_id), 'text').as('account_id'),
              eb.cast<string>(eb.val(row.from_jid), 'text').as('from_jid'),
              eb.cast<string>(eb.val(row.to_jid), 'text').as('to_jid'),
              eb.cast<string>(eb.val(row.type), 'text').as('type'),
              eb.cast<string>(eb.val(row.content), 'text').as('content'),
              eb.cast<number>(eb.val(row.created_at), 'bigint').as('created_at'),
            ])
            .where((eb) =>
              eb(eb.selectFrom('offline_messages').select((c) => c.fn.countAll().as('n')).where('account_id', '=', m.accountId), '<', quota),
            ),
        )
        .executeTakeFirst();
      return Number(result.numInsertedOrUpdatedRows ?? 0n) === 1;
    });
  }

  async pop(accountId: string, max: number): Promise<StoredMessage[]> {
    // One statement: the rows deleted are the rows returned. On PostgreSQL the subquery locks what it
    // takes and skips rows a concurrent pop holds, so two pops never return one message and never wait.
    const rows = await this.db
      .deleteFrom('offline_messages')
      .where('id', 'in', (eb) => {
        const oldest = eb.selectFrom('offline_messages').select('id').where('account_id', '=', accountId).orderBy('id').limit(max);
        return this.flavour.skipLocked ? oldest.forUpdate().skipLocked() : oldest;
      })
      .returningAll()
      .execute();
    // RETURNING has no order of its own.
    return rows.map(toMessage).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
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
