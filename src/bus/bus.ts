import type { OutboundMessage } from '../protocol/xmpp-message.js';

/**
 * Requests between nodes. Discriminated by `kind`; handlers switch exhaustively. Tab events do not travel
 * here: the broker announces each one with its append (broker.ts `subscribe`).
 */
export type BusMessage = XmppSendRequest | XmppSendAnswer;

/**
 * An outbound XMPP message from a node without the XMPP server connection, for the node that holds it
 * (docs/redis.md "XMPP component"): addressed to the lease's holder, as the asking node read it.
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
 * Carries requests between nodes (docs/redis.md "The bus"), each to one node: every subscriber on the node
 * it is addressed to, and no other node. Guarantees: at-most-once per subscriber; messages published by one
 * publisher to one node reach a subscriber there in publish order; a subscriber that throws affects neither
 * the publisher nor the other subscribers. A message to a node that is gone reaches nobody.
 */
export interface Bus {
  /** Sends `message` to the node named `to` (its node id; the bus of one node takes every message itself). */
  publish(to: string, message: BusMessage): Promise<void>;
  /** Returns a function that removes the subscription. */
  subscribe(handler: BusHandler): () => void;
  close(): Promise<void>;
}
