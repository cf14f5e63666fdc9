import type { TabAddress } from '../protocol/address.js';

/**
 * Announcements to a node go on `events:<node>` (prefixed, docs/redis.md "Keys"): the append script publishes
 * each event on the channel of every node that holds its tab, and each node's broker listens on its own.
 */
export const EVENTS_CHANNEL_PREFIX = 'events:';

/** A tab's keys (redis-broker-scripts.ts names them), in one hash slot. */
export type TabKeys = [m: string, ev: string, p: string, k: string, kt: string];

/** The keys of the tab at `to` under `prefix` (the connection's). */
export function tabKeys(prefix: string, to: TabAddress): TabKeys {
  const base = `${prefix}t:{${to.session}:${to.tabId}}`;
  return [`${base}:m`, `${base}:ev`, `${base}:p`, `${base}:k`, `${base}:kt`];
}

/** The channel of `node`'s announcements (unprefixed). */
export const eventsChannel = (node: string): string => `${EVENTS_CHANNEL_PREFIX}${node}`;
