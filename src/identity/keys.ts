import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { encodedPointProblem, strictlyEncoded, type Ed25519EncodingProblem } from '../protocol/ed25519-strict.js';

/** Ed25519 (RFC 8032) helpers on node:crypto. Public keys travel as raw 32 bytes in base64. */

export interface GeneratedKeyPair {
  /** Raw 32-byte public key, base64. */
  publicKey: string;
  /** PKCS#8 PEM. */
  privateKeyPem: string;
}

export function generateEd25519(): GeneratedKeyPair {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  return {
    publicKey: rawPublicKey(publicKey),
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}

/** Raw public key (base64) of a public or private Ed25519 key object. */
export function rawPublicKey(key: KeyObject): string {
  const jwk = (key.type === 'private' ? createPublicKey(key) : key).export({ format: 'jwk' });
  return Buffer.from(jwk.x as string, 'base64url').toString('base64');
}

/** A public key object from its raw base64 form; undefined when it is not a valid Ed25519 key. */
export function publicKeyFromRaw(raw: string): KeyObject | undefined {
  const bytes = Buffer.from(raw, 'base64');
  if (bytes.length !== 32) return undefined;
  try {
    return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: bytes.toString('base64url') }, format: 'jwk' });
  } catch {
    return undefined;
  }
}

export const privateKeyFromPem = (pem: string): KeyObject => createPrivateKey(pem);

/** Signs with Ed25519; returns base64. */
export const signEd25519 = (key: KeyObject, message: Buffer): string => sign(null, message, key).toString('base64');

/** Why a public key offered to the service is refused (docs/signing.md "Keys that are refused"). */
export type PublicKeyProblem = 'length' | Ed25519EncodingProblem | 'not_on_curve';

/**
 * The problem with a raw public key (base64) an applicant offers, or undefined when it is a canonical
 * encoding of a curve point outside the small-order subgroup. Decoding uses @noble/curves in strict
 * mode (RFC 8032 §5.1.3: y < p, x recovered, x = 0 with the sign bit refused); small order is the
 * byte test shared with every verification.
 */
export function publicKeyProblem(raw: string): PublicKeyProblem | undefined {
  const bytes = Buffer.from(raw, 'base64');
  if (bytes.length !== 32) return 'length';
  const encoding = encodedPointProblem(bytes);
  if (encoding) return encoding;
  try {
    ed25519.Point.fromBytes(bytes, false); // zip215 = false: RFC 8032's strict decoding
  } catch {
    return 'not_on_curve';
  }
  return undefined;
}

/**
 * Verifies an Ed25519 signature given as base64; any malformed input is simply "false". Strict: a key or
 * R of small order and a non-canonical key, R or S are refused before Node checks the equation.
 */
export function verifyEd25519(publicKeyRaw: string, message: Buffer, signature: string): boolean {
  const key = publicKeyFromRaw(publicKeyRaw);
  const sig = Buffer.from(signature, 'base64');
  if (!key || sig.length !== 64 || !strictlyEncoded(Buffer.from(publicKeyRaw, 'base64'), sig)) return false;
  try {
    return verify(null, message, key, sig);
  } catch {
    return false;
  }
}
