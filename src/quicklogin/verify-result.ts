import { createPublicKey, verify } from 'node:crypto';
import canonicalize from 'canonicalize';
import { strictlyEncoded } from '../protocol/ed25519-strict.js';

/**
 * Verifies a login result's `ServerSignature` (docs/signing.md "The result"): the service's Ed25519
 * signature (RFC 8032), base64, over the RFC 8785 (JCS) canonical JSON of every other field, checked
 * with the keys the service publishes at `/.well-known/tabwire/result-keys`. Self-contained (node:crypto
 * and canonicalize), so a relying party outside a browser (`tabwire login`, a site's backend) can use it.
 */

export class ResultVerificationError extends Error {
  override name = 'ResultVerificationError';
}

/** One key of `{"keys": [...]}` from `/.well-known/tabwire/result-keys`. */
export interface ResultKeyJwk {
  kty: string;
  crv?: string;
  x?: string;
  kid?: string;
}

/**
 * Returns the `kid` of the published key the signature verifies with (undefined when the key has none);
 * throws ResultVerificationError when the result is not an object with a `ServerSignature`, or no
 * Ed25519 key of `keys` verifies it. The result carries no key id, so every key of the ring is tried:
 * a result signed just before a key rotation still verifies. `keys` is the list or the whole document
 * (`{"keys": [...]}`) as `/.well-known/tabwire/result-keys` answers it.
 */
export function verifyResultSignature(result: unknown, keysOrDocument: readonly ResultKeyJwk[] | { keys: readonly ResultKeyJwk[] }): string | undefined {
  const keys = Array.isArray(keysOrDocument) ? keysOrDocument : (keysOrDocument as { keys?: unknown }).keys;
  if (!Array.isArray(keys)) throw new ResultVerificationError('keys must be the list of result keys or the document {"keys": [...]} of /.well-known/tabwire/result-keys');
  if (typeof result !== 'object' || result === null || Array.isArray(result)) throw new ResultVerificationError('the result is not a JSON object');
  const { ServerSignature: signature, ...unsigned } = result as Record<string, unknown>;
  if (typeof signature !== 'string' || signature === '') throw new ResultVerificationError('the result has no ServerSignature');
  const bytes = Buffer.from(signature, 'base64');
  if (bytes.length !== 64) throw new ResultVerificationError('ServerSignature is not a 64-byte Ed25519 signature');
  const message = Buffer.from(canonicalize(unsigned) ?? '', 'utf8');
  for (const jwk of keys) {
    if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string') continue;
    let valid = false;
    try {
      const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' });
      valid = strictlyEncoded(Buffer.from(jwk.x, 'base64url'), bytes) && verify(null, message, key, bytes);
    } catch {
      continue; // a malformed key verifies nothing; the next one may
    }
    if (valid) return jwk.kid;
  }
  throw new ResultVerificationError(
    keys.length === 0 ? 'the service publishes no result key' : 'ServerSignature does not verify with any key the service publishes',
  );
}
