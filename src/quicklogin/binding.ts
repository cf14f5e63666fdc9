import { createHash, timingSafeEqual } from 'node:crypto';
import { newNonce } from './codes.js';

/**
 * Binding tokens of scan-limited codes (docs/relay.md): the first signing app to fetch such a code gets
 * a token, and only a request carrying it may fetch the code again or sign it. The store keeps only the
 * SHA-256 of the token, so reading the database does not let anyone sign in the app's place.
 */

/** The request header that carries the token on later fetches and on the signature POST. */
export const BINDING_HEADER = 'tabwire-binding';

/** The shape of a token: 128 random bits, base64url (the same as a login code). */
export const BINDING_PATTERN = /^[A-Za-z0-9_-]{22}$/;

/** A new token: 128 bits from the CSPRNG. */
export const newBindingToken = (): string => newNonce();

/** What the store keeps of a token. */
export const hashBinding = (token: string): string => createHash('sha256').update(token, 'utf8').digest('hex');

/** Whether `presented` is the token whose hash is stored; compared in constant time. */
export function bindingMatches(presented: string | undefined, storedHash: string | null): boolean {
  if (presented === undefined || storedHash === null || !BINDING_PATTERN.test(presented)) return false;
  const a = Buffer.from(hashBinding(presented), 'hex');
  const b = Buffer.from(storedHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The scan limit a code gets: the smaller of the deployment's (`codeScanSeconds`, 0 = none) and the
 * request's (`scanSeconds`). A request may tighten the deployment's limit, never loosen or lift it.
 */
export function effectiveScanSeconds(configured: number, requested: number | undefined): number | null {
  const limits = [configured > 0 ? configured : undefined, requested].filter((n): n is number => n !== undefined);
  return limits.length === 0 ? null : Math.min(...limits);
}
