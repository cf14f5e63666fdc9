/**
 * Table shapes as Kysely sees them. Times are milliseconds since the epoch in `bigint` columns
 * (PostgreSQL returns those as strings, so readers convert with Number()).
 */
export interface TabsTable {
  tab_id: string;
  session_hash: string;
  registered_at: number | string;
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
}

export interface ServerKeysTable {
  kid: string;
  purpose: string;
  private_key: string;
  public_key: string;
  created_at: number | string;
}

export interface Database {
  tabs: TabsTable;
  codes: CodesTable;
  identities: IdentitiesTable;
  server_keys: ServerKeysTable;
}
