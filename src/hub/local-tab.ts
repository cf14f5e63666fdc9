import type { TabAddress } from '../protocol/address.js';
import type { ConnectionCursors } from './connection-cursors.js';
import type { TabConnection } from './connection.js';

/** A tab as this node holds it: its live connections here and their cursors in the tab's stream. */
export interface LocalTab {
  address: TabAddress;
  /**
   * Every live connection of the tab in its session on this node, each with the last event id written
   * to it (undefined while its Register is being served): a duplicated browser tab keeps `window.name`,
   * so two pages may hold one tab; each receives the tab's events (fan-out), nobody is kicked out.
   */
  connections: ConnectionCursors;
  /** The last event id written to each client that has one (TabConnection.client): a long-poll's kept-alive socket. */
  cursors: WeakMap<object, number> | undefined;
  /** Transport of the latest connection: a long-poll tab between two polls is still live. */
  transport: TabConnection['transport'] | undefined;
  /** Last sign of life: attach, ping, poll, detach. */
  lastSeen: number;
  /**
   * Work on the tab's connections runs in this order (attach flushes, events), so each gets its events
   * in id order. Undefined while nothing is running (most tabs, most of the time: no promise kept per idle tab).
   */
  chain: Promise<void> | undefined;
}

/** Drops connections that can write no more (an answered long-poll, a closed socket). */
export function prune(tab: LocalTab): void {
  tab.connections.forEach((_, connection) => {
    if (!connection.open) tab.connections.delete(connection);
  });
}

export function hasOpen(tab: LocalTab): boolean {
  return tab.connections.some((connection) => connection.open);
}

/** Runs `work` after the tab's earlier work (its `chain`); a failure goes to `onError`, never to later work. */
export function inTabOrder(tab: LocalTab, work: () => Promise<void>, onError: (err: unknown) => void): Promise<void> {
  const next: Promise<void> = (tab.chain ?? Promise.resolve())
    .then(work)
    .catch(onError)
    .finally(() => {
      if (tab.chain === next) tab.chain = undefined;
    });
  tab.chain = next;
  return next;
}
