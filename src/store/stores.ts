import type { CodeStore } from './code-store.js';
import type { CallbackStore } from './callback-store.js';
import type { IdentityStore } from './identity-store.js';
import type { OidcClientStore, OidcEntryStore } from './oidc-store.js';
import type { QrRequestStore } from './qr-request-store.js';
import type { WrittenResultStore } from './written-result-store.js';

// The larger contracts live beside this file; re-exported so importers keep one path for every store type.
export type { CodeState, CodeStore, LoginCode, Settlement, TabEventRecord, UnpublishedResult } from './code-store.js';
export { MARKS_PER_CALL } from './code-store.js';
export type { Callback, CallbackState, CallbackStore, CallbackToStore } from './callback-store.js';
export type { AttachmentMeta, Identity, IdentityCursor, IdentityState, IdentityStore } from './identity-store.js';
export type { QrRequestRecord, QrRequestStore } from './qr-request-store.js';
export type { WrittenResultStore } from './written-result-store.js';
export type { FoundOidcEntry, OidcClient, OidcClientStore, OidcEntry, OidcEntryStore, OidcTokenAuth } from './oidc-store.js';

/** `created`: the tab was free and is now the session's; `bound`: it was the session's already. */
export type BindOutcome = 'created' | 'bound' | 'conflict';

export interface TabStore {
  /**
   * Binds an unbound tab to a session, from the page origin `origin` (null: unknown). Returns
   * 'conflict' when it is bound to another session; a binding of the same session takes the new
   * origin when one is given. A binding released while this runs never makes a conflict: the tab is then
   * free and is bound ('created').
   */
  bind(tabId: string, sessionHash: string, now: number, origin?: string | null): Promise<BindOutcome>;
  /** The session hash a tab is bound to, if it is registered. */
  sessionOf(tabId: string): Promise<string | undefined>;
  /** The session a tab is bound to and the page origin it registered from. */
  bindingOf(tabId: string): Promise<{ session: string; origin: string | null } | undefined>;
  /** Removes the binding only if it is still this session's (a late release never frees another session's tab). */
  remove(tabId: string, sessionHash: string): Promise<void>;
  /** Marks bindings as still held by a live connection at `now`. */
  refresh(tabIds: readonly string[], now: number): Promise<void>;
  /** Deletes bindings no live connection has refreshed since `before` (left by a stopped process); returns how many. */
  purgeUnseen(before: number): Promise<number>;
}

export interface ServerKey {
  kid: string;
  purpose: string;
  /** PKCS#8 PEM. */
  privateKey: string;
  /** SPKI PEM. */
  publicKey: string;
  createdAt: number;
}

/**
 * The service's own keys, one ring per purpose, shared by every node on the store. Ring order is the order
 * keys were added (not their `createdAt`: nodes' clocks differ).
 */
export interface ServerKeyStore {
  /** A purpose's keys, newest first. */
  list(purpose: string): Promise<ServerKey[]>;
  /**
   * Stores `key` as its purpose's first key unless the purpose has a key already; returns whether it did.
   * Of concurrent callers, on any nodes, exactly one stores its key: callers then use the ring's newest.
   */
  insertFirst(key: ServerKey): Promise<boolean>;
  /**
   * Adds `key` as its purpose's newest key (a rotation); concurrent rotations each get their own place in
   * the ring. A kid stored already is left as it is.
   */
  insert(key: ServerKey): Promise<void>;
}

export type AccountState = 'active' | 'disabled';

/** An agent account (docs/agent-api.md); its JID is `userName@<component domain>`. */
export interface Account {
  id: string;
  userName: string;
  /** scrypt hash in the self-describing format of agent/passwords.ts. */
  passwordHash: string;
  email: string | null;
  state: AccountState;
  createdAt: number;
}

export interface AccountStore {
  /** Returns false when the user name is taken. */
  insert(account: Account): Promise<boolean>;
  byId(id: string): Promise<Account | undefined>;
  byUserName(userName: string): Promise<Account | undefined>;
  list(): Promise<Account[]>;
  setState(id: string, state: AccountState): Promise<boolean>;
  delete(id: string): Promise<boolean>;
}

export interface ApiKey {
  id: string;
  /** SHA-256 of the secret, base64url; the secret itself is shown once and never stored. */
  keyHash: string;
  note: string | null;
  createdAt: number;
  revokedAt: number | null;
}

export interface ApiKeyStore {
  insert(key: ApiKey): Promise<void>;
  byHash(keyHash: string): Promise<ApiKey | undefined>;
  list(): Promise<ApiKey[]>;
  revoke(id: string, now: number): Promise<boolean>;
}

export interface StoredAttachment {
  id: string;
  identityId: string;
  contentType: string;
  fileName: string;
  content: Buffer;
  createdAt: number;
}

export interface AttachmentStore {
  insert(attachment: StoredAttachment): Promise<void>;
  get(id: string): Promise<StoredAttachment | undefined>;
}

/** A backend's callback registration (docs/backend.md). */
export interface ServiceRegistration {
  serviceId: string;
  callbackUrl: string;
  sessionId: string;
  /** Optional Standard Webhooks symmetric secret (`whsec_…`) the backend chose. */
  webhookSecret: string | null;
  createdAt: number;
  expiresAt: number;
}

export interface ServiceRegistrationStore {
  insert(registration: ServiceRegistration): Promise<void>;
  get(serviceId: string): Promise<ServiceRegistration | undefined>;
  /** Sets a new expiry; returns false when the registration does not exist. */
  renew(serviceId: string, expiresAt: number): Promise<boolean>;
  /** Removes registrations that expired before `before`; returns how many. */
  deleteExpired(before: number): Promise<number>;
}

/** A message kept for an agent account until it is popped (docs/agent-api.md). */
export interface StoredMessage {
  id: string;
  accountId: string;
  from: string;
  to: string;
  type: string;
  /** The whole stanza as XML. */
  content: string;
  createdAt: number;
}

export interface MessageStore {
  /** Appends unless the account already holds `quota` messages; returns whether it stored it. */
  append(message: Omit<StoredMessage, 'id'>, quota: number): Promise<boolean>;
  /** Up to `max` of the account's oldest messages, deleted in the same transaction that reads them. */
  pop(accountId: string, max: number): Promise<StoredMessage[]>;
  count(accountId: string): Promise<number>;
}

/** Everything persistent, behind domain-shaped interfaces; one implementation per backend. */
export interface Store {
  codes: CodeStore;
  /** QR requests whose codes are derived (docs/signing.md "Derived codes"). */
  qrRequests: QrRequestStore;
  /** Results written to their pages before a clean stop of one node without Redis (docs/events.md "Restarts"). */
  writtenResults: WrittenResultStore;
  tabs: TabStore;
  identities: IdentityStore;
  serverKeys: ServerKeyStore;
  accounts: AccountStore;
  apiKeys: ApiKeyStore;
  attachments: AttachmentStore;
  services: ServiceRegistrationStore;
  callbacks: CallbackStore;
  messages: MessageStore;
  /** The OpenID Provider's own records (codes, sessions, grants, tokens), every one with an expiry. */
  oidcEntries: OidcEntryStore;
  /** The relying parties the operator registered. */
  oidcClients: OidcClientStore;
  /** One trivial round trip to the database (readiness: a stalled server does not answer it). */
  ping(): Promise<void>;
  close(): Promise<void>;
}
