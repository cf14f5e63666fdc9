import { randomBytes } from 'node:crypto';
import type { Clock } from '../clock.js';
import { newestKey } from '../store/key-ring.js';
import type { ServerKey, ServerKeyStore } from '../store/stores.js';

/** The ring of the keys login codes are derived under (docs/signing.md "Derived codes"). */
export const CODE_KEY_PURPOSE = 'qr-code-mac';
/** How often a node re-reads the ring for a rotation (another node or the CLI may have added a key). */
export const CODE_KEY_RELOAD_MS = 60_000;
/** An unknown kid is asked of the store at most this often: a request row naming one is rare (a rotation just now). */
const UNKNOWN_KID_RETRY_MS = 5_000;

/** A code key: 256 random bits for HMAC-SHA-256 (RFC 2104 §3: a key of the hash's output length). */
export interface CodeKey {
  kid: string;
  secret: Buffer;
}

function newCodeKey(now: number): ServerKey {
  // A symmetric key has no public half; the ring's row keeps the secret base64url in `privateKey`.
  return { kid: randomBytes(12).toString('base64url'), purpose: CODE_KEY_PURPOSE, privateKey: randomBytes(32).toString('base64url'), publicKey: '', createdAt: now };
}

/** Adds a new code key to the ring (`tabwire keys rotate`): nodes derive new requests' codes with it once they read it. */
export async function rotateCodeKey(keys: ServerKeyStore, clock: Clock): Promise<string> {
  const key = newCodeKey(clock.now());
  await keys.insert(key);
  return key.kid;
}

/**
 * The code keys, read from the store every node shares, so every node derives and checks with the same keys
 * and a restart changes nothing. The newest key derives new requests; every key of the ring still checks the
 * codes made with it, so a rotation leaves the codes already shown valid until they expire.
 */
export class CodeKeyRing {
  private keys: CodeKey[] = [];
  private reading: Promise<void> | undefined;
  private lastMissRead = Number.NEGATIVE_INFINITY;

  private constructor(
    private readonly store: ServerKeyStore,
    private readonly clock: Clock,
  ) {}

  /** Creates the ring's first key unless it has one (of nodes starting together one creates it), and reads the ring. */
  static async load(store: ServerKeyStore, clock: Clock): Promise<CodeKeyRing> {
    const ring = new CodeKeyRing(store, clock);
    await newestKey(store, CODE_KEY_PURPOSE, () => newCodeKey(clock.now()));
    await ring.reload();
    return ring;
  }

  /** The key new requests are derived under. */
  get newest(): CodeKey {
    const key = this.keys[0];
    if (!key) throw new Error('the code key ring is empty');
    return key;
  }

  /** Re-reads the ring (one read at a time; callers that come meanwhile share it). */
  reload(): Promise<void> {
    this.reading ??= this.store
      .list(CODE_KEY_PURPOSE)
      .then((keys) => {
        this.keys = keys.map((k) => ({ kid: k.kid, secret: Buffer.from(k.privateKey, 'base64url') }));
      })
      .finally(() => {
        this.reading = undefined;
      });
    return this.reading;
  }

  /** The key `kid`, re-reading the ring for one not known here (a rotation on another node), at most every few seconds. */
  async byKid(kid: string): Promise<CodeKey | undefined> {
    const known = this.keys.find((k) => k.kid === kid);
    if (known) return known;
    const now = this.clock.now();
    if (now - this.lastMissRead < UNKNOWN_KID_RETRY_MS) return undefined;
    this.lastMissRead = now;
    await this.reload();
    return this.keys.find((k) => k.kid === kid);
  }
}
