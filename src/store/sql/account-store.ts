import type { Kysely, Selectable } from 'kysely';
import type { AccountsTable, Database } from '../schema.js';
import type { Account, AccountState, AccountStore } from '../stores.js';

const toAccount = (row: Selectable<AccountsTable>): Account => ({
  id: row.id,
  userName: row.user_name,
  passwordHash: row.password_hash,
  email: row.email,
  state: row.state as AccountState,
  createdAt: Number(row.created_at),
});

/** Agent accounts in SQL. */
export class SqlAccountStore implements AccountStore {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(a: Account): Promise<boolean> {
    // The unique index on user_name decides races; DO NOTHING keeps this portable and exception-free.
    const result = await this.db
      .insertInto('accounts')
      .values({ id: a.id, user_name: a.userName, password_hash: a.passwordHash, email: a.email, state: a.state, created_at: a.createdAt })
      .onConflict((oc) => oc.column('user_name').doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0n) === 1;
  }

  async byId(id: string): Promise<Account | undefined> {
    const row = await this.db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toAccount(row);
  }

  async byUserName(userName: string): Promise<Account | undefined> {
    const row = await this.db.selectFrom('accounts').selectAll().where('user_name', '=', userName).executeTakeFirst();
    return row && toAccount(row);
  }

  async list(): Promise<Account[]> {
    return (await this.db.selectFrom('accounts').selectAll().orderBy('created_at').orderBy('id').execute()).map(toAccount);
  }

  async setState(id: string, state: AccountState): Promise<boolean> {
    const result = await this.db.updateTable('accounts').set({ state }).where('id', '=', id).executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  async delete(id: string): Promise<boolean> {
    const result = await this.db.deleteFrom('accounts').where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) === 1;
  }
}
