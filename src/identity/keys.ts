import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';

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

/** Verifies an Ed25519 signature given as base64; any malformed input is simply "false". */
export function verifyEd25519(publicKeyRaw: string, message: Buffer, signature: string): boolean {
  const key = publicKeyFromRaw(publicKeyRaw);
  const sig = Buffer.from(signature, 'base64');
  if (!key || sig.length !== 64) return false;
  try {
    return verify(null, message, key, sig);
  } catch {
    return false;
  }
}
