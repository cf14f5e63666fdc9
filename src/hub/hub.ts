import type { Logger } from 'pino';
import type { Bus, BusMessage, DeliveryFallback } from '../bus/bus.js';
import type { Clock } from '../clock.js';
import { closeCodes } from '../errors.js';
import type { EventFrame, TabEvent } from '../protocol/frames.js';
import { addressKey, type TabAddress } from './address.js';
import type { TabConnection } from './connection.js';
import type { Delivery } from './delivery.js';
import { Outbox, type UnsentEvent } from './outbox.js';

interface LocalTab {
  address: TabAddress;
  /**
   * Every live connection of the tab in its session: a duplicated browser tab keeps `window.name`,
   * so two pages may hold one tab; each receives the tab's events (fan-out), nobody is kicked out.
   */
  connections: Set<TabConnection>;
  /** The last event id written to each client that has one (TabConnection.client). */
  cursors: WeakMap<object, number>;
  /** Transport of the latest connection: a long-poll tab between two polls is still live. */
  transport: TabConnection['transport'] | undefined;
  outbox: Outbox;
  /** Last sign of life: attach, ping, poll, detach, or an event waiting for the session to come back. */
  lastSeen: number;
  /**
   * False after Unregister, or for an entry made by an event whose tab had gone: its buffer waits
   * for the same session to register the tab again, but nothing is written to it until then.
   */
  held: boolean;
}

/** Why an event left a tab unsent and without a fallback (metrics label). */
export type DropReason = 'overflow' | 'expired' | 'forgotten';

/** Running totals the hub reports as they happen (Prometheus counters, metrics.ts). */
export interface HubCounters {
  delivered(): void;
  dropped(reason: DropReason, n: number): void;
  /** Events handed to their fallback (stored for PopMessages) instead of being dropped. */
  fellBack(n: number): void;
}

export interface HubOptions {
  bus: Bus;
  clock: Clock;
  log: Logger;
  outboxLimit: number;
  outboxMaxAgeMs: number;
  /** A tab with no connection and no sign of life for this long is forgotten. */
  tabIdleMs: number;
  /** A long-poll tab counts as connected for this long after its last poll was answered. */
  longPollGapMs: number;
  /** Tabs one session may hold on this node (docs/configuration.md `tabsPerSession`). */
  maxTabsPerSession: number;
  /**
   * An event every WebSocket Register (and the first connection of a tab new here) is told first:
   * `CheckServerInstance` with this service instance's id, so pages notice a restart.
   */
  greeting?: () => TabEvent;
  counters?: HubCounters;
  /** An event that cannot reach its tab and carries a fallback (an XMPP message): store it. */
  onFallback: (fallback: DeliveryFallback) => void;
  /** The session let the tab go (Unregister): its handlers go now, its buffer later (the registry removes the binding). */
  onRelease?: (address: TabAddress) => void;
  /** The tab is forgotten: remove what hangs on it (binding, handlers). */
  onForget?: (address: TabAddress) => void;
}

/** Gauges of this node's tabs. */
export interface HubSnapshot {
  tabs: number;
  connected: number;
}

/** `created`: the tab is new here (first Register, or after a restart or idle expiry); `attached`: it was known. */
export type AttachOutcome = 'created' | 'attached' | 'too_many_tabs';

/** Live connections one tab of a session may have at once; one more closes the oldest ('replaced'). */
export const MAX_CONNECTIONS_PER_TAB = 8;

/**
 * The local hub: live tabs of this node only. Domain code reaches a browser through `deliver`
 * alone, which always goes through the bus, so one node and a cluster run the same path; the node
 * that holds the tab writes it. Tabs are kept per address (tab id and session), so an event only
 * ever reaches the session it was addressed to (docs/events.md).
 */
export class Hub implements Delivery {
  private readonly tabs = new Map<string, LocalTab>();
  /** session -> number of its entries, for the per-session bound. */
  private readonly perSession = new Map<string, number>();
  private readonly unsubscribe: () => void;

  constructor(private readonly o: HubOptions) {
    this.unsubscribe = o.bus.subscribe((message) => this.onBusMessage(message));
  }

  /**
   * Sends an event to a tab of a session wherever it is connected. At-most-once per event id; order
   * kept per address. With a `fallback`, an event that cannot be written to a live connection
   * (none now, overflow, age) is handed to `onFallback` instead of being lost.
   */
  async deliver(to: TabAddress, event: TabEvent, fallback?: DeliveryFallback): Promise<void> {
    await this.o.bus.publish(fallback === undefined ? { kind: 'deliver', to, event } : { kind: 'deliver', to, event, fallback });
  }

  /**
   * Adds `connection` to the tab's live connections and writes what the tab has missed to it.
   * `lastEventId` is the last id the client says it saw. A connection that closed meanwhile (the
   * client left during its Register) is not attached.
   */
  attach(address: TabAddress, connection: TabConnection, lastEventId?: number): AttachOutcome {
    const now = this.o.clock.now();
    let tab = this.tabs.get(addressKey(address));
    const created = tab === undefined;
    if (!tab) {
      if ((this.perSession.get(address.session) ?? 0) >= this.o.maxTabsPerSession) return 'too_many_tabs';
      tab = this.create(address, now);
    }
    tab.held = true;
    tab.lastSeen = now;
    const outcome = created ? 'created' : 'attached';
    if (!connection.open) return outcome;
    this.prune(tab);
    if (!tab.connections.has(connection)) {
      if (tab.connections.size >= MAX_CONNECTIONS_PER_TAB) {
        const oldest = tab.connections.values().next().value!;
        tab.connections.delete(oldest);
        oldest.close(closeCodes.replaced, 'replaced');
      }
      tab.connections.add(connection);
    }
    tab.transport = connection.transport;
    // A client the tab has written to before resumes after what it got, even events another page took.
    const cursor = lastEventId ?? (connection.client === undefined ? undefined : tab.cursors.get(connection.client));
    this.flushTo(tab, connection, cursor);
    if (this.o.greeting && (created || connection.transport === 'websocket')) this.push(tab, this.o.greeting(), undefined, now);
    return outcome;
  }

  /** The connection went away; the tab stays (and buffers) until it is idle for tabIdleMs. */
  detach(address: TabAddress, connection: TabConnection): void {
    const tab = this.tabs.get(addressKey(address));
    if (!tab?.connections.delete(connection)) return;
    tab.lastSeen = this.o.clock.now();
  }

  /** A ping or poll: the tab is alive. */
  touch(address: TabAddress): void {
    const tab = this.tabs.get(addressKey(address));
    if (tab) tab.lastSeen = this.o.clock.now();
  }

  /**
   * The page said goodbye (Unregister). The tab id is free for any session from now on; what is
   * already addressed to this session waits in its buffer (within the usual bounds) in case the same
   * session registers the tab again, as a reloading page does.
   */
  release(address: TabAddress): void {
    const tab = this.tabs.get(addressKey(address));
    if (!tab) return;
    tab.connections.clear();
    tab.held = false;
    tab.lastSeen = this.o.clock.now();
    this.o.onRelease?.(address);
  }

  /** Whether the session holds the tab here (registered, not released). */
  holds(address: TabAddress): boolean {
    return this.tabs.get(addressKey(address))?.held === true;
  }

  /** Whether an event for the address would be written to a connection now (or, for long-poll, at the next poll). */
  isConnected(address: TabAddress): boolean {
    const tab = this.tabs.get(addressKey(address));
    if (!tab?.held) return false;
    if (this.hasOpen(tab)) return true;
    return tab.transport === 'long-poll' && this.o.clock.now() - tab.lastSeen < this.o.longPollGapMs;
  }

  /** One tab's state here (diagnostics and tests): held by its session, live connections now, last sign of life. */
  state(address: TabAddress): { held: boolean; connected: boolean; connections: number; lastSeen: number } | undefined {
    const tab = this.tabs.get(addressKey(address));
    if (!tab) return undefined;
    this.prune(tab);
    return { held: tab.held, connected: tab.connections.size > 0, connections: tab.connections.size, lastSeen: tab.lastSeen };
  }

  /** Forgets idle tabs and expires old buffered events. Called on a timer and by tests with a moved clock. */
  sweep(): void {
    const now = this.o.clock.now();
    for (const tab of this.tabs.values()) {
      this.settleUnsent(tab.outbox.expire(now), 'expired');
      if (!this.hasOpen(tab) && now - tab.lastSeen >= this.o.tabIdleMs) this.forget(tab);
    }
  }

  snapshot(): HubSnapshot {
    let connected = 0;
    for (const tab of this.tabs.values()) if (this.hasOpen(tab)) connected++;
    return { tabs: this.tabs.size, connected };
  }

  /** Tab ids this node holds for their session (their bindings are refreshed in the store). */
  heldTabIds(): string[] {
    const ids: string[] = [];
    for (const tab of this.tabs.values()) if (tab.held) ids.push(tab.address.tabId);
    return ids;
  }

  /** Closes every connection (shutdown); buffered events with a fallback are handed to it. */
  close(): void {
    this.unsubscribe();
    for (const tab of this.tabs.values()) {
      for (const connection of tab.connections) connection.close(closeCodes.goingAway, 'shutdown');
      this.settleUnsent(tab.outbox.drain(), 'forgotten');
    }
    this.tabs.clear();
    this.perSession.clear();
  }

  private create(address: TabAddress, now: number): LocalTab {
    const tab: LocalTab = {
      address,
      connections: new Set(),
      cursors: new WeakMap(),
      transport: undefined,
      outbox: new Outbox(this.o.outboxLimit, this.o.outboxMaxAgeMs, now * 1000),
      lastSeen: now,
      held: false,
    };
    this.tabs.set(addressKey(address), tab);
    this.perSession.set(address.session, (this.perSession.get(address.session) ?? 0) + 1);
    return tab;
  }

  private forget(tab: LocalTab): void {
    const key = addressKey(tab.address);
    if (this.tabs.get(key) !== tab) return;
    this.tabs.delete(key);
    const left = (this.perSession.get(tab.address.session) ?? 1) - 1;
    if (left > 0) this.perSession.set(tab.address.session, left);
    else this.perSession.delete(tab.address.session);
    this.settleUnsent(tab.outbox.drain(), 'forgotten');
    this.o.onForget?.(tab.address);
  }

  private onBusMessage(message: BusMessage): void {
    switch (message.kind) {
      case 'deliver':
        return this.deliverLocal(message.to, message.event, message.fallback);
    }
  }

  private deliverLocal(to: TabAddress, event: TabEvent, fallback: DeliveryFallback | undefined): void {
    if (fallback && !this.isConnected(to)) {
      // Nobody to write it to now: straight to the durable store rather than into a dead tab's buffer.
      this.o.onFallback(fallback);
      this.o.counters?.fellBack(1);
      return;
    }
    const now = this.o.clock.now();
    let tab = this.tabs.get(addressKey(to));
    if (!tab) {
      if ((this.perSession.get(to.session) ?? 0) >= this.o.maxTabsPerSession) return this.o.counters?.dropped('overflow', 1);
      // The tab went away (reload, idle): keep the event for the same session's return, within the usual bounds.
      tab = this.create(to, now);
    }
    this.push(tab, event, fallback, now);
  }

  /** Appends an event to the tab's outbox and writes what is unsent to every live connection. */
  private push(tab: LocalTab, event: TabEvent, fallback: DeliveryFallback | undefined, now: number): void {
    this.settleUnsent(tab.outbox.push(event, now, fallback), 'overflow');
    this.o.counters?.delivered();
    if (!tab.held) return;
    this.prune(tab);
    if (tab.connections.size === 0) return;
    this.settleUnsent(tab.outbox.expire(now), 'expired');
    const frames = tab.outbox.pending();
    if (frames.length === 0) return;
    let written = false;
    for (const connection of [...tab.connections]) if (this.write(tab, connection, frames)) written = true;
    if (written) tab.outbox.markSent(frames);
    this.prune(tab);
  }

  /** Writes to one connection what its client has not seen: frames after `afterId`, or all unsent ones. */
  private flushTo(tab: LocalTab, connection: TabConnection, afterId?: number): void {
    this.settleUnsent(tab.outbox.expire(this.o.clock.now()), 'expired');
    const frames = tab.outbox.pending(afterId);
    if (frames.length === 0) return;
    if (this.write(tab, connection, frames)) tab.outbox.markSent(frames);
    this.prune(tab);
  }

  private write(tab: LocalTab, connection: TabConnection, frames: readonly EventFrame[]): boolean {
    if (!connection.send(frames)) return false;
    if (connection.client !== undefined) tab.cursors.set(connection.client, frames[frames.length - 1]!.id);
    return true;
  }

  /** Drops connections that can write no more (an answered long-poll, a closed socket). */
  private prune(tab: LocalTab): void {
    for (const connection of tab.connections) if (!connection.open) tab.connections.delete(connection);
  }

  private hasOpen(tab: LocalTab): boolean {
    for (const connection of tab.connections) if (connection.open) return true;
    return false;
  }

  /** Events that left a buffer unsent: to their fallback when they have one, else counted as dropped. */
  private settleUnsent(events: UnsentEvent[], reason: DropReason): void {
    if (events.length === 0) return;
    let dropped = 0;
    for (const { fallback } of events) {
      if (fallback) this.o.onFallback(fallback);
      else dropped++;
    }
    if (events.length > dropped) this.o.counters?.fellBack(events.length - dropped);
    if (dropped > 0) this.o.counters?.dropped(reason, dropped);
  }
}
