import type { Clock } from '../clock.js';
import type { TabStore } from '../store/stores.js';
import type { TabAddress } from './address.js';
import type { TabConnection } from './connection.js';
import type { Hub } from './hub.js';

export type RegisterOutcome = 'ok' | 'conflict' | 'too_many_tabs';

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

  /**
   * 'conflict' without attaching when the tab belongs to another session; 'too_many_tabs' when the
   * session holds its limit of tabs already (the new binding is taken back).
   */
  async register(tabId: string, session: string, connection: TabConnection, lastEventId?: number): Promise<RegisterOutcome> {
    const bound = await this.tabs.bind(tabId, session, this.clock.now());
    if (bound === 'conflict') return 'conflict';
    if (this.hub.attach({ tabId, session }, connection, lastEventId) === 'attached') return 'ok';
    if (bound === 'created') await this.tabs.remove(tabId, session);
    return 'too_many_tabs';
  }

  /**
   * The page is going away (Unregister): the tab id is free again once this resolves (the binding is
   * removed before the connection's next frame is handled); see Hub.release for what stays.
   */
  async unregister(address: TabAddress): Promise<void> {
    this.hub.release(address);
    await this.tabs.remove(address.tabId, address.session);
  }
}
