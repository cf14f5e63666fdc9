import { sql, type Kysely } from 'kysely';
import type { Database } from '../schema.js';
import type { Store } from '../stores.js';
import { SqlAccountStore } from './account-store.js';
import { SqlApiKeyStore } from './api-key-store.js';
import { SqlAttachmentStore } from './attachment-store.js';
import { SqlCallbackStore } from './callback-store.js';
import { SqlCodeStore } from './code-store.js';
import type { SqlFlavour } from './flavour.js';
import { SqlIdentityStore } from './identity-store.js';
import { SqlMessageStore } from './message-store.js';
import { SqlOidcClientStore } from './oidc-client-store.js';
import { SqlOidcEntryStore } from './oidc-entry-store.js';
import { SqlQrRequestStore } from './qr-request-store.js';
import { SqlServerKeyStore } from './server-key-store.js';
import { SqlServiceRegistrationStore } from './service-registration-store.js';
import { SqlTabStore } from './tab-store.js';
import { SqlWrittenResultStore } from './written-result-store.js';

/** The shared SQL stores on an open, migrated database; `close` is the dialect's (it owns the connection or pool). */
export function createSqlStore(db: Kysely<Database>, flavour: SqlFlavour, close: () => Promise<void>): Store {
  return {
    codes: new SqlCodeStore(db, flavour),
    qrRequests: new SqlQrRequestStore(db),
    writtenResults: new SqlWrittenResultStore(db),
    tabs: new SqlTabStore(db, flavour),
    identities: new SqlIdentityStore(db),
    serverKeys: new SqlServerKeyStore(db),
    accounts: new SqlAccountStore(db),
    apiKeys: new SqlApiKeyStore(db),
    attachments: new SqlAttachmentStore(db),
    services: new SqlServiceRegistrationStore(db),
    callbacks: new SqlCallbackStore(db, flavour),
    messages: new SqlMessageStore(db, flavour),
    oidcEntries: new SqlOidcEntryStore(db),
    oidcClients: new SqlOidcClientStore(db),
    ping: async () => {
      await db.selectNoFrom(sql<number>`1`.as('one')).execute();
    },
    close,
  };
}
