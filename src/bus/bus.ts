import type { TabAddress } from '../hub/address.js';
import type { EventFrame } from '../protocol/frames.js';
import type { StoredMessage } from '../store/stores.js';

/**
 * Where an event goes when it cannot reach its tab (no live connection, buffer overflow or age):
 * plain data, so it travels on any bus. Events without one are simply lost after their bounds
 * (SPEC.md "Events" rule 1: browser delivery is not durable).
 */
export type DeliveryFallback = {
  /** An XMPP message routed to a handler: stored for the account's PopMessages instead. */
  kind: 'agent-message';
} & Omit<StoredMessage, 'id'>;

/**
 * Messages that travel between nodes. Discriminated by `kind`; handlers switch exhaustively.
 * `event`: an event was appended to a tab's stream (broker.ts); the nodes holding the tab write it.
 */
export type BusMessage = { kind: 'event'; to: TabAddress; frame: EventFrame };

export type BusHandler = (message: BusMessage) => void;

/**
 * Carries messages to every subscribed hub (docs/events.md "One delivery path").
 * Guarantees: at-most-once per subscriber; messages published by one publisher reach a
 * subscriber in publish order; a subscriber that throws affects neither the publisher nor the
 * other subscribers.
 */
export interface Bus {
  publish(message: BusMessage): Promise<void>;
  /** Returns a function that removes the subscription. */
  subscribe(handler: BusHandler): () => void;
  close(): Promise<void>;
}
