import type { Clock } from '../clock.js';
import type { PurgeTask } from '../retention/purge.js';
import type { TabStore } from '../store/stores.js';
import type { Hub } from './hub.js';

/** Refreshes come often enough that a held binding is refreshed several times within its retention. */
export const tabBindingRefreshMs = (retentionMs: number): number => Math.max(10_000, Math.floor(retentionMs / 4));

/**
 * Tab bindings are stored so any node can check a QR request against them; a node forgets its
 * idle tabs and removes their bindings, but a process that stops (crash, deploy) cannot. So every
 * node marks the bindings it still holds (this, on a timer of `tabBindingRefreshMs`), and the
 * retention purge deletes bindings nobody marked within the retention (`tabBindingPurgeTask`): a tab
 * id is never locked for ever by a process that is gone (docs/events.md "Tab bindings").
 */
export async function refreshTabBindings(hub: Hub, tabs: TabStore, clock: Clock): Promise<void> {
  await tabs.refresh(hub.heldTabIds(), clock.now());
}

/** The purge task for bindings no node refreshed within `retentionMs`. */
export const tabBindingPurgeTask = (tabs: TabStore, retentionMs: number): PurgeTask => ({
  kind: 'tab_bindings',
  run: (now) => tabs.purgeUnseen(now - retentionMs),
});
