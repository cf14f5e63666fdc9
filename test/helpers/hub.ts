import type { TestService } from './service.js';
import { until } from './until.js';

/** The address a tab has now: the tab id with the session its binding in the store names. */
export async function addressOf(service: TestService, tabId: string): Promise<{ tabId: string; session: string } | undefined> {
  const session = await service.store.tabs.sessionOf(tabId);
  return session === undefined ? undefined : { tabId, session };
}

/** The hub's view of one tab as bound now: whether a connection is attached, and its last sign of life. */
export async function hubTab(service: TestService, tabId: string): Promise<{ connected: boolean; lastSeen: number } | undefined> {
  const address = await addressOf(service, tabId);
  return address && service.app.tabwire.hub.state(address);
}

/** True once the hub holds a live connection (WebSocket or held long-poll) for `tabId`. */
export const connected = async (service: TestService, tabId: string): Promise<boolean> => (await hubTab(service, tabId))?.connected === true;

/** True once the hub holds the tab (it was attached) and no connection is attached any more. */
export const disconnected = async (service: TestService, tabId: string): Promise<boolean> => (await hubTab(service, tabId))?.connected === false;

let barriers = 0;

/**
 * A deterministic "nothing else arrives" check: delivers a marker event (type `Barrier`) to the tab and
 * waits for it. The hub keeps each tab's events in order, so once the marker is in, every event sent to
 * the tab before it has arrived too; assert on `tab.events` after this instead of sleeping.
 */
export async function barrier(service: TestService, tab: { tabId: string; events: readonly { type: string; data?: unknown }[] }): Promise<void> {
  const n = ++barriers;
  const address = await addressOf(service, tab.tabId);
  if (!address) throw new Error(`tab ${tab.tabId} is not bound`);
  await service.app.tabwire.hub.deliver(address, { type: 'Barrier', data: n });
  await until(() => tab.events.some((e) => e.type === 'Barrier' && e.data === n), 'the barrier event');
}
