import type { Clock } from '../clock.js';
import type { TabStore } from '../store/stores.js';
import type { TabConnection } from './connection.js';
import type { Hub } from './hub.js';

/**
 * Registration of tabs: binds a tab to the session that first registers it (stored, so any node
 * can check a QR request against it) and attaches the live connection to the local hub.
 */
export class TabRegistry {
  constructor(
    private readonly tabs: TabStore,
    private readonly hub: Hub,
    private readonly clock: Clock,
  ) {}

  /** Returns 'conflict' without attaching when the tab belongs to another session. */
  async register(tabId: string, sessionHash: string, connection: TabConnection, lastEventId?: number): Promise<'ok' | 'conflict'> {
    if ((await this.tabs.bind(tabId, sessionHash, this.clock.now())) === 'conflict') return 'conflict';
    this.hub.attach(tabId, connection, lastEventId);
    return 'ok';
  }

  /** The page is going away for good: drop the tab here and in the store. */
  async unregister(tabId: string): Promise<void> {
    this.hub.forget(tabId);
  }
}
