import type { TabConnection } from './connection.js';
import { disconnects } from './disconnect.js';
import { hasOpen, prune, type LocalTab } from './local-tab.js';

/** A holder's `connectedUntil` for a tab with a live connection: its node's heartbeat decides. */
const WHILE_THE_NODE_LIVES = Number.MAX_SAFE_INTEGER;

/** Live connections one tab of a session may have at once on a node; one more closes the oldest ('replaced'). */
export const MAX_CONNECTIONS_PER_TAB = 8;

/** Adds a connection the tab does not have yet; at the cap the oldest live one is closed as 'replaced' to make room. */
export function addConnection(tab: LocalTab, connection: TabConnection): void {
  prune(tab);
  if (tab.connections.size >= MAX_CONNECTIONS_PER_TAB) {
    const oldest = tab.connections.oldest()!;
    tab.connections.delete(oldest);
    oldest.close(disconnects.replaced);
  }
  tab.connections.set(connection, undefined);
}

/** Until when the tab counts as connected here: while this node lives when it has a live connection; a long-poll tab has its gap. */
export function connectedUntil(tab: LocalTab, longPollGapMs: number): number {
  if (hasOpen(tab)) return WHILE_THE_NODE_LIVES;
  return tab.transport === 'long-poll' ? tab.lastSeen + longPollGapMs : 0;
}
