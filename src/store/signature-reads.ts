import type { LoginCode } from './code-store.js';
import type { Identity } from './identity-store.js';

/** What a signature is checked against, read together. */
export interface SignatureInputs {
  code: LoginCode;
  /** Undefined when no identity has the id the signature names. */
  identity: Identity | undefined;
}

/**
 * A signature's two reads in one statement: the code's row and the identity the signature names (a login's
 * hot path, docs/capacity-estimate.md: one statement instead of two). Undefined when the code is not a row
 * (yet): the caller then resolves it the long way.
 */
export interface SignatureReads {
  read(code: string, identityId: string): Promise<SignatureInputs | undefined>;
}
