import type { Clock } from '../clock.js';
import type { Store } from '../store/stores.js';
import type { Hub } from './hub.js';

/** Refreshes come often enough that a held binding is refreshed several times within its retention. */
export const tabBindingRefreshMs = (retentionMs: number): number => Math.max(10_000, Math.floor(retentionMs / 4));

/**
 * Tab bindings are stored so any node can check a QR request against them; a node forgets its
 * idle tabs and removes their bindings, but a process that stops (crash, deploy) cannot. So every
 * node marks the bindings it still holds, and bindings nobody marked within `retentionMs` are
 * deleted: a tab id is never locked for ever by a process that is gone (docs/events.md).
 */
export async function refreshTabBindings(hub: Hub, store: Store, clock: Clock, retentionMs: number): Promise<number> {
  const now = clock.now();
  await store.tabs.refresh(hub.heldTabIds(), now);
  return store.tabs.purgeUnseen(now - retentionMs);
}
