import type { OutboundMessage } from '../protocol/xmpp-message.js';
import type { TabAddress } from '../protocol/address.js';
import type { EventFrame } from '../protocol/frames.js';
import type { StoredMessage } from '../store/stores.js';

/**
 * Where an event goes when it cannot reach its tab (no live connection, buffer overflow or age):
 * plain data, so it travels on any bus. Events without one are simply lost after their bounds
 * (docs/events.md "Event streams": browser delivery is not durable).
 */
export type DeliveryFallback = {
  /** An XMPP message routed to a handler: stored for the account's PopMessages instead. */
  kind: 'agent-message';
} & Omit<StoredMessage, 'id'>;

/**
 * Messages that travel between nodes. Discriminated by `kind`; handlers switch exhaustively.
 * `event`: an event was appended to a tab's stream (broker.ts); the nodes holding the tab write it.
 * `awaiting`: it carries a fallback (an XMPP message), so a write of it awaits the client's confirmation
 * (docs/xmpp.md "Delivered means confirmed"). `frame` stays last: the broker's script splices its id in.
 */
export type BusMessage = { kind: 'event'; to: TabAddress; awaiting?: true; frame: EventFrame } | XmppSendRequest | XmppSendAnswer;

/**
 * An outbound XMPP message from a node without the XMPP server connection, for the node that holds it
 * (docs/redis.md "XMPP component"). Every node receives it; only the holder acts.
 */
export interface XmppSendRequest {
  kind: 'xmpp-send';
  /** Unique per request; the answer carries it back. */
  requestId: string;
  /** The asking node (its node id); only it acts on the answer. */
  replyTo: string;
  message: OutboundMessage;
}

/** The holder's answer to an `xmpp-send`: `sent`, or `offline` when it holds the lease but its connection is down. */
export interface XmppSendAnswer {
  kind: 'xmpp-sent';
  requestId: string;
  to: string;
  outcome: 'sent' | 'offline' | 'failed';
}

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
  /**
   * Calls `listener` when this node may have missed messages (a networked bus subscribed again after
   * losing its connection), so what depends on them can be read again from where it is kept. Returns a
   * function that removes the listener. The memory bus never misses one.
   */
  onResume(listener: () => void): () => void;
  close(): Promise<void>;
}
