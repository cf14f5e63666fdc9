import type { Clock } from '../clock.js';
import { sharedStateUnavailable, TabwireError } from '../errors.js';
import type { CodeStore, TabStore, WrittenResultStore } from '../store/stores.js';
import { addressKey, type TabAddress } from '../protocol/address.js';
import { BoundOrigins } from './bound-origins.js';
import { OwnerCache } from './owner-cache.js';
import type { TabConnection } from './connection.js';
import { resultPublishKey } from './delivery.js';
import { FirstVisitTickets } from './first-visit.js';
import type { Hub } from './hub.js';

export type RegisterOutcome = 'ok' | 'conflict' | 'too_many_tabs';

/** What the registry calls: the stored bindings and results, the local hub, time. */
export interface TabRegistryDeps {
  tabs: TabStore;
  codes: Pick<CodeStore, 'recentTabEvents'>;
  /** Results written to their pages before a clean stop of a node whose streams were in memory: not sent again. */
  writtenResults: Pick<WrittenResultStore, 'writtenAmong'>;
  hub: Hub;
  clock: Clock;
  /**
   * Whether an error of the hub's shared broker (Redis in a cluster) means it cannot be reached now: such
   * errors become `shared_state_unavailable`, so the channel treats them as the outage they are. Absent on
   * one node (the memory broker has no outages).
   */
  sharedUnavailable?: (err: unknown) => boolean;
}

/** The registry's time bounds (from the configuration). */
export interface TabRegistrySettings {
  /** How far back a tab new here is given the results of its session's codes again (the stream's age bound). */
  resultReplayMs: number;
  /** How long a QR request waits for its tab's Register before it is refused (`awaitRegistration`). */
  registrationWaitMs: number;
  /** How long a tab without a connection is held (config `tabIdleSeconds`): a refused binding may be retried after it. */
  tabIdleMs: number;
}

/** Pending waits for a Register, at most this many at once (beyond it nobody waits: bounded memory). */
const MAX_WAITERS = 10_000;
/** Pending waits for the Register of one tab (a page asks once; more is someone else asking). */
const MAX_WAITERS_PER_TAB = 4;
/** Tabs owed a replay of their results (its first try failed), at most (beyond, the set starts over). */
const OWED_REPLAYS_SIZE = 50_000;

/** How often a wait for a Register looks for the binding another node may have stored. */
const BINDING_POLL_MS = 200;

/** The origin of a page location, or null when it is not an http(s) URL. */
export function originOfLocation(location: string): string | null {
  try {
    const url = new URL(location);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : null;
  } catch {
    return null;
  }
}

/**
 * Registration of tabs: binds a tab to the session that first registers it (stored, so any node
 * can check a QR request against it, with the page origin it registered from) and attaches the live
 * connection to the local hub.
 */
export class TabRegistry {
  /**
   * Tab owners looked up lately: a page asks for a new QR code every 2 s, and each asks who owns its tab
   * (a store round trip, across the network in a cluster). Entries live OWNER_CACHE_MS. Staleness is
   * harmless to privacy: a stale owner only ever gets results addressed to itself; a tab id taken by
   * another session within that time (through another node) may have a QR request of the new owner
   * refused for that long.
   */
  private readonly owners: OwnerCache;
  private readonly waiters = new Map<string, Set<() => void>>();
  private waiting = 0;
  /** What each Register that newly bound a tab here allows a cookie-less first QR request (first-visit.ts). */
  private readonly tickets: FirstVisitTickets;
  /**
   * Tabs new here whose replay of results failed (the store went away in between): a Register tried
   * again finds the tab attached already, and must still replay (addressKey).
   */
  private readonly owedReplays = new Set<string>();
  /** The page origin this node last bound each tab from, so a repeat Register skips the store (boundHere). */
  private readonly boundOrigins = new BoundOrigins();

  constructor(
    private readonly deps: TabRegistryDeps,
    private readonly settings: TabRegistrySettings,
  ) {
    this.owners = new OwnerCache(() => deps.clock.now());
    this.tickets = new FirstVisitTickets(() => deps.clock.now());
  }

  /**
   * 'conflict' without attaching when the tab belongs to another session; 'too_many_tabs' when the
   * session holds its limit of tabs already (the new binding is taken back). `location` is the page
   * URL the client sent (Register frame, long-poll body).
   */
  async register(tabId: string, session: string, connection: TabConnection, location: string, lastEventId?: number): Promise<RegisterOutcome> {
    const { tabs, hub, clock } = this.deps;
    const address = { tabId, session };
    const origin = originOfLocation(location);
    const bound = this.boundHere(address, origin) ? 'bound' : await tabs.bind(tabId, session, clock.now(), origin);
    if (bound === 'conflict') return 'conflict';
    this.owners.set(tabId, session);
    this.boundOrigins.bound(address, origin);
    const attached = await this.shared(() => hub.attach(address, connection, lastEventId));
    if (attached === 'too_many_tabs') {
      if (bound === 'created') await this.removeBinding({ tabId, session });
      return 'too_many_tabs';
    }
    if (bound === 'created') this.tickets.grant(tabId, { session, origin });
    this.wake(tabId);
    // New to the service (first Register, or its stream was lost with a restart): results its session's
    // codes sent in the last moments may have been lost with it; they are derived again from the settled codes.
    // Safe to run again after an outage broke it part-way (outage-wait.ts): a replay that failed is owed.
    const key = addressKey(address);
    if (attached === 'created' || this.owedReplays.has(key)) {
      if (this.owedReplays.size >= OWED_REPLAYS_SIZE) this.owedReplays.clear();
      this.owedReplays.add(key);
      await this.replayResults(address);
      this.owedReplays.delete(key);
    }
    return 'ok';
  }

  /** Runs a hub step whose broker may be Redis: its outage becomes `shared_state_unavailable`. */
  private async shared<T>(step: () => Promise<T>): Promise<T> {
    try {
      return await step();
    } catch (err) {
      throw this.deps.sharedUnavailable?.(err) ? sharedStateUnavailable(err) : err;
    }
  }

  /**
   * The page is going away (Unregister): the tab id is free again once this resolves (the binding is
   * removed before the connection's next frame is handled); see Hub.release for what stays.
   */
  async unregister(address: TabAddress, connection?: TabConnection): Promise<void> {
    await this.shared(() => this.deps.hub.release(address, connection));
    await this.removeBinding(address);
  }

  /** Removes the tab's binding if it is still this session's (Unregister, or no node holds the tab any more). */
  async removeBinding(address: TabAddress): Promise<void> {
    this.owners.delete(address.tabId);
    this.boundOrigins.forget(address);
    await this.deps.tabs.remove(address.tabId, address.session);
  }

  /**
   * Whether a Register (a repeat poll, a socket reconnecting) of a tab this node holds for the session can
   * skip the store: while some node holds a tab its binding is its session's (a binding is removed only on
   * Unregister or once no node holds the tab, see removeBinding), and refreshTabBindings keeps it marked. A
   * page location of another origin than the one this node bound the tab from is bound again, so that
   * cookie-less QR requests follow the page (TabStore.bind); a location without an origin changes nothing.
   */
  private boundHere(address: TabAddress, origin: string | null): boolean {
    return this.deps.hub.holdsHere(address) && this.boundOrigins.matches(address, origin);
  }

  /**
   * Whether the tab is bound to some session: a poll resuming after an event id of a tab the service no
   * longer knows is told so (docs/events.md "Long-poll"). A tab this node holds for `session` is bound (see
   * boundHere): the store is not asked.
   */
  async isBound(tabId: string, session: string | undefined): Promise<boolean> {
    if (session !== undefined && this.deps.hub.holdsHere({ tabId, session })) return true;
    return (await this.deps.tabs.sessionOf(tabId)) !== undefined;
  }

  /** Seconds after which a session refused for its tab limit may try again: its idle tabs are let go by then. */
  get tabLimitRetryAfter(): number {
    return Math.ceil(this.settings.tabIdleMs / 1000);
  }

  /**
   * The one rule of who may act for a tab (docs/events.md "Results belong to the session that asked"):
   * the caller's session must be the one the tab is bound to. Resolves with the address everything
   * for the tab then goes to. With `bindIfFree` (a QR request that comes before its tab's Register) an
   * unbound tab is bound to the caller first; otherwise an unbound tab is `tab_not_registered`.
   */
  async requireOwner(tabId: string, session: string, o: { bindIfFree: false } | { bindIfFree: true; origin: string | null }): Promise<TabAddress> {
    // A tab this node holds for the session is bound to that session: a binding is removed only once no
    // node holds the tab. So a page's QR refreshes (one every 2 s, just past the owner cache's lifetime)
    // need no store look-up while its connection is here.
    if (this.deps.hub.holdsHere({ tabId, session })) return { tabId, session };
    const owner = this.owners.get(tabId) ?? (await this.deps.tabs.sessionOf(tabId));
    if (owner === undefined) {
      if (!o.bindIfFree) throw new TabwireError('tab_not_registered', `Tab "${tabId}" is not registered`);
      // Only a Register of this session can ever receive what is addressed to the tab from now on.
      const bound = await this.deps.tabs.bind(tabId, session, this.deps.clock.now(), o.origin);
      if (bound === 'conflict') throw new TabwireError('tab_session_mismatch', `Tab "${tabId}" belongs to another session`);
      const address = { tabId, session };
      // Held here like a registered tab whose page has not connected yet: it counts toward the session's
      // tabsPerSession and is let go after tabIdleSeconds without a connection (its binding with it).
      if ((await this.shared(() => this.deps.hub.reserve(address))) === 'too_many_tabs') {
        if (bound === 'created') await this.removeBinding(address);
        throw new TabwireError('tab_limit_reached', undefined, { retryAfter: Math.ceil(this.settings.tabIdleMs / 1000) });
      }
      this.owners.set(tabId, session);
      return address;
    }
    this.owners.set(tabId, owner);
    if (owner !== session) throw new TabwireError('tab_session_mismatch', `Tab "${tabId}" belongs to another session`);
    return { tabId, session };
  }

  /**
   * Whether some node holds the tab of this session (it is live). Asks the broker: Redis in a cluster,
   * whose outage is `shared_state_unavailable`.
   */
  holds(address: TabAddress): Promise<boolean> {
    return this.shared(() => this.deps.hub.holds(address));
  }

  /**
   * Resolves once the tab registers, or after `registrationWaitMs` (never rejects). In a cluster the
   * Register may reach another node: the stored binding is looked at too, every `BINDING_POLL_MS`.
   */
  awaitRegistration(tabId: string): Promise<void> {
    if (this.waiting >= MAX_WAITERS || (this.waiters.get(tabId)?.size ?? 0) >= MAX_WAITERS_PER_TAB) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const set = this.waiters.get(tabId) ?? new Set<() => void>();
      this.waiters.set(tabId, set);
      this.waiting++;
      const done = (): void => {
        clearTimeout(timer);
        if (set.delete(done)) this.waiting--;
        if (set.size === 0 && this.waiters.get(tabId) === set) this.waiters.delete(tabId);
        resolve();
      };
      const timer = setTimeout(done, this.settings.registrationWaitMs);
      set.add(done);
      const look = (): void => {
        if (!set.has(done)) return;
        this.deps.tabs.sessionOf(tabId).then(
          (owner) => (owner === undefined ? setTimeout(look, BINDING_POLL_MS).unref() : done()),
          () => undefined,
        );
      };
      setTimeout(look, BINDING_POLL_MS).unref();
    });
  }

  /**
   * The session a cookie-less QR request of a first visit is answered for (docs/events.md "A first visit
   * without the cookie"), or undefined: the session of the Register that newly bound the tab, when that
   * Register came at most FIRST_VISIT_TICKET_MS before the request or comes within `registrationWaitMs`
   * after it, and sent a location of the request's `origin`. One request per such Register; a tab
   * registered before that (not a first visit) gets nothing.
   */
  async firstVisitSession(tabId: string, origin: string): Promise<string | undefined> {
    return this.tickets.take(tabId, origin) ?? (await this.nextRegistration(tabId, origin));
  }

  /** Waits (bounded) for the first Register of a tab nobody holds. */
  private async nextRegistration(tabId: string, origin: string): Promise<string | undefined> {
    if ((await this.deps.tabs.sessionOf(tabId)) !== undefined) return undefined;
    await this.awaitRegistration(tabId);
    const session = this.tickets.take(tabId, origin);
    if (session !== undefined) return session;
    // Registered through another node of a cluster while this request waited (it was free when it came). A
    // Register here leaves a ticket, so a binding held here without one was taken by an earlier request.
    const binding = await this.deps.tabs.bindingOf(tabId);
    if (binding === undefined || binding.origin !== origin || this.deps.hub.holdsHere({ tabId, session: binding.session })) return undefined;
    return binding.session;
  }

  private wake(tabId: string): void {
    const set = this.waiters.get(tabId);
    if (set) for (const done of [...set]) done();
  }

  /**
   * The broker lost the stream of a tab held here (its events may be gone): the results of its
   * session's recent codes are sent again, as after a restart.
   */
  streamLost(address: TabAddress): void {
    this.replayResults(address).catch(() => undefined);
  }

  private async replayResults(address: TabAddress): Promise<void> {
    const now = this.deps.clock.now();
    const records = await this.deps.codes.recentTabEvents(address.tabId, address.session, now - this.settings.resultReplayMs);
    if (records.length === 0) return;
    const keyed = records.map((record) => ({ record, key: resultPublishKey(record.code) }));
    const written = await this.deps.writtenResults.writtenAmong(keyed.map((k) => k.key), now);
    for (const { record, key } of keyed) {
      // Under the result's own key: an event still in the stream is not appended again.
      if (!written.has(key)) await this.deps.hub.deliver(address, record.event, undefined, key);
    }
  }
}
