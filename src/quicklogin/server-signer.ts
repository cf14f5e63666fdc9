import { createHash, type KeyObject } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { Clock } from '../clock.js';
import { generateEd25519, privateKeyFromPem, publicKeyFromRaw, rawPublicKey, signEd25519 } from '../identity/keys.js';
import { newestKey } from '../store/key-ring.js';
import type { ServerKeyStore } from '../store/stores.js';

const PURPOSE = 'result';

type ResultJwk = { kty: 'OKP'; crv: 'Ed25519'; x: string; kid: string; alg: 'EdDSA'; use: 'sig' };

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
  publicJwk(): ResultJwk;
  /**
   * Every key of the result ring as read from the store now, newest first: what `/.well-known/tabwire/result-keys`
   * publishes, the same on every node whichever key it loaded. Rejects with the store's error.
   */
  ringJwks(): Promise<ResultJwk[]>;
}

const jwkOf = (kid: string, privateKey: KeyObject): ResultJwk => ({
  kty: 'OKP',
  crv: 'Ed25519',
  x: Buffer.from(rawPublicKey(privateKey), 'base64').toString('base64url'),
  kid,
  alg: 'EdDSA',
  use: 'sig',
});

/** Loads the newest result key from the store, creating the ring's first key at the first start of any node. */
export async function loadServerSigner(keys: ServerKeyStore, clock: Clock): Promise<ServerSigner> {
  const key = await newestKey(keys, PURPOSE, () => {
    const pair = generateEd25519();
    const kid = createHash('sha256').update(pair.publicKey).digest('base64url').slice(0, 16);
    const publicPem = publicKeyFromRaw(pair.publicKey)!.export({ type: 'spki', format: 'pem' }).toString();
    return { kid, purpose: PURPOSE, privateKey: pair.privateKeyPem, publicKey: publicPem, createdAt: clock.now() };
  });
  const privateKey: KeyObject = privateKeyFromPem(key.privateKey);
  const { kid } = key;
  const jwk = jwkOf(kid, privateKey);
  return {
    kid,
    privateKey,
    publicKeyBase64: rawPublicKey(privateKey),
    signJson: (value) => signEd25519(privateKey, Buffer.from(canonicalize(value) ?? '', 'utf8')),
    signBytes: (bytes) => signEd25519(privateKey, bytes),
    publicJwk: () => jwk,
    ringJwks: async () => (await keys.list(PURPOSE)).map((k) => jwkOf(k.kid, privateKeyFromPem(k.privateKey))),
  };
}
