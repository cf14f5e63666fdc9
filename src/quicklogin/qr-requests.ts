import { createHmac, randomInt } from 'node:crypto';
import type { Logger } from 'pino';
import type { QrRequestRecord, QrRequestStore } from '../store/qr-request-store.js';
import type { CodeKey, CodeKeyRing } from './code-keys.js';
import { deriveCode, macMatches, parseDerivedCode, REQUEST_ID_BITS, SALT_BITS, type DerivedCodeParts } from './derived-code.js';

/** What a QR request binds its codes to: the fields a LoginCode copies from the request. */
export type QrRequestParams = Omit<QrRequestRecord, 'id' | 'kid' | 'createdAt' | 'expiresAt'>;

/** A request row as a node knows it, with its key and digest. */
export interface KnownRequest {
  record: QrRequestRecord;
  key: CodeKey;
  /** HMAC of the request's parameters under its key: what every code of the request is bound to. */
  digest: Buffer;
  /** The touch of the row under way, if any. */
  touching?: Promise<void> | undefined;
}

/** A request row outlives the newest code issued for it by up to this much; touched when half of it is left. */
export const ROW_SLACK_MS = 10 * 60_000;
/** Requests each node remembers (both maps): the waiting pages of a busy node, with room to spare. */
const MAX_KNOWN = 100_000;
/** Request ids tried in turn for one request before giving up (each a 2^-36-ish chance of a collision). */
const MAX_PROBES = 8;
const DIGEST_DOMAIN = 'tabwire/qr-request/1\0';
const ID_DOMAIN = Buffer.from('tabwire/qr-request-id/1\0', 'utf8');

/** Every parameter, in a fixed order, as JSON: two requests are the same request exactly when these are equal. */
const canonical = (p: QrRequestParams): string =>
  JSON.stringify([p.tabId, p.sessionHash, p.origin, p.purpose, p.propertyFilter, p.attachmentFilter, p.serviceId, p.agentApiTimeout, p.scanSeconds, p.validityMs]);

const digestOf = (key: CodeKey, canonicalRequest: string): Buffer => createHmac('sha256', key.secret).update(DIGEST_DOMAIN + canonicalRequest, 'utf8').digest();

/** The request id of try `probe`: 36 bits of a MAC of the digest, so nobody without the key can tell a request's id. */
function idOf(key: CodeKey, digest: Buffer, probe: number): number {
  const mac = createHmac('sha256', key.secret).update(ID_DOMAIN).update(Buffer.of(probe)).update(digest).digest();
  return Math.floor(mac.readUIntBE(0, 6) / 2 ** (48 - REQUEST_ID_BITS));
}

/** A Map that forgets its oldest entry beyond `max` (insertion order). */
class Bounded<K, V> extends Map<K, V> {
  constructor(private readonly max: number) {
    super();
  }
  override set(key: K, value: V): this {
    if (!this.has(key) && this.size >= this.max) this.delete(this.keys().next().value as K);
    return super.set(key, value);
  }
}

/**
 * QR requests and their derived codes (docs/signing.md "Derived codes"). A node stores a request once (one
 * INSERT .. ON CONFLICT DO NOTHING, the same id on every node) and remembers it: every later refresh of the page
 * derives a new code from it without any store statement, until the row needs a touch to outlive the new code
 * (about every ROW_SLACK_MS / 2). A code is checked against its request's row, read once per node.
 */
export class QrRequests {
  private readonly byParams = new Bounded<string, KnownRequest>(MAX_KNOWN);
  private readonly byId = new Bounded<number, KnownRequest>(MAX_KNOWN);
  /** Per-process code counter: codes of one request in one millisecond differ on this node (and, from a random start, very likely across nodes). */
  private salt = randomInt(2 ** SALT_BITS);

  constructor(private readonly deps: { store: QrRequestStore; keys: CodeKeyRing; log: Logger }) {}

  /** A fresh code for the request at `now`; a store statement only when this node meets the request, or when its row needs a touch. */
  async issue(params: QrRequestParams, now: number): Promise<string> {
    const key = this.deps.keys.newest;
    const request = canonical(params);
    let known = this.byParams.get(key.kid + request);
    if (known === undefined || known.record.expiresAt < now) {
      known = await this.store(params, request, key, now);
      this.byParams.set(key.kid + request, known);
      this.byId.set(known.record.id, known);
    }
    // Nothing to wait for on almost every refresh: no promise to await then (keepAlive answers one only when needed).
    const touching = this.keepAlive(known, params, request, now);
    if (touching !== undefined) await touching;
    this.salt = (this.salt + 1) % 2 ** SALT_BITS;
    return deriveCode(key.secret, known.digest, known.record.id, now, this.salt);
  }

  /**
   * A derived code's request and what the code says, when the code is genuine: made under the key of the row
   * its id names, for exactly that row's parameters. Undefined for anything else (a random code, a forged or
   * altered one, one whose request is gone). Expiry is the caller's to check. Reads the store only for a request
   * this node does not know.
   */
  async resolve(code: string, now: number): Promise<{ parts: DerivedCodeParts; request: KnownRequest } | undefined> {
    const parts = parseDerivedCode(code, now);
    if (parts === undefined) return undefined;
    const cached = this.byId.get(parts.requestId);
    if (cached !== undefined && macMatches(cached.key.secret, cached.digest, parts)) return { parts, request: cached };
    // Not known here, or the id names another request now (its old row expired and the id was taken again).
    const request = await this.read(parts.requestId);
    if (request === undefined || !macMatches(request.key.secret, request.digest, parts)) return undefined;
    return { parts, request };
  }

  private async read(id: number): Promise<KnownRequest | undefined> {
    const record = await this.deps.store.get(id);
    const key = record && (await this.deps.keys.byKid(record.kid));
    if (record === undefined || key === undefined) return undefined;
    const known = { record, key, digest: digestOf(key, canonical(record)) };
    this.byId.set(id, known);
    return known;
  }

  /** Stores the request under the first of its ids that is free or already its own (every node probes alike). */
  private async store(params: QrRequestParams, request: string, key: CodeKey, now: number): Promise<KnownRequest> {
    const digest = digestOf(key, request);
    for (let probe = 0; probe < MAX_PROBES; probe++) {
      const record: QrRequestRecord = { ...params, id: idOf(key, digest, probe), kid: key.kid, createdAt: now, expiresAt: now + params.validityMs + ROW_SLACK_MS };
      if (await this.deps.store.insertIfAbsent(record)) return { record, key, digest };
      const existing = await this.deps.store.get(record.id);
      if (existing === undefined) {
        probe--; // purged between the two statements: the id is free again
        continue;
      }
      // Another node stored this request first, or the id belongs to another request: then try the next id.
      if (existing.kid === key.kid && canonical(existing) === request) return { record: existing, key, digest };
      this.deps.log.info({ probe }, 'QR request id taken by another request; trying the next');
    }
    throw new Error(`no free QR request id in ${MAX_PROBES} tries`);
  }

  /**
   * Keeps the row alive past the code about to be issued: a touch in the background once less than half the
   * slack is left, awaited only when the row would expire before the code (a page that went quiet for minutes):
   * then the touch is answered, to be awaited; otherwise undefined.
   */
  private keepAlive(known: KnownRequest, params: QrRequestParams, request: string, now: number): Promise<void> | undefined {
    const codeExpires = now + known.record.validityMs;
    const needed = codeExpires > known.record.expiresAt;
    if (!needed && (codeExpires + ROW_SLACK_MS / 2 <= known.record.expiresAt || known.touching)) return undefined;
    const until = codeExpires + ROW_SLACK_MS;
    known.touching ??= this.deps.store
      .extend(known.record.id, until)
      .then(async (alive) => {
        if (alive) known.record = { ...known.record, expiresAt: until };
        else known.record = (await this.store(params, request, known.key, now)).record;
      })
      .finally(() => {
        known.touching = undefined;
      });
    if (needed) return known.touching;
    known.touching.catch((err: unknown) => this.deps.log.warn({ err }, 'touching a QR request failed'));
    return undefined;
  }
}
