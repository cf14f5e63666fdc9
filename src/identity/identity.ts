import type { Identity, IdentityState } from '../store/stores.js';

/** The moves between identity states (docs/signing.md); the states themselves are stored (store/identity-store.ts). */
const transitions: Record<IdentityState, readonly IdentityState[]> = {
  Created: ['Approved', 'Rejected'],
  Approved: ['Obsoleted', 'Compromised'],
  Rejected: [],
  Obsoleted: [],
  Compromised: [],
};

/** Whether an operator may move an identity from `from` to `to`. */
export const canTransition = (from: IdentityState, to: IdentityState): boolean => transitions[from].includes(to);

/** Only an approved identity inside its validity period may sign (docs/signing.md). */
export const maySign = (identity: Identity, now: number): boolean =>
  identity.state === 'Approved' && identity.from <= now && now < identity.to;
