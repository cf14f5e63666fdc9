import type { Adapter, AdapterConstructor, AdapterPayload, errors } from 'oidc-provider';
import type { Clock } from '../clock.js';
import type { OidcClientStore, OidcEntryStore } from '../store/oidc-store.js';
import { clientMetadata } from './client-metadata.js';

/**
 * Lifetime of a record the library saves without one (docs/oidc.md "Storage"): 14 days, the library's longest
 * default (Session, Grant, RefreshToken). Every row then has an expiry, and the purge bounds the table.
 */
export const MAX_UNTIMED_LIFETIME_MS = 14 * 24 * 60 * 60 * 1000;

/**
 * Models whose records belong to a grant, so that revoking the grant deletes them (the library's own adapters
 * index the same ones, lib/adapters/memory_adapter.js). An Interaction names the grant it is building and
 * is not revoked with it.
 */
const GRANTABLE = new Set(['AccessToken', 'AuthorizationCode', 'RefreshToken', 'DeviceCode', 'BackchannelAuthenticationRequest', 'PreAuthorizedCode']);

/** Longest id the store holds (oidc_entries.id, oidc_clients.client_id): a longer one from a request cannot exist. */
const MAX_ID = 255;

/** An id or key from a request that no record can have: too long for the store, or holding U+0000. */
const impossibleKey = (key: string): boolean => typeof key !== 'string' || key.length === 0 || key.length > MAX_ID || key.includes('\u0000');

export interface OidcAdapterDeps {
  entries: OidcEntryStore;
  clients: OidcClientStore;
  clock: Clock;
  /** The library's error classes (library.ts loads the library when the provider starts). */
  errors: typeof errors;
}

/**
 * The library's `adapter` option: one adapter per model, on the store every node shares (any node serves any
 * step of a login). `Client` reads the operator's registered clients and refuses writes; every other model is
 * an OidcEntry.
 */
export function oidcAdapter(deps: OidcAdapterDeps): AdapterConstructor {
  return class {
    private readonly inner: Adapter;
    constructor(model: string) {
      this.inner = model === 'Client' ? new ClientAdapter(deps.clients) : new EntryAdapter(model, deps.entries, deps.clock, deps.errors);
    }
    upsert = (id: string, payload: AdapterPayload, expiresIn?: number) => this.inner.upsert(id, payload, expiresIn);
    find = (id: string) => this.inner.find(id);
    findByUid = (uid: string) => this.inner.findByUid(uid);
    findByUserCode = (userCode: string) => this.inner.findByUserCode(userCode);
    consume = (id: string) => this.inner.consume(id);
    destroy = (id: string) => this.inner.destroy(id);
    revokeByGrantId = (grantId: string) => this.inner.revokeByGrantId(grantId);
  };
}

/** A model of the library's own records (codes, sessions, interactions, grants, tokens). */
class EntryAdapter implements Adapter {
  constructor(
    private readonly model: string,
    private readonly entries: OidcEntryStore,
    private readonly clock: Clock,
    private readonly errors: OidcAdapterDeps['errors'],
  ) {}

  async upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void> {
    const now = this.clock.now();
    const lifetimeMs = typeof expiresIn === 'number' && Number.isFinite(expiresIn) ? expiresIn * 1000 : MAX_UNTIMED_LIFETIME_MS;
    await this.entries.upsert({
      model: this.model,
      id,
      payload: JSON.stringify(payload),
      grantId: GRANTABLE.has(this.model) && typeof payload.grantId === 'string' ? payload.grantId : null,
      uid: this.model === 'Session' && typeof payload.uid === 'string' ? payload.uid : null,
      expiresAt: Math.floor(now + lifetimeMs),
    });
  }

  async find(id: string): Promise<AdapterPayload | undefined> {
    if (impossibleKey(id)) return undefined;
    return withConsumed(await this.entries.find(this.model, id, this.clock.now()));
  }

  async findByUid(uid: string): Promise<AdapterPayload | undefined> {
    if (impossibleKey(uid)) return undefined;
    return withConsumed(await this.entries.findByUid(this.model, uid, this.clock.now()));
  }

  /** The device flow is not offered, so no record has a user code. */
  async findByUserCode(): Promise<undefined> {
    return undefined;
  }

  /**
   * The library reads a record, sees it unconsumed, then consumes it; two nodes may both read it unconsumed.
   * The store lets one of them consume it, and the other is refused here, before it issues anything: a code
   * is exchanged once (RFC 6749 §4.1.2), a rotated refresh token used once (RFC 9700 §4.14.2).
   */
  async consume(id: string): Promise<void> {
    if (!impossibleKey(id) && (await this.entries.consume(this.model, id, this.clock.now()))) return;
    if (this.model === 'PushedAuthorizationRequest') throw new this.errors.InvalidRequestUri('request_uri is invalid, expired, or was already used');
    throw new this.errors.InvalidGrant(`${this.model} already consumed`);
  }

  async destroy(id: string): Promise<void> {
    if (!impossibleKey(id)) await this.entries.destroy(this.model, id);
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    if (!impossibleKey(grantId)) await this.entries.revokeByGrantId(grantId);
  }
}

/** The payload as the library saved it, with `consumed` (epoch seconds) when the store says it was consumed. */
function withConsumed(found: { payload: string; consumedAt: number | null } | undefined): AdapterPayload | undefined {
  if (found === undefined) return undefined;
  const payload = JSON.parse(found.payload) as AdapterPayload;
  return found.consumedAt === null ? payload : { ...payload, consumed: Math.floor(found.consumedAt / 1000) };
}

/** The `Client` model: the clients the operator registered, read-only for the library. */
class ClientAdapter implements Adapter {
  constructor(private readonly clients: OidcClientStore) {}

  async find(id: string): Promise<AdapterPayload | undefined> {
    if (impossibleKey(id)) return undefined;
    const client = await this.clients.get(id);
    return client && { ...clientMetadata(client) };
  }

  // Clients are managed by the operator (`tabwire oidc client add|remove`); dynamic registration is off, so
  // the library never writes them. A write reaching here is a configuration error, not a request to honour.
  upsert(): Promise<void> {
    return refused('upsert');
  }

  destroy(): Promise<void> {
    return refused('destroy');
  }

  consume(): Promise<void> {
    return refused('consume');
  }

  async findByUid(): Promise<undefined> {
    return undefined;
  }

  async findByUserCode(): Promise<undefined> {
    return undefined;
  }

  async revokeByGrantId(): Promise<void> {}
}

const refused = (what: string): Promise<never> =>
  Promise.reject(new Error(`OpenID Provider clients are read-only (${what}): they are managed with \`tabwire oidc client\`; dynamic registration is off`));
