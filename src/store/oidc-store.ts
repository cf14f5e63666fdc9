/**
 * What the OpenID Provider keeps (docs/oidc.md "Storage"): the provider's own short-lived records
 * (authorization codes, sessions, interactions, grants, tokens) and the clients the operator registered.
 * Both live in the store every node shares, so any node serves any step of a login.
 */

/** One record of the OpenID Provider library, by model ("AuthorizationCode", "Session", "Grant", …) and id. */
export interface OidcEntry {
  model: string;
  id: string;
  /** The library's payload as JSON; opaque to the store. */
  payload: string;
  /** The grant the record belongs to (tokens and codes), so a revoked grant takes them all. */
  grantId: string | null;
  /** A session's uid (Session records only), its second key. */
  uid: string | null;
  /** Milliseconds since the epoch after which the record does not exist for readers; every record expires. */
  expiresAt: number;
}

/** A stored record as readers get it. */
export interface FoundOidcEntry {
  payload: string;
  /** When it was consumed (a code exchanged, a token rotated), in ms; null while unused. */
  consumedAt: number | null;
}

export interface OidcEntryStore {
  /** Creates or replaces (model, id); a replaced record is unconsumed unless the payload says otherwise. */
  upsert(entry: OidcEntry): Promise<void>;
  /** The record unless it is missing or expired at `now`. */
  find(model: string, id: string, now: number): Promise<FoundOidcEntry | undefined>;
  /** A Session by its uid, unless missing or expired at `now`. */
  findByUid(model: string, uid: string, now: number): Promise<FoundOidcEntry | undefined>;
  /**
   * Marks the record consumed at `now` and returns true, unless it was consumed already, is missing or
   * expired (false). Of concurrent callers on any nodes, exactly one gets true.
   */
  consume(model: string, id: string, now: number): Promise<boolean>;
  destroy(model: string, id: string): Promise<void>;
  /** Deletes every record (any model) of the grant. */
  revokeByGrantId(grantId: string): Promise<void>;
  /** Deletes records that expired before `before`; returns how many. */
  deleteExpired(before: number): Promise<number>;
}

/** How a client authenticates at the token endpoint (OpenID Connect Core §9); `none`: a public client. */
export type OidcTokenAuth = 'client_secret_basic' | 'client_secret_post' | 'none';

/** A relying party the operator registered (`tabwire oidc client add`). */
export interface OidcClient {
  clientId: string;
  /** The client secret; null for a public client (`tokenAuth` none: PKCE, no secret). */
  clientSecret: string | null;
  tokenAuth: OidcTokenAuth;
  /** `pairwise`: the client sees its own `sub` for each identity (OpenID Connect Core §8.1). */
  subjectType: 'public' | 'pairwise';
  /** The algorithm of its ID tokens: EdDSA (Ed25519), or ES256 for relying parties without EdDSA. */
  idTokenAlg: 'EdDSA' | 'ES256';
  /** Shown to the person in the signing app ("… asks you to log in"); null: the redirect URI's host is shown. */
  name: string | null;
  /** Exact-match redirect URIs, at least one. */
  redirectUris: string[];
  /** Exact-match post-logout redirect URIs (RP-initiated logout). */
  postLogoutRedirectUris: string[];
  createdAt: number;
}

export interface OidcClientStore {
  /** Returns false when the client id exists already. */
  insert(client: OidcClient): Promise<boolean>;
  get(clientId: string): Promise<OidcClient | undefined>;
  /** Every client, oldest first. */
  list(): Promise<OidcClient[]>;
  /** Returns whether a client was removed. */
  remove(clientId: string): Promise<boolean>;
}
