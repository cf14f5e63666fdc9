import { addressKey, type TabAddress } from '../protocol/address.js';
import { ConnectionCursors } from './connection-cursors.js';
import type { LocalTab } from './local-tab.js';

/**
 * The tabs this node holds, by address (tab id and session), with a count per session for the
 * per-session bound (docs/configuration.md `tabsPerSession`).
 */
export class LocalTabs {
  private readonly byAddress = new Map<string, LocalTab>();
  /** session -> number of its tabs here. */
  private readonly perSession = new Map<string, number>();

  get size(): number {
    return this.byAddress.size;
  }

  get(address: TabAddress): LocalTab | undefined {
    return this.byAddress.get(addressKey(address));
  }

  has(address: TabAddress): boolean {
    return this.byAddress.has(addressKey(address));
  }

  values(): IterableIterator<LocalTab> {
    return this.byAddress.values();
  }

  /** A new tab for the address, or undefined when its session holds `maxPerSession` tabs here already. */
  create(address: TabAddress, now: number, maxPerSession: number): LocalTab | undefined {
    const count = this.perSession.get(address.session) ?? 0;
    if (count >= maxPerSession) return undefined;
    const tab: LocalTab = { address, connections: new ConnectionCursors(), cursors: undefined, transport: undefined, lastSeen: now, chain: undefined };
    this.byAddress.set(addressKey(address), tab);
    this.perSession.set(address.session, count + 1);
    return tab;
  }

  /** Removes the tab (when it is still the one held for its address) and its connections. */
  remove(tab: LocalTab): void {
    const key = addressKey(tab.address);
    if (this.byAddress.get(key) !== tab) return;
    this.byAddress.delete(key);
    tab.connections.clear();
    const left = (this.perSession.get(tab.address.session) ?? 1) - 1;
    if (left > 0) this.perSession.set(tab.address.session, left);
    else this.perSession.delete(tab.address.session);
  }

  /** Empties the table; returns the tabs it held. */
  clear(): LocalTab[] {
    const tabs = [...this.byAddress.values()];
    this.byAddress.clear();
    this.perSession.clear();
    return tabs;
  }
}
