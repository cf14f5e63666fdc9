import type { TestService } from './service.js';
import { until } from './until.js';

/**
 * The hub's view of one tab: whether a connection is attached, and its last sign of life. Read from
 * the hub's private table because the hub has no public per-tab view, and tests need one to wait for a
 * connect, a disconnect or a ping to be processed instead of sleeping. Throws if the hub's shape changed,
 * so a refactoring of the hub fails here, loudly, rather than as a timeout somewhere else.
 */
export function hubTab(service: TestService, tabId: string): { connected: boolean; lastSeen: number } | undefined {
  const tabs = (service.app.tabwire.hub as unknown as { tabs?: unknown }).tabs;
  if (!(tabs instanceof Map)) throw new Error('test/helpers/hub.ts: the hub no longer keeps a `tabs` Map; update hubTab()');
  const tab = tabs.get(tabId) as { connection?: unknown; lastSeen?: unknown } | undefined;
  if (tab === undefined) return undefined;
  if (!('connection' in tab) || typeof tab.lastSeen !== 'number') throw new Error('test/helpers/hub.ts: the hub\'s tab entry changed shape; update hubTab()');
  return { connected: tab.connection !== undefined, lastSeen: tab.lastSeen };
}

/** True once the hub holds a live connection (WebSocket or held long-poll) for `tabId`. */
export const connected = (service: TestService, tabId: string): boolean => hubTab(service, tabId)?.connected === true;

/** True once the hub holds the tab (it was attached) and no connection is attached any more. */
export const disconnected = (service: TestService, tabId: string): boolean => hubTab(service, tabId)?.connected === false;

let barriers = 0;

/**
 * A deterministic "nothing else arrives" check: delivers a marker event (type `Barrier`) to the tab and
 * waits for it. The hub keeps each tab's events in order, so once the marker is in, every event sent to
 * the tab before it has arrived too; assert on `tab.events` after this instead of sleeping.
 */
export async function barrier(service: TestService, tab: { tabId: string; events: readonly { type: string; data?: unknown }[] }): Promise<void> {
  const n = ++barriers;
  await service.app.tabwire.hub.deliver(tab.tabId, { type: 'Barrier', data: n });
  await until(() => tab.events.some((e) => e.type === 'Barrier' && e.data === n), 'the barrier event');
}
