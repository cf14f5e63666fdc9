import type { DeliveryFallback } from '../bus/bus.js';
import type { TabEvent } from '../protocol/frames.js';
import type { TabAddress } from './address.js';

/**
 * The one way domain code reaches a browser (docs/events.md): an event for a tab of a session. It
 * never reaches another session, even one that holds the same tab id later.
 */
export interface Delivery {
  deliver(to: TabAddress, event: TabEvent, fallback?: DeliveryFallback): Promise<void>;
}
