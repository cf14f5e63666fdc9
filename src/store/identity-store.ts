import type { Ed25519EncodingProblem } from '../protocol/ed25519-strict.js';

/** Identity ("legal ID") states (docs/signing.md); identity/identity.ts says which moves between them are allowed. */
export const IDENTITY_STATES = ['Created', 'Approved', 'Rejected', 'Obsoleted', 'Compromised'] as const;
export type IdentityState = (typeof IDENTITY_STATES)[number];

/** Metadata of an attachment; the content itself is stored separately. */
export interface AttachmentMeta {
  id: string;
  contentType: string;
  fileName: string;
  signature: string;
  timestamp: number;
}

/** A signer's identity as stored; the rules of its states are identity/identity.ts's. */
export interface Identity {
  id: string;
  provider: string;
  state: IdentityState;
  /** Times in milliseconds since the epoch. */
  created: number;
  updated: number;
  from: number;
  to: number;
  properties: Record<string, string>;
  attachments: AttachmentMeta[];
  /** Name of the client key's algorithm; only "ed25519" is accepted. */
  clientKeyName: string;
  /** The raw 32-byte Ed25519 public key, base64. */
  clientPubKey: string;
  /** The agent account that applied for it; null for identities an operator created with the CLI. */
  accountId: string | null;
  /**
   * Set on identities stored before keys were checked whose key proves nothing (small order or not
   * canonical, docs/signing.md "Keys that are refused"): kept, listed by the operator CLI, never signs.
   */
  keyProblem?: Ed25519EncodingProblem;
}

export interface IdentityStore {
  insert(identity: Identity): Promise<void>;
  get(id: string): Promise<Identity | undefined>;
  /** All identities, or an account's own, oldest first. */
  list(accountId?: string): Promise<Identity[]>;
  /** Up to `limit` of an account's identities, oldest first, after `after` (exclusive) when given. */
  page(accountId: string, limit: number, after?: IdentityCursor): Promise<Identity[]>;
  /** How many identities of an account are in one of `states`. */
  countFor(accountId: string, states: readonly IdentityState[]): Promise<number>;
  /** Sets the state only if it is still `from`; returns whether it changed. */
  transition(id: string, from: IdentityState, to: IdentityState, now: number): Promise<boolean>;
}

/** A position in an account's identity list: the (created, id) of the last identity seen. */
export interface IdentityCursor {
  created: number;
  id: string;
}
