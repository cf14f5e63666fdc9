import type { CallbackToStore } from './callback-store.js';

/** Final states a login code moves to exactly once. */
export type CodeState = 'pending' | 'approved' | 'rejected';

/** A QR login code and everything the request bound it to (docs/signing.md). */
export interface LoginCode {
  code: string;
  /** Empty when the request named no tab. */
  tabId: string;
  /**
   * The session the result is for: the session holding the tab when the code was issued (with a
   * tab), else the caller's session if it sent one.
   */
  sessionHash: string | null;
  origin: string | null;
  purpose: string;
  propertyFilter: string | null;
  attachmentFilter: string | null;
  /** Empty in browser-only mode. */
  serviceId: string;
  agentApiTimeout: number | null;
  nonce: string;
  createdAt: number;
  expiresAt: number;
  state: CodeState;
  legalId: string | null;
  signedAt: number | null;
  /**
   * Scan freshness (docs/relay.md): a signing app must fetch the code within this many seconds of
   * `createdAt`, and the first fetch binds it. Null: no limit, no binding (the default).
   */
  scanSeconds: number | null;
  /** When the first fetch bound the code; null while unbound. */
  fetchedAt: number | null;
  /** SHA-256 (hex) of the binding token the first fetch was given; null while unbound. */
  bindingHash: string | null;
  /** As read (`get`) of a settled code: the event the settlement sent the code's tab, if any. Never written by `insert`. */
  tabEvent?: TabEventRecord['event'];
  /** As read (`get`) of a settled code: false while its tab event is owed to its tab's stream (the result outbox). */
  published?: boolean;
}

/**
 * Codes one `markPublished` call takes at most. One statement marks them all; with the code list padded to this
 * length it is one statement text, which PostgreSQL prepares once (32 codes and the time stay within the
 * 64 parameters of a prepared statement, store/postgres/prepared-statements.ts).
 */
export const MARKS_PER_CALL = 32;

/** How a code is settled. */
export interface Settlement {
  state: Exclude<CodeState, 'pending'>;
  legalId: string;
  now: number;
  /** Backend mode: the callback stored in the same transaction. */
  callback?: CallbackToStore;
  /** The event the code's tab is sent, kept so a tab reconnecting after a restart still gets it. */
  tabEvent?: TabEventRecord['event'];
}

/** A settled code's tab event no node has published yet (the result outbox; docs/events.md "Results reach the page once"). */
export interface UnpublishedResult extends TabEventRecord {
  tabId: string;
  sessionHash: string;
}

/** An event a settled code sent its tab. */
export interface TabEventRecord {
  code: string;
  signedAt: number;
  event: { type: string; data: unknown };
}

/** Login codes (docs/signing.md): each is settled at most once and, with scan freshness, bound by its first fetch. */
export interface CodeStore {
  insert(code: LoginCode): Promise<void>;
  /**
   * Stores a derived code's row on its first fetch (docs/signing.md "Derived codes") unless the code is a row
   * already; returns whether it did. Of concurrent callers on any nodes exactly one stores it, and all of them
   * then share that row (its nonce, binding and settlement).
   */
  insertIfAbsent(code: LoginCode): Promise<boolean>;
  get(code: string): Promise<LoginCode | undefined>;
  /**
   * Moves a pending code that has not expired at `now` to `state`, atomically: of concurrent
   * callers exactly one gets true (single-use codes). A `callback` (backend mode) is stored in the
   * same transaction, so it exists if and only if this call settled the code.
   */
  settle(code: string, settlement: Settlement): Promise<boolean>;
  /**
   * Binds a pending, unexpired, unbound code to the fetch that gave out the token hashed as
   * `bindingHash`, atomically: of concurrent callers exactly one gets true (docs/relay.md).
   */
  bind(code: string, bindingHash: string, now: number): Promise<boolean>;
  /**
   * Events settled codes sent to a tab of a session since `since` (signature time), oldest first:
   * what a tab that reconnects after a restart may have missed.
   */
  recentTabEvents(tabId: string, sessionHash: string, since: number): Promise<TabEventRecord[]>;
  /**
   * The result outbox: codes settled between `since` and `before` (signature time) whose tab event is not
   * marked published, oldest first, at most `limit`. A settlement with a tab event starts unpublished; one
   * without is never listed.
   */
  unpublished(since: number, before: number, limit: number): Promise<UnpublishedResult[]>;
  /** These codes' tab events are in their tabs' streams: the outbox lets them be. At most MARKS_PER_CALL codes: one statement. */
  markPublished(codes: readonly string[], now: number): Promise<void>;
  /** Removes codes that expired before `before`; returns how many. */
  deleteExpired(before: number): Promise<number>;
}
