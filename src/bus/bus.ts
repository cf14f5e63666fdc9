import type { TabEvent } from '../protocol/frames.js';

/** Messages that travel between nodes. Discriminated by `kind`; handlers switch exhaustively. */
export type BusMessage = { kind: 'deliver'; tabId: string; event: TabEvent };

export type BusHandler = (message: BusMessage) => void;

/**
 * Carries messages to every subscribed hub (ARCHITECTURE.md §1 "One delivery path").
 * Guarantees: at-most-once per subscriber; messages published by one publisher reach a
 * subscriber in publish order.
 */
export interface Bus {
  publish(message: BusMessage): Promise<void>;
  /** Returns a function that removes the subscription. */
  subscribe(handler: BusHandler): () => void;
  close(): Promise<void>;
}
