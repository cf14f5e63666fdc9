import { createPrivateKey, generateKeyPairSync, randomBytes, type JsonWebKey } from 'node:crypto';
import type { Clock } from '../clock.js';
import { newestKey } from '../store/key-ring.js';
import type { ServerKey, ServerKeyStore } from '../store/stores.js';

/**
 * The OpenID Provider's signing keys (docs/oidc.md "Keys"): one ring per algorithm in the service's key
 * store, so every node signs with the same keys and publishes the same JWKS. A rotation adds a key that
 * is published at once but signs only `PUBLISH_AHEAD_MS` later, when every node has read it (nodes read
 * the rings every `OIDC_KEY_RELOAD_MS`): a relying party that fetches the JWKS from any node then knows
 * the key of any token it gets. A replaced key stays published until the tokens it signed have expired.
 */

export type IdTokenAlg = 'EdDSA' | 'ES256';

const RINGS: Readonly<Record<IdTokenAlg, string>> = { EdDSA: 'oidc-eddsa', ES256: 'oidc-es256' };
export const ID_TOKEN_ALGS = Object.keys(RINGS) as IdTokenAlg[];

/** How often a node reads the rings. */
export const OIDC_KEY_RELOAD_MS = 60_000;
/** A new key is published this long before it signs: two reloads, so every node publishes it first. */
export const PUBLISH_AHEAD_MS = 2 * OIDC_KEY_RELOAD_MS;

/** A signing key as the provider library takes it: a private JWK with its kid, algorithm and use. */
export type SigningJwk = JsonWebKey & { kid: string; alg: IdTokenAlg; use: 'sig' };

function generate(alg: IdTokenAlg, now: number): ServerKey {
  const pair = alg === 'EdDSA' ? generateKeyPairSync('ed25519') : generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return {
    kid: randomBytes(12).toString('base64url'),
    purpose: RINGS[alg],
    privateKey: pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicKey: pair.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    createdAt: now,
  };
}

/** Creates each ring's first key unless it has one (of nodes starting together, one creates it). */
export async function ensureOidcKeys(keys: ServerKeyStore, clock: Clock): Promise<void> {
  for (const alg of ID_TOKEN_ALGS) await newestKey(keys, RINGS[alg], () => generate(alg, clock.now()));
}

/** Adds a new key to each ring (`tabwire oidc keys rotate`); returns the new kids. */
export async function rotateOidcKeys(keys: ServerKeyStore, clock: Clock): Promise<Record<IdTokenAlg, string>> {
  const made = Object.fromEntries(ID_TOKEN_ALGS.map((alg) => [alg, generate(alg, clock.now())])) as Record<IdTokenAlg, ServerKey>;
  for (const alg of ID_TOKEN_ALGS) await keys.insert(made[alg]);
  return { EdDSA: made.EdDSA.kid, ES256: made.ES256.kid };
}

/** Each ring, newest first, as read from the store. */
export type OidcRings = Record<IdTokenAlg, ServerKey[]>;

export async function readOidcRings(keys: ServerKeyStore): Promise<OidcRings> {
  const [EdDSA, ES256] = await Promise.all(ID_TOKEN_ALGS.map((alg) => keys.list(RINGS[alg])));
  return { EdDSA: EdDSA!, ES256: ES256! };
}

/** When a key of a ring (newest first) may sign: a ring's oldest key at once, a rotation's key after the publish-ahead. */
const signsFrom = (ring: readonly ServerKey[], i: number): number => (i === ring.length - 1 ? Number.NEGATIVE_INFINITY : ring[i]!.createdAt + PUBLISH_AHEAD_MS);

/**
 * The keys to give the provider at `now`: per ring, the key that signs first (the library signs with the
 * first key of an algorithm), then the newer keys not yet signing, then older keys still within
 * `retireAfterMs` of being replaced. Others are left out: tokens they signed have expired.
 */
export function publishedKeys(rings: OidcRings, now: number, retireAfterMs: number): SigningJwk[] {
  const out: SigningJwk[] = [];
  for (const alg of ID_TOKEN_ALGS) {
    const ring = rings[alg];
    const active = ring.findIndex((_, i) => signsFrom(ring, i) <= now);
    if (active < 0) continue;
    const kept = ring.filter((_, i) => i === active || i < active || now - signsFrom(ring, i - 1) < retireAfterMs);
    const ordered = [ring[active]!, ...kept.filter((key) => key !== ring[active])];
    for (const key of ordered) out.push({ ...createPrivateKey(key.privateKey).export({ format: 'jwk' }), kid: key.kid, alg, use: 'sig' });
  }
  return out;
}

/** A fingerprint of a key set, to tell whether the provider must be rebuilt. */
export const keySetId = (keys: readonly SigningJwk[]): string => keys.map((k) => `${k.alg}:${k.kid}`).join(',');
