import { createHash, randomUUID, type KeyObject } from 'node:crypto';
import { errors as joseErrors, jwtVerify, SignJWT, type JWTPayload } from 'jose';
import type { Clock } from '../clock.js';
import { TabwireError } from '../errors.js';
import { generateEd25519, privateKeyFromPem, publicKeyFromRaw, rawPublicKey } from '../identity/keys.js';
import { newestKey } from '../store/key-ring.js';
import type { ServerKey, ServerKeyStore } from '../store/stores.js';

/** Token lifetimes are clamped to 1..3600 s (docs/agent-api.md). */
export const MAX_TOKEN_SECONDS = 3600;
export const clampSeconds = (seconds: number): number => Math.min(MAX_TOKEN_SECONDS, Math.max(1, Math.floor(seconds)));

const PURPOSE = 'jwt';
const AUDIENCE = 'tabwire-agent-api';
const ALGORITHM = 'EdDSA';
/**
 * An unknown `kid` costs at most one key-ring read; the same kid is then refused without asking the
 * store again for this long, and at most UNKNOWN_KIDS_MAX of them are remembered (oldest forgotten
 * first), so a flood of made-up kids can neither grow memory nor hammer the store (docs/agent-api.md).
 */
const UNKNOWN_KID_TTL_MS = 60_000;
const UNKNOWN_KIDS_MAX = 1024;
/** Kids this service creates are 16 base64url characters; anything that cannot be one is refused without a read. */
const PLAUSIBLE_KID = /^[A-Za-z0-9_-]{1,64}$/;
/** No clock tolerance: `nbf` and `iat` are compared with the service's clock as they are (docs/agent-api.md). */
const CLOCK_TOLERANCE_S = 0;

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

function newTokenKey(clock: Clock): ServerKey {
  const pair = generateEd25519();
  const kid = createHash('sha256').update(pair.publicKey).digest('base64url').slice(0, 16);
  const publicPem = publicKeyFromRaw(pair.publicKey)!.export({ type: 'spki', format: 'pem' }).toString();
  return { kid, purpose: PURPOSE, privateKey: pair.privateKeyPem, publicKey: publicPem, createdAt: clock.now() };
}

/** Adds a new signing key to the store's ring (`tabwire keys rotate`); the newest key signs from then on. */
export async function rotateTokenKey(keys: ServerKeyStore, clock: Clock): Promise<string> {
  const key = newTokenKey(clock);
  await keys.insert(key);
  return key.kid;
}

/**
 * Agent API JWTs (docs/agent-api.md): EdDSA only, pinned on verify; a `kid` per key; the newest
 * key in the store signs, every stored key verifies, so a rotation keeps older tokens valid until
 * they expire. Keys written by another process (the CLI, another node) are picked up at once on an
 * unknown `kid` (one shared read of the store), and by `reload()`.
 */
export class TokenService {
  private ring: RingKey[] = [];
  /** The store read under way, if any. */
  private reading: Promise<void> | undefined;
  /** One read queued behind `reading`, shared by every caller that came while it ran. */
  private queued: Promise<void> | undefined;
  /** Unknown kid -> until when it is refused without a read. Insertion-ordered, so the first is the oldest. */
  private readonly unknownKids = new Map<string, number>();

  private constructor(
    private readonly keys: ServerKeyStore,
    private readonly clock: Clock,
    private readonly issuer: string,
  ) {}

  static async load(keys: ServerKeyStore, clock: Clock, issuer: string): Promise<TokenService> {
    const service = new TokenService(keys, clock, issuer);
    // The ring's first key is created once for all nodes (ServerKeyStore.insertFirst), then everyone reads the ring.
    await newestKey(keys, PURPOSE, () => newTokenKey(clock));
    await service.reload();
    return service;
  }

  /**
   * Re-reads the key ring from the store. The read it waits for always starts after the call, so a key
   * stored before the call is seen; callers that come while a read runs share one read queued behind
   * it, so the store never sees more than one read at a time. Rejects with the store's error.
   */
  reload(): Promise<void> {
    if (this.queued) return this.queued; // not started yet, so it starts after this call
    if (!this.reading) return this.startRead();
    const after = this.reading.then(noop, noop).then(() => {
      this.queued = undefined;
      return this.startRead();
    });
    this.queued = after;
    return after;
  }

  private startRead(): Promise<void> {
    const read = this.readRing().finally(() => {
      if (this.reading === read) this.reading = undefined;
    });
    this.reading = read;
    return read;
  }

  private async readRing(): Promise<void> {
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
        clockTolerance: CLOCK_TOLERANCE_S,
        // RFC 7519 §4.1.6: jose checks `iat` only with maxTokenAge; this refuses an `iat` in the future
        // (token_not_yet_valid) and one older than the longest lifetime this service issues.
        maxTokenAge: MAX_TOKEN_SECONDS,
      }));
    } catch (err) {
      throw toTokenError(err);
    }
    const userName = payload.preferred_username;
    if (typeof payload.sub !== 'string' || typeof userName !== 'string') throw new TabwireError('token_malformed', 'The token lacks its subject');
    return { accountId: payload.sub, userName, expires: payload.exp! };
  }

  /**
   * The public keys as a JWK Set (RFC 7517), for `/.well-known/jwks.json`: the ring as the store holds it
   * now (one shared read, see reload), so every node publishes the same set, a key rotated on another node
   * included. Rejects with `store_unavailable` when the store cannot be read.
   */
  async jwks(): Promise<{ keys: object[] }> {
    await this.reload();
    return {
      keys: this.ring.map((k) => ({ ...k.publicKey.export({ format: 'jwk' }), kid: k.kid, alg: ALGORITHM, use: 'sig' })),
    };
  }

  private async keyFor(kid: string | undefined): Promise<KeyObject> {
    if (kid === undefined) throw new TabwireError('token_key_unknown', 'The token has no kid');
    const known = this.find(kid);
    if (known) return known;
    const unknown = () => new TabwireError('token_key_unknown', 'No key with that kid');
    if (!PLAUSIBLE_KID.test(kid) || this.recentlyUnknown(kid)) throw unknown();
    try {
      await this.reload();
    } catch (err) {
      // The store failed, so nothing is known about the kid: a 503 the client retries, not a 401.
      throw Object.assign(new TabwireError('store_unavailable', 'The signing keys could not be read', { retryAfter: 1 }), { cause: err });
    }
    const found = this.find(kid);
    if (found) return found;
    this.rememberUnknown(kid);
    throw unknown();
  }

  private find(kid: string): KeyObject | undefined {
    return this.ring.find((k) => k.kid === kid)?.publicKey;
  }

  private recentlyUnknown(kid: string): boolean {
    const until = this.unknownKids.get(kid);
    if (until === undefined) return false;
    if (until > this.clock.now()) return true;
    this.unknownKids.delete(kid);
    return false;
  }

  private rememberUnknown(kid: string): void {
    this.unknownKids.delete(kid);
    if (this.unknownKids.size >= UNKNOWN_KIDS_MAX) this.unknownKids.delete(this.unknownKids.keys().next().value!);
    this.unknownKids.set(kid, this.clock.now() + UNKNOWN_KID_TTL_MS);
  }
}

const noop = (): void => {};

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
