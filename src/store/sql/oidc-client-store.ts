import type { Kysely, Selectable } from 'kysely';
import type { OidcClient, OidcClientStore, OidcTokenAuth } from '../oidc-store.js';
import type { Database, OidcClientsTable } from '../schema.js';

const toClient = (row: Selectable<OidcClientsTable>): OidcClient => ({
  clientId: row.client_id,
  clientSecret: row.client_secret,
  tokenAuth: row.token_auth as OidcTokenAuth,
  subjectType: row.subject_type as OidcClient['subjectType'],
  idTokenAlg: row.id_token_alg as OidcClient['idTokenAlg'],
  name: row.name,
  redirectUris: JSON.parse(row.redirect_uris) as string[],
  postLogoutRedirectUris: JSON.parse(row.post_logout_redirect_uris) as string[],
  createdAt: Number(row.created_at),
});

/** The relying parties the operator registered, in SQL (store/oidc-store.ts). */
export class SqlOidcClientStore implements OidcClientStore {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(c: OidcClient): Promise<boolean> {
    // The primary key decides races; DO NOTHING keeps this portable and exception-free.
    const result = await this.db
      .insertInto('oidc_clients')
      .values({
        client_id: c.clientId,
        client_secret: c.clientSecret,
        token_auth: c.tokenAuth,
        subject_type: c.subjectType,
        id_token_alg: c.idTokenAlg,
        name: c.name,
        redirect_uris: JSON.stringify(c.redirectUris),
        post_logout_redirect_uris: JSON.stringify(c.postLogoutRedirectUris),
        created_at: c.createdAt,
      })
      .onConflict((oc) => oc.column('client_id').doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0n) === 1;
  }

  async get(clientId: string): Promise<OidcClient | undefined> {
    const row = await this.db.selectFrom('oidc_clients').selectAll().where('client_id', '=', clientId).executeTakeFirst();
    return row && toClient(row);
  }

  async list(): Promise<OidcClient[]> {
    return (await this.db.selectFrom('oidc_clients').selectAll().orderBy('created_at').orderBy('client_id').execute()).map(toClient);
  }

  async remove(clientId: string): Promise<boolean> {
    const result = await this.db.deleteFrom('oidc_clients').where('client_id', '=', clientId).executeTakeFirst();
    return Number(result.numDeletedRows) === 1;
  }
}
