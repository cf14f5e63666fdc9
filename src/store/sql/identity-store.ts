import type { Kysely, Selectable } from 'kysely';
import type { Ed25519EncodingProblem } from '../../protocol/ed25519-strict.js';
import type { Database, IdentitiesTable } from '../schema.js';
import type { Identity, IdentityCursor, IdentityState, IdentityStore } from '../stores.js';

const toIdentity = (row: Selectable<IdentitiesTable>): Identity => ({
  id: row.id,
  provider: row.provider,
  state: row.state as IdentityState,
  created: Number(row.created_at),
  updated: Number(row.updated_at),
  from: Number(row.valid_from),
  to: Number(row.valid_to),
  properties: JSON.parse(row.properties) as Identity['properties'],
  attachments: JSON.parse(row.attachments) as Identity['attachments'],
  clientKeyName: row.client_key_name,
  clientPubKey: row.client_pub_key,
  accountId: row.account_id,
  ...(row.key_problem === null ? {} : { keyProblem: row.key_problem as Ed25519EncodingProblem }),
});

/** Identities in SQL; properties and attachment metadata as JSON text (portable across backends). */
export class SqlIdentityStore implements IdentityStore {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(i: Identity): Promise<void> {
    await this.db
      .insertInto('identities')
      .values({
        id: i.id,
        provider: i.provider,
        state: i.state,
        created_at: i.created,
        updated_at: i.updated,
        valid_from: i.from,
        valid_to: i.to,
        properties: JSON.stringify(i.properties),
        attachments: JSON.stringify(i.attachments),
        client_key_name: i.clientKeyName,
        client_pub_key: i.clientPubKey,
        account_id: i.accountId,
        key_problem: i.keyProblem ?? null,
      })
      .execute();
  }

  async get(id: string): Promise<Identity | undefined> {
    const row = await this.db.selectFrom('identities').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toIdentity(row);
  }

  async list(accountId?: string): Promise<Identity[]> {
    let query = this.db.selectFrom('identities').selectAll();
    if (accountId !== undefined) query = query.where('account_id', '=', accountId);
    const rows = await query.orderBy('created_at').orderBy('id').execute();
    return rows.map(toIdentity);
  }

  async page(accountId: string, limit: number, after?: IdentityCursor): Promise<Identity[]> {
    let query = this.db.selectFrom('identities').selectAll().where('account_id', '=', accountId);
    // Keyset paging on (created_at, id): stable while identities are added, and an index walk, not an OFFSET scan.
    if (after !== undefined) {
      query = query.where((eb) =>
        eb.or([eb('created_at', '>', after.created), eb.and([eb('created_at', '=', after.created), eb('id', '>', after.id)])]),
      );
    }
    const rows = await query.orderBy('created_at').orderBy('id').limit(limit).execute();
    return rows.map(toIdentity);
  }

  async countFor(accountId: string, states: readonly IdentityState[]): Promise<number> {
    if (states.length === 0) return 0;
    const row = await this.db
      .selectFrom('identities')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('account_id', '=', accountId)
      .where('state', 'in', [...states])
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async transition(id: string, from: IdentityState, to: IdentityState, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable('identities')
      .set({ state: to, updated_at: now })
      .where('id', '=', id)
      .where('state', '=', from)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }
}
