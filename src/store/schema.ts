/**
 * Table shapes as Kysely sees them. Times are milliseconds since the epoch in `bigint` columns (the
 * PostgreSQL pool parses those into numbers, postgres/pool.ts; readers still convert with Number()).
 * The column types themselves are in sql/column-rules.ts, checked on every write.
 */
export interface TabsTable {
  tab_id: string;
  session_hash: string;
  registered_at: number | string;
  /** Last time a live connection was known to hold the binding; null until the first refresh. */
  seen_at: number | string | null;
  /** Origin of the page location the tab registered from (null when it was not a URL). */
  origin: string | null;
}

export interface CodesTable {
  code: string;
  tab_id: string;
  session_hash: string | null;
  origin: string | null;
  purpose: string;
  property_filter: string | null;
  attachment_filter: string | null;
  service_id: string;
  agent_api_timeout: number | null;
  nonce: string;
  created_at: number | string;
  expires_at: number | string;
  state: string;
  legal_id: string | null;
  signed_at: number | string | null;
  /** JSON of the event the settlement sent the code's tab (null when none). */
  tab_event: string | null;
  /** Seconds after issue within which a signing app must fetch the code; null: no limit (docs/relay.md). */
  scan_seconds: number | null;
  /** When the first fetch bound the code (scan-limited codes only). */
  fetched_at: number | string | null;
  /** SHA-256 (hex) of the binding token the first fetch was given. */
  binding_hash: string | null;
  /**
   * When the settlement's tab event was published to the tab's stream; null while it is owed (the result
   * outbox) and on pending codes. A settlement without a tab event sets it at once.
   */
  announced_at: number | string | null;
}

/** A QR request whose codes are derived, not stored (store/qr-request-store.ts). */
export interface QrRequestsTable {
  id: number | string;
  kid: string;
  tab_id: string;
  session_hash: string | null;
  origin: string | null;
  purpose: string;
  property_filter: string | null;
  attachment_filter: string | null;
  service_id: string;
  agent_api_timeout: number | null;
  scan_seconds: number | null;
  validity_ms: number | string;
  created_at: number | string;
  expires_at: number | string;
}

export interface IdentitiesTable {
  id: string;
  provider: string;
  state: string;
  created_at: number | string;
  updated_at: number | string;
  valid_from: number | string;
  valid_to: number | string;
  properties: string;
  attachments: string;
  client_key_name: string;
  client_pub_key: string;
  account_id: string | null;
  key_problem: string | null;
}

export interface AccountsTable {
  id: string;
  user_name: string;
  password_hash: string;
  email: string | null;
  state: string;
  created_at: number | string;
}

export interface ApiKeysTable {
  id: string;
  key_hash: string;
  note: string | null;
  created_at: number | string;
  revoked_at: number | string | null;
}

export interface AttachmentsTable {
  id: string;
  identity_id: string;
  content_type: string;
  file_name: string;
  /** base64 */
  content: string;
  size: number;
  created_at: number | string;
}

export interface ServerKeysTable {
  kid: string;
  purpose: string;
  private_key: string;
  public_key: string;
  created_at: number | string;
  /**
   * Position in the purpose's ring: 0 for the first key, then one more per rotation. Unique per purpose,
   * so of two nodes creating a first key at once, or rotating at once, one insert wins (sql/server-key-store.ts).
   */
  generation: number;
}

export interface ServiceRegistrationsTable {
  service_id: string;
  callback_url: string;
  session_id: string;
  webhook_secret: string | null;
  created_at: number | string;
  expires_at: number | string;
}

export interface CallbacksTable {
  id: string;
  service_id: string;
  tab_id: string;
  /** Session hash of the tab that asked (null in rows written before sessions were recorded). */
  tab_session: string | null;
  url: string;
  body: string;
  webhook_secret: string | null;
  state: string;
  attempts: number;
  next_attempt_at: number | string;
  deadline: number | string;
  lease_until: number | string | null;
  last_error: string | null;
  created_at: number | string;
  delivered_at: number | string | null;
}

export interface OfflineMessagesTable {
  id: string;
  account_id: string;
  from_jid: string;
  to_jid: string;
  type: string;
  content: string;
  created_at: number | string;
}

/** A record of the OpenID Provider library (store/oidc-store.ts), by (model, id). */
export interface OidcEntriesTable {
  model: string;
  id: string;
  /** The library's payload, JSON. */
  payload: string;
  grant_id: string | null;
  uid: string | null;
  expires_at: number | string;
  consumed_at: number | string | null;
}

/** A relying party the operator registered. */
export interface OidcClientsTable {
  client_id: string;
  /** Null for a public client. */
  client_secret: string | null;
  token_auth: string;
  subject_type: string;
  id_token_alg: string;
  name: string | null;
  /** JSON array of strings. */
  redirect_uris: string;
  /** JSON array of strings. */
  post_logout_redirect_uris: string;
  created_at: number | string;
}

export interface WrittenResultsTable {
  publish_key: string;
  expires_at: number | string;
}

export interface Database {
  tabs: TabsTable;
  codes: CodesTable;
  qr_requests: QrRequestsTable;
  written_results: WrittenResultsTable;
  identities: IdentitiesTable;
  server_keys: ServerKeysTable;
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  attachments: AttachmentsTable;
  service_registrations: ServiceRegistrationsTable;
  callbacks: CallbacksTable;
  offline_messages: OfflineMessagesTable;
  oidc_entries: OidcEntriesTable;
  oidc_clients: OidcClientsTable;
}
