/**
 * A message stanza as the router sees it (no XMPP library types here): who, what type, the first
 * child element's name, namespace, attributes and text, and the whole stanza as XML.
 */
export interface InboundMessage {
  from: string;
  to: string;
  /** Stanza type (chat, normal, headline, groupchat, error); "normal" when absent (RFC 6121 §5.2.2). */
  type: string;
  id: string | undefined;
  /** The first child element that is not a <body>/<subject>/<thread>, else the first child; undefined for an empty message. */
  element: InboundElement | undefined;
  /** The whole stanza, serialized. */
  xml: string;
  /** Text of <body>, when present. */
  body: string | undefined;
}

export interface InboundElement {
  localName: string;
  namespace: string;
  attributes: Record<string, string>;
  text: string;
}

/** What the router hands the transport to send out. The payload children are already parsed XML, never strings glued together. */
export interface OutboundMessage {
  from: string;
  to: string;
  type: string;
  id: string;
  /** Child elements of the <message>, as serialized XML produced by an XML library. */
  children: OutboundChild[];
}

export type OutboundChild = { kind: 'text'; name: 'body' | 'subject'; text: string } | { kind: 'xml'; xml: string };
