import type { Logger } from 'pino';
import type { Bus, BusMessage } from '../bus/bus.js';
import type { Clock } from '../clock.js';
import { closeCodes } from '../errors.js';
import type { TabEvent } from '../protocol/frames.js';
import type { TabConnection } from './connection.js';
import { Outbox } from './outbox.js';

interface LocalTab {
  connection: TabConnection | undefined;
  outbox: Outbox;
  /** Last sign of life: attach, ping, or a connection still open. */
  lastSeen: number;
}

export interface HubOptions {
  bus: Bus;
  clock: Clock;
  log: Logger;
  outboxLimit: number;
  outboxMaxAgeMs: number;
  /** A tab with no connection and no sign of life for this long is forgotten. */
  tabIdleMs: number;
  /** Called when a tab is forgotten, so its registration can be removed from the store. */
  onForget?: (tabId: string) => void;
}

/** Counters exposed as metrics. */
export interface HubStats {
  tabs: number;
  connected: number;
  delivered: number;
  droppedUnknownTab: number;
  overflowed: number;
  expiredUnsent: number;
}

/**
 * The local hub: live tabs of this node only (ARCHITECTURE.md §1). Domain code reaches a browser
 * through `deliver` alone, which always goes through the bus, so one node and a cluster run the
 * same path; the node that holds the tab writes it.
 */
export class Hub {
  private readonly tabs = new Map<string, LocalTab>();
  private readonly unsubscribe: () => void;
  private readonly stats = { delivered: 0, droppedUnknownTab: 0, overflowed: 0, expiredUnsent: 0 };

  constructor(private readonly options: HubOptions) {
    this.unsubscribe = options.bus.subscribe((message) => this.onBusMessage(message));
  }

  /** Sends an event to a tab wherever it is connected. At-most-once per event id; order kept per tab. */
  async deliver(tabId: string, event: TabEvent): Promise<void> {
    await this.options.bus.publish({ kind: 'deliver', tabId, event });
  }

  /**
   * Makes `connection` the tab's live connection (a previous one is closed as replaced) and
   * writes what the tab has missed. `lastEventId` is the last id the client says it saw.
   */
  attach(tabId: string, connection: TabConnection, lastEventId?: number): void {
    const now = this.options.clock.now();
    let tab = this.tabs.get(tabId);
    if (!tab) {
      tab = { connection: undefined, outbox: new Outbox(this.options.outboxLimit, this.options.outboxMaxAgeMs, now * 1000), lastSeen: now };
      this.tabs.set(tabId, tab);
    }
    const previous = tab.connection;
    tab.connection = connection;
    tab.lastSeen = now;
    if (previous && previous !== connection) previous.close(closeCodes.replaced, 'replaced');
    this.flush(tab, lastEventId);
  }

  /** The connection went away; the tab stays (and buffers) until it is idle for tabIdleMs. */
  detach(tabId: string, connection: TabConnection): void {
    const tab = this.tabs.get(tabId);
    if (tab?.connection !== connection) return;
    tab.connection = undefined;
    tab.lastSeen = this.options.clock.now();
  }

  /** A ping or poll: the tab is alive. */
  touch(tabId: string): void {
    const tab = this.tabs.get(tabId);
    if (tab) tab.lastSeen = this.options.clock.now();
  }

  /** The page said goodbye (Unregister): forget the tab now. */
  forget(tabId: string): void {
    if (this.tabs.delete(tabId)) this.options.onForget?.(tabId);
  }

  isLocal(tabId: string): boolean {
    return this.tabs.has(tabId);
  }

  /** Forgets idle tabs and expires old buffered events. Called on a timer and by tests with a moved clock. */
  sweep(): void {
    const now = this.options.clock.now();
    for (const [tabId, tab] of this.tabs) {
      this.stats.expiredUnsent += tab.outbox.expire(now);
      if (!tab.connection && now - tab.lastSeen >= this.options.tabIdleMs) this.forget(tabId);
    }
  }

  snapshot(): HubStats {
    let connected = 0;
    let overflowed = this.stats.overflowed;
    for (const tab of this.tabs.values()) {
      if (tab.connection) connected++;
      overflowed += tab.outbox.overflowed;
    }
    return { ...this.stats, overflowed, tabs: this.tabs.size, connected };
  }

  /** Closes every connection (shutdown). */
  close(): void {
    this.unsubscribe();
    for (const tab of this.tabs.values()) tab.connection?.close(closeCodes.goingAway, 'shutdown');
    this.tabs.clear();
  }

  private onBusMessage(message: BusMessage): void {
    switch (message.kind) {
      case 'deliver':
        return this.deliverLocal(message.tabId, message.event);
    }
  }

  private deliverLocal(tabId: string, event: TabEvent): void {
    const tab = this.tabs.get(tabId);
    if (!tab) {
      // Not held here: in a cluster another node holds it; on one node the tab is gone.
      this.stats.droppedUnknownTab++;
      return;
    }
    tab.outbox.push(event, this.options.clock.now());
    this.stats.delivered++;
    this.flush(tab);
  }

  private flush(tab: LocalTab, afterId?: number): void {
    if (!tab.connection) return;
    const frames = tab.outbox.pending(this.options.clock.now(), afterId);
    if (frames.length === 0) return;
    if (tab.connection.send(frames)) tab.outbox.markSent(frames);
  }
}
