import { createHash, type KeyObject } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { Clock } from '../clock.js';
import { generateEd25519, privateKeyFromPem, publicKeyFromRaw, rawPublicKey, signEd25519 } from '../identity/keys.js';
import type { ServerKeyStore } from '../store/stores.js';

const PURPOSE = 'result';

/** The service's Ed25519 key for `ServerSignature` on results; public half published as a JWK. */
export interface ServerSigner {
  kid: string;
  /** Also signs backend callbacks (Standard Webhooks `v1a`). */
  privateKey: KeyObject;
  /** Raw public key, base64 (Standard Webhooks publishes it as `whpk_<this>`). */
  publicKeyBase64: string;
  /** Signs the RFC 8785 canonical JSON of `value`; returns base64. */
  signJson(value: unknown): string;
  /** Signs raw bytes; returns base64. */
  signBytes(bytes: Buffer): string;
  publicJwk(): { kty: 'OKP'; crv: 'Ed25519'; x: string; kid: string; alg: 'EdDSA'; use: 'sig' };
}

/** Loads the newest result key from the store, creating one at first start. */
export async function loadServerSigner(keys: ServerKeyStore, clock: Clock): Promise<ServerSigner> {
  let [key] = await keys.list(PURPOSE);
  if (!key) {
    const pair = generateEd25519();
    const kid = createHash('sha256').update(pair.publicKey).digest('base64url').slice(0, 16);
    const publicPem = publicKeyFromRaw(pair.publicKey)!.export({ type: 'spki', format: 'pem' }).toString();
    await keys.insert({ kid, purpose: PURPOSE, privateKey: pair.privateKeyPem, publicKey: publicPem, createdAt: clock.now() });
    // Another node may have won the race to create it: use whatever the store holds now.
    [key] = await keys.list(PURPOSE);
  }
  const privateKey: KeyObject = privateKeyFromPem(key!.privateKey);
  const x = Buffer.from(rawPublicKey(privateKey), 'base64').toString('base64url');
  const kid = key!.kid;
  return {
    kid,
    privateKey,
    publicKeyBase64: rawPublicKey(privateKey),
    signJson: (value) => signEd25519(privateKey, Buffer.from(canonicalize(value) ?? '', 'utf8')),
    signBytes: (bytes) => signEd25519(privateKey, bytes),
    publicJwk: () => ({ kty: 'OKP', crv: 'Ed25519', x, kid, alg: 'EdDSA', use: 'sig' }),
  };
}
