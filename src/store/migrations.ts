import { sql, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import { encodedPointProblem } from '../protocol/ed25519-strict.js';

// Portable DDL only (SQLite and PostgreSQL): Kysely's schema builder, no dialect-specific SQL.
const migrations: Record<string, Migration> = {
  '0001_spine': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('tabs')
        .addColumn('tab_id', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('session_hash', 'varchar(64)', (c) => c.notNull())
        .addColumn('registered_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('codes')
        .addColumn('code', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('tab_id', 'varchar(64)', (c) => c.notNull())
        .addColumn('session_hash', 'varchar(64)')
        .addColumn('origin', 'text')
        .addColumn('purpose', 'text', (c) => c.notNull())
        .addColumn('property_filter', 'text')
        .addColumn('attachment_filter', 'text')
        .addColumn('service_id', 'varchar(128)', (c) => c.notNull())
        .addColumn('agent_api_timeout', 'integer')
        .addColumn('nonce', 'varchar(64)', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('state', 'varchar(16)', (c) => c.notNull())
        .addColumn('legal_id', 'varchar(255)')
        .addColumn('signed_at', 'bigint')
        .execute();
      await db.schema.createIndex('codes_expires_at').on('codes').column('expires_at').execute();
      await db.schema
        .createTable('identities')
        .addColumn('id', 'varchar(255)', (c) => c.primaryKey())
        .addColumn('provider', 'varchar(255)', (c) => c.notNull())
        .addColumn('state', 'varchar(16)', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addColumn('valid_from', 'bigint', (c) => c.notNull())
        .addColumn('valid_to', 'bigint', (c) => c.notNull())
        .addColumn('properties', 'text', (c) => c.notNull())
        .addColumn('attachments', 'text', (c) => c.notNull())
        .addColumn('client_key_name', 'varchar(64)', (c) => c.notNull())
        .addColumn('client_pub_key', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('server_keys')
        .addColumn('kid', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('purpose', 'varchar(32)', (c) => c.notNull())
        .addColumn('private_key', 'text', (c) => c.notNull())
        .addColumn('public_key', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
    },
  },
  '0002_agent_accounts': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('accounts')
        .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('user_name', 'varchar(64)', (c) => c.notNull().unique())
        .addColumn('password_hash', 'text', (c) => c.notNull())
        .addColumn('email', 'varchar(255)')
        .addColumn('state', 'varchar(16)', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('api_keys')
        .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
        .addColumn('key_hash', 'varchar(64)', (c) => c.notNull().unique())
        .addColumn('note', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('revoked_at', 'bigint')
        .execute();
      await db.schema.alterTable('identities').addColumn('account_id', 'varchar(64)').execute();
      await db.schema.createIndex('identities_account_id').on('identities').column('account_id').execute();
      await db.schema
        .createTable('attachments')
        .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('identity_id', 'varchar(255)', (c) => c.notNull())
        .addColumn('content_type', 'varchar(128)', (c) => c.notNull())
        .addColumn('file_name', 'varchar(255)', (c) => c.notNull())
        .addColumn('content', 'text', (c) => c.notNull())
        .addColumn('size', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('attachments_identity_id').on('attachments').column('identity_id').execute();
    },
  },
  '0003_backend_callbacks': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('service_registrations')
        .addColumn('service_id', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('callback_url', 'text', (c) => c.notNull())
        .addColumn('session_id', 'varchar(256)', (c) => c.notNull())
        .addColumn('webhook_secret', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('callbacks')
        .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('service_id', 'varchar(64)', (c) => c.notNull())
        .addColumn('tab_id', 'varchar(64)', (c) => c.notNull())
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('body', 'text', (c) => c.notNull())
        .addColumn('webhook_secret', 'text')
        .addColumn('state', 'varchar(16)', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull())
        .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
        .addColumn('deadline', 'bigint', (c) => c.notNull())
        .addColumn('lease_until', 'bigint')
        .addColumn('last_error', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('delivered_at', 'bigint')
        .execute();
      await db.schema.createIndex('callbacks_due').on('callbacks').columns(['state', 'next_attempt_at']).execute();
    },
  },
  '0004_offline_messages': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('offline_messages')
        // Time-ordered ids (see sql/message-store.ts): ORDER BY id is arrival order, on every backend.
        .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('account_id', 'varchar(64)', (c) => c.notNull())
        .addColumn('from_jid', 'varchar(3071)', (c) => c.notNull())
        .addColumn('to_jid', 'varchar(3071)', (c) => c.notNull())
        .addColumn('type', 'varchar(16)', (c) => c.notNull())
        .addColumn('content', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('offline_messages_account').on('offline_messages').columns(['account_id', 'id']).execute();
    },
  },
  '0005_session_addresses': {
    async up(db: Kysely<any>) {
      // Bindings no live connection refreshes any more are purged (docs/events.md "Tab bindings").
      await db.schema.alterTable('tabs').addColumn('seen_at', 'bigint').execute();
      await db.schema.createIndex('tabs_seen').on('tabs').columns(['seen_at']).execute();
      // SignatureReceivedBE goes only to the session that asked for the code.
      await db.schema.alterTable('callbacks').addColumn('tab_session', 'varchar(64)').execute();
    },
  },
  '0006_limits_and_retention': {
    async up(db: Kysely<any>) {
      // ListIdentities pages by (created_at, id) within an account; the purge deletes by expiry / deadline.
      await db.schema.createIndex('identities_account_page').on('identities').columns(['account_id', 'created_at', 'id']).execute();
      await db.schema.createIndex('service_registrations_expires_at').on('service_registrations').column('expires_at').execute();
      await db.schema.createIndex('callbacks_deadline').on('callbacks').column('deadline').execute();
    },
  },
  '0007_reference_pages': {
    async up(db: Kysely<any>) {
      // The origin a tab registered from: cookie-less QR requests must come from it (docs/events.md).
      await db.schema.alterTable('tabs').addColumn('origin', 'varchar(2048)').execute();
      // The event a settled code sent its tab, so a tab that reconnects after a restart still gets it.
      await db.schema.alterTable('codes').addColumn('tab_event', 'text').execute();
      await db.schema.createIndex('codes_tab_signed').on('codes').columns(['tab_id', 'signed_at']).execute();
    },
  },
  '0008_qr_insert_index': {
    async up(db: Kysely<any>) {
      // Only settled codes are looked up by tab (recentTabEvents asks for signed_at >= ?, which implies
      // NOT NULL, so SQLite and PostgreSQL still use the index). Pending codes, one per QR request,
      // no longer pay for an index entry: about a third of an insert's cost (docs/benchmarks.md#login-codes).
      await db.schema.dropIndex('codes_tab_signed').execute();
      await db.schema.createIndex('codes_tab_signed').on('codes').columns(['tab_id', 'signed_at']).where('signed_at', 'is not', null).execute();
    },
  },
  '0009_key_ring_generations': {
    async up(db: Kysely<any>) {
      // A key's place in its purpose's ring, unique per purpose: creating the first key is an insert of
      // generation 0 that only one node can win, and "newest" no longer depends on the nodes' clocks.
      await db.schema.alterTable('server_keys').addColumn('generation', 'integer', (c) => c.notNull().defaultTo(0)).execute();
      // Existing keys: numbered in the order they were created (ties by kid), the same on every backend.
      await db
        .updateTable('server_keys')
        .set((eb) => ({
          generation: eb
            .selectFrom('server_keys as older')
            .select((o) => o.fn.countAll().as('n'))
            .whereRef('older.purpose', '=', 'server_keys.purpose')
            .where((o) =>
              o.or([
                o('older.created_at', '<', o.ref('server_keys.created_at')),
                o.and([o('older.created_at', '=', o.ref('server_keys.created_at')), o('older.kid', '<', o.ref('server_keys.kid'))]),
              ]),
            ),
        }))
        .execute();
      await db.schema.createIndex('server_keys_ring').on('server_keys').columns(['purpose', 'generation']).unique().execute();
    },
  },
  '0010_code_scan_freshness': {
    async up(db: Kysely<any>) {
      // Codes that cannot be relayed (docs/relay.md): the seconds within which a signing app must fetch the
      // code (null: no limit), when the first fetch bound it, and the SHA-256 of the binding token it got.
      // One column per statement: SQLite's ALTER TABLE adds one column at a time.
      await db.schema.alterTable('codes').addColumn('scan_seconds', 'integer').execute();
      await db.schema.alterTable('codes').addColumn('fetched_at', 'bigint').execute();
      await db.schema.alterTable('codes').addColumn('binding_hash', 'varchar(64)').execute();
    },
  },
  '0011_identity_key_problems': {
    async up(db: Kysely<any>) {
      // Keys are checked when they are offered (docs/signing.md "Keys that are refused"); identities stored
      // before that are checked here once. One whose key is of small order or not canonical is marked, not
      // deleted: the operator sees it in `tabwire identity list`, and it can no longer sign.
      await db.schema.alterTable('identities').addColumn('key_problem', 'varchar(32)').execute();
      let after = '';
      for (;;) {
        const rows: { id: string; client_pub_key: string }[] = await db
          .selectFrom('identities')
          .select(['id', 'client_pub_key'])
          .where('id', '>', after)
          .orderBy('id')
          .limit(MIGRATION_PAGE)
          .execute();
        for (const row of rows) {
          const problem = encodedPointProblem(Buffer.from(row.client_pub_key, 'base64'));
          if (problem) await db.updateTable('identities').set({ key_problem: problem }).where('id', '=', row.id).execute();
        }
        if (rows.length < MIGRATION_PAGE) break;
        after = rows[rows.length - 1]!.id;
      }
    },
  },
  '0012_result_outbox': {
    async up(db: Kysely<any>) {
      // The settlement row is the outbox of its tab event (docs/events.md "Results reach the page once"):
      // null while the event is owed to the tab's stream. Codes settled before this version were published (or replayed) by it.
      await db.schema.alterTable('codes').addColumn('announced_at', 'bigint').execute();
      await db.updateTable('codes').set((eb) => ({ announced_at: eb.ref('signed_at') })).where('signed_at', 'is not', null).execute();
      // Only what is owed is indexed: pending codes (signed_at null) and published ones cost no entry.
      await db.schema
        .createIndex('codes_unannounced')
        .on('codes')
        .column('signed_at')
        .where('signed_at', 'is not', null)
        .where(sql.ref('announced_at'), 'is', null)
        .execute();
    },
  },
  '0013_oidc': {
    async up(db: Kysely<any>) {
      // The OpenID Provider's records (docs/oidc.md "Storage"): codes, sessions, interactions, grants, tokens,
      // each by the library's model name and id. Every row expires; the purge deletes it after expiry.
      await db.schema
        .createTable('oidc_entries')
        .addColumn('model', 'varchar(64)', (c) => c.notNull())
        .addColumn('id', 'varchar(255)', (c) => c.notNull())
        .addColumn('payload', 'varchar(65536)', (c) => c.notNull())
        .addColumn('grant_id', 'varchar(255)')
        .addColumn('uid', 'varchar(255)')
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('consumed_at', 'bigint')
        .addPrimaryKeyConstraint('oidc_entries_pk', ['model', 'id'])
        .execute();
      await db.schema.createIndex('oidc_entries_grant_id').on('oidc_entries').column('grant_id').execute();
      await db.schema.createIndex('oidc_entries_uid').on('oidc_entries').columns(['model', 'uid']).execute();
      await db.schema.createIndex('oidc_entries_expires_at').on('oidc_entries').column('expires_at').execute();
      // The relying parties the operator registered (`tabwire oidc client add`); URI lists are JSON arrays.
      await db.schema
        .createTable('oidc_clients')
        .addColumn('client_id', 'varchar(255)', (c) => c.primaryKey())
        .addColumn('client_secret', 'varchar(255)')
        .addColumn('token_auth', 'varchar(32)', (c) => c.notNull())
        .addColumn('subject_type', 'varchar(16)', (c) => c.notNull())
        .addColumn('id_token_alg', 'varchar(16)', (c) => c.notNull())
        .addColumn('name', 'varchar(255)')
        .addColumn('redirect_uris', 'varchar(32768)', (c) => c.notNull())
        .addColumn('post_logout_redirect_uris', 'varchar(32768)', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute();
    },
  },
  '0014_qr_requests': {
    async up(db: Kysely<any>) {
      // QR requests whose codes are derived (docs/signing.md "Derived codes"): one row per request and code key,
      // where each refresh used to insert a code row. The id is 36 bits of a MAC of the request (fits a bigint).
      await db.schema
        .createTable('qr_requests')
        .addColumn('id', 'bigint', (c) => c.primaryKey())
        .addColumn('kid', 'varchar(64)', (c) => c.notNull())
        .addColumn('tab_id', 'varchar(64)', (c) => c.notNull())
        .addColumn('session_hash', 'varchar(64)')
        .addColumn('origin', 'text')
        .addColumn('purpose', 'text', (c) => c.notNull())
        .addColumn('property_filter', 'text')
        .addColumn('attachment_filter', 'text')
        .addColumn('service_id', 'varchar(128)', (c) => c.notNull())
        .addColumn('agent_api_timeout', 'integer')
        .addColumn('scan_seconds', 'integer')
        .addColumn('validity_ms', 'bigint', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('qr_requests_expires_at').on('qr_requests').column('expires_at').execute();
    },
  },
  '0015_written_results': {
    async up(db: Kysely<any>) {
      // Results a node with its streams in memory had written to their pages when it stopped, by publish key
      // (hub/delivery.ts resultPublishKey): the replay after its restart leaves them out (docs/events.md "Restarts").
      await db.schema
        .createTable('written_results')
        .addColumn('publish_key', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('written_results_expires_at').on('written_results').column('expires_at').execute();
    },
  },
};

/** Rows read per query by a migration that visits a whole table. */
const MIGRATION_PAGE = 1000;

/** Migrations compiled into the program, so an installed service needs no migration files on disk. */
export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
};
