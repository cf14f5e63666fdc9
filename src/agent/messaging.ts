import { randomUUID } from 'node:crypto';
import { TabwireError } from '../errors.js';
import type { MessageStore } from '../store/stores.js';
import type { InboundMessage, OutboundChild, OutboundMessage } from '../protocol/xmpp-message.js';
import { splitJid, type MessageRouter } from './router.js';

/**
 * The XMPP server connection as messaging needs it: this node's component (xmpp/component.ts), or in a
 * cluster the one connection held by one node, reached over the bus (xmpp/leased-component.ts).
 */
export interface XmppLink {
  /** Sends a message; rejects with XmppOfflineError when no connection is up to take it. */
  send(message: OutboundMessage): Promise<void>;
}

/** No XMPP server connection can take a message now (none configured up, or, in a cluster, no node holds one). */
export class XmppOfflineError extends Error {
  constructor(message = 'XMPP component is offline') {
    super(message);
    this.name = 'XmppOfflineError';
  }
}

/** Turns an outgoing message into the stanza a local recipient receives (same XML library as the wire). */
export type LocalDelivery = (message: OutboundMessage) => InboundMessage;

export interface PoppedMessage {
  id: string;
  from: string;
  to: string;
  type: string;
  /** Unix seconds. */
  timestamp: number;
  /** The whole stanza as XML. */
  content: string;
}

/** What messaging calls: the local router, the message store, the stanza conversion for local recipients, the XMPP link. */
export interface MessagingDeps {
  router: MessageRouter;
  messages: MessageStore;
  toLocal: LocalDelivery;
  /** Absent without an XMPP server connection: a message to another domain is then `xmpp_unavailable`. */
  link: XmppLink | undefined;
}

/**
 * Sending and popping for agent accounts (docs/agent-api.md): local recipients are routed
 * in-process through the router, others go out through the XMPP server.
 */
export class Messaging {
  /** `componentDomain`: the agents' XMPP domain (config `xmppComponentDomain`); a recipient there is routed in-process. */
  constructor(
    private readonly deps: MessagingDeps,
    private readonly componentDomain: string,
  ) {}

  jidOf(userName: string): string {
    return `${userName}@${this.componentDomain}`;
  }

  async send(userName: string, to: string, children: OutboundChild[], id?: string): Promise<{ sent: true; id: string }> {
    const recipient = splitJid(to);
    if (!recipient) throw new TabwireError('validation_failed', `"${to}" is not a JID (local@domain)`);
    const message: OutboundMessage = { from: this.jidOf(userName), to, type: 'chat', id: id ?? randomUUID(), children };
    if (recipient.domain === this.componentDomain.toLowerCase()) {
      const outcome = await this.deps.router.route(this.deps.toLocal(message));
      if (outcome === 'unknown_recipient') throw new TabwireError('recipient_unknown', `No agent account ${to}`);
      if (outcome === 'quota_full') throw new TabwireError('mailbox_full', `The message store of ${to} is full`);
      return { sent: true, id: message.id };
    }
    if (!this.deps.link) throw unavailable();
    try {
      await this.deps.link.send(message);
    } catch (err) {
      throw err instanceof XmppOfflineError ? unavailable() : err;
    }
    return { sent: true, id: message.id };
  }

  async pop(accountId: string, maxCount: number): Promise<PoppedMessage[]> {
    return (await this.deps.messages.pop(accountId, maxCount)).map((m) => ({
      id: m.id,
      from: m.from,
      to: m.to,
      type: m.type,
      timestamp: Math.floor(m.createdAt / 1000),
      content: m.content,
    }));
  }
}

const unavailable = (): TabwireError =>
  new TabwireError('xmpp_unavailable', 'No XMPP server connection; only agent accounts of this service can be reached');
