import type { Ed25519EncodingProblem } from '../protocol/ed25519-strict.js';

/** Identity ("legal ID") states and the moves between them (docs/signing.md). */
export const IDENTITY_STATES = ['Created', 'Approved', 'Rejected', 'Obsoleted', 'Compromised'] as const;
export type IdentityState = (typeof IDENTITY_STATES)[number];

const transitions: Record<IdentityState, readonly IdentityState[]> = {
  Created: ['Approved', 'Rejected'],
  Approved: ['Obsoleted', 'Compromised'],
  Rejected: [],
  Obsoleted: [],
  Compromised: [],
};

/** Whether an operator may move an identity from `from` to `to`. */
export const canTransition = (from: IdentityState, to: IdentityState): boolean => transitions[from].includes(to);

/** Metadata of an attachment; the content itself is stored separately. */
export interface AttachmentMeta {
  id: string;
  contentType: string;
  fileName: string;
  signature: string;
  timestamp: number;
}

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

/** Only an approved identity inside its validity period may sign (docs/signing.md). */
export const maySign = (identity: Identity, now: number): boolean =>
  identity.state === 'Approved' && identity.from <= now && now < identity.to;
