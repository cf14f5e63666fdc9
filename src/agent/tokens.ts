import { createHash, randomUUID, type KeyObject } from 'node:crypto';
import { errors as joseErrors, jwtVerify, SignJWT, type JWTPayload } from 'jose';
import type { Clock } from '../clock.js';
import { TabwireError } from '../errors.js';
import { generateEd25519, privateKeyFromPem, publicKeyFromRaw, rawPublicKey } from '../identity/keys.js';
import type { ServerKeyStore } from '../store/stores.js';

/** Token lifetimes are clamped to 1..3600 s (REFERENCE-CLIENTS.md "Agent API habits"). */
export const MAX_TOKEN_SECONDS = 3600;
export const clampSeconds = (seconds: number): number => Math.min(MAX_TOKEN_SECONDS, Math.max(1, Math.floor(seconds)));

const PURPOSE = 'jwt';
const AUDIENCE = 'tabwire-agent-api';
const ALGORITHM = 'EdDSA';
const RELOAD_AFTER_MS = 5_000;

export interface IssuedToken {
  jwt: string;
  /** Unix seconds. */
  expires: number;
}

/** What a verified token says. */
export interface AgentClaims {
  accountId: string;
  userName: string;
  expires: number;
}

interface RingKey {
  kid: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
  createdAt: number;
}

/** Creates a new signing key in the store (`tabwire keys rotate`); the newest key signs from then on. */
export async function rotateTokenKey(keys: ServerKeyStore, clock: Clock): Promise<string> {
  const pair = generateEd25519();
  const kid = createHash('sha256').update(pair.publicKey).digest('base64url').slice(0, 16);
  const publicPem = publicKeyFromRaw(pair.publicKey)!.export({ type: 'spki', format: 'pem' }).toString();
  await keys.insert({ kid, purpose: PURPOSE, privateKey: pair.privateKeyPem, publicKey: publicPem, createdAt: clock.now() });
  return kid;
}

/**
 * Agent API JWTs (ARCHITECTURE.md §4): EdDSA only, pinned on verify; a `kid` per key; the newest
 * key in the store signs, every stored key verifies, so a rotation keeps older tokens valid until
 * they expire. Keys written by another process (the CLI, another node) are picked up on an unknown
 * `kid` and by `reload()`.
 */
export class TokenService {
  private ring: RingKey[] = [];
  private lastReload = 0;

  private constructor(
    private readonly keys: ServerKeyStore,
    private readonly clock: Clock,
    private readonly issuer: string,
  ) {}

  static async load(keys: ServerKeyStore, clock: Clock, issuer: string): Promise<TokenService> {
    const service = new TokenService(keys, clock, issuer);
    await service.reload();
    if (service.ring.length === 0) {
      await rotateTokenKey(keys, clock);
      await service.reload();
    }
    return service;
  }

  /** Re-reads the key ring from the store. */
  async reload(): Promise<void> {
    this.lastReload = this.clock.now();
    this.ring = (await this.keys.list(PURPOSE)).map((k) => {
      const privateKey = privateKeyFromPem(k.privateKey);
      return { kid: k.kid, privateKey, publicKey: publicKeyFromRaw(rawPublicKey(privateKey))!, createdAt: k.createdAt };
    });
  }

  async issue(account: { id: string; userName: string }, seconds: number): Promise<IssuedToken> {
    const signing = this.ring[0];
    if (!signing) throw new Error('no token signing key');
    const now = Math.floor(this.clock.now() / 1000);
    const expires = now + clampSeconds(seconds);
    const jwt = await new SignJWT({ preferred_username: account.userName })
      .setProtectedHeader({ alg: ALGORITHM, kid: signing.kid, typ: 'JWT' })
      .setIssuer(this.issuer)
      .setAudience(AUDIENCE)
      .setSubject(account.id)
      .setIssuedAt(now)
      .setNotBefore(now)
      .setExpirationTime(expires)
      .setJti(randomUUID())
      .sign(signing.privateKey);
    return { jwt, expires };
  }

  /** Verifies a token; every refusal is a TabwireError with its own code (docs/agent-api.md). */
  async verify(jwt: string): Promise<AgentClaims> {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(jwt, (header) => this.keyFor(header.kid), {
        algorithms: [ALGORITHM],
        issuer: this.issuer,
        audience: AUDIENCE,
        currentDate: new Date(this.clock.now()),
        requiredClaims: ['sub', 'exp', 'nbf', 'iat'],
      }));
    } catch (err) {
      throw toTokenError(err);
    }
    const userName = payload.preferred_username;
    if (typeof payload.sub !== 'string' || typeof userName !== 'string') throw new TabwireError('token_malformed', 'The token lacks its subject');
    return { accountId: payload.sub, userName, expires: payload.exp! };
  }

  /** The public keys as a JWK Set (RFC 7517), for `/.well-known/jwks.json`. */
  jwks(): { keys: object[] } {
    return {
      keys: this.ring.map((k) => ({ ...k.publicKey.export({ format: 'jwk' }), kid: k.kid, alg: ALGORITHM, use: 'sig' })),
    };
  }

  private async keyFor(kid: string | undefined): Promise<KeyObject> {
    if (kid === undefined) throw new TabwireError('token_key_unknown', 'The token has no kid');
    let key = this.ring.find((k) => k.kid === kid);
    if (!key && this.clock.now() - this.lastReload >= RELOAD_AFTER_MS) {
      await this.reload();
      key = this.ring.find((k) => k.kid === kid);
    }
    if (!key) throw new TabwireError('token_key_unknown', `No key with kid "${kid}"`);
    return key.publicKey;
  }
}

function toTokenError(err: unknown): TabwireError {
  if (err instanceof TabwireError) return err;
  if (err instanceof joseErrors.JWTExpired) return new TabwireError('token_expired', 'The token has expired');
  if (err instanceof joseErrors.JWTClaimValidationFailed) {
    if (err.claim === 'nbf' || err.claim === 'iat') return new TabwireError('token_not_yet_valid', 'The token is not valid yet');
    return new TabwireError('token_claims_invalid', `The token's "${err.claim}" claim is not valid here`);
  }
  if (err instanceof joseErrors.JOSEAlgNotAllowed || err instanceof joseErrors.JOSENotSupported) {
    return new TabwireError('token_algorithm_not_allowed', 'Only EdDSA tokens are accepted');
  }
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return new TabwireError('token_signature_invalid', 'The token signature does not verify');
  return new TabwireError('token_malformed', 'The token is not a well-formed JWT');
}
