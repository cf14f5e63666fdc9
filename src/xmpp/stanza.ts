import xml from '@xmpp/xml';
import type { InboundElement, InboundMessage, OutboundMessage } from '../protocol/xmpp-message.js';
import { assertXmlText, parseXmlElement } from './xml-payload.js';

/** The namespace reported for children in the stream's default namespace (`<body/>` and friends). */
export const CLIENT_NS = 'jabber:client';
/**
 * Stanza content namespaces of the streams a stanza may have crossed (RFC 6120 §4.8.3, XEP-0114 §3). The same
 * `<body/>` is jabber:client at the sender, jabber:component:accept on our stream, and unqualified when built
 * locally; report all as jabber:client so handler selectors match however the message arrived.
 */
const CONTENT_NAMESPACES = new Set([CLIENT_NS, 'jabber:server', 'jabber:component:accept']);
const NS_STANZAS = 'urn:ietf:params:xml:ns:xmpp-stanzas';
/** The message types RFC 6121 §5.2.2 defines. */
const MESSAGE_TYPES = new Set(['chat', 'error', 'groupchat', 'headline', 'normal']);
/** Children that carry the message itself rather than a payload (RFC 6121 §5.2.3-5.2.5). */
const MESSAGE_FIELDS = new Set(['body', 'subject', 'thread']);

/**
 * Turns a received `<message>` into the router's InboundMessage, as documented in protocol/xmpp-message.ts.
 * Undefined for other stanzas, for type='error' (RFC 6120 §8.3.1: never answer an error) and without from/to.
 */
export function parseMessageStanza(stanza: xml.Element): InboundMessage | undefined {
  if (stanza.name !== 'message') return undefined;
  const { from, to, id } = stanza.attrs;
  const given = stanza.attrs.type ?? 'normal';
  if (given === 'error' || from === undefined || to === undefined) return undefined;
  // RFC 6121 §5.2.2: a type the receiver does not understand is treated as 'normal'. Handlers select on
  // the five defined types only, and the stored message's type column holds at most 16 characters.
  const type = MESSAGE_TYPES.has(given) ? given : 'normal';
  const children = stanza.getChildElements();
  const first = children.find((child) => !MESSAGE_FIELDS.has(child.getName()) || !isContent(child)) ?? children[0];
  const body = stanza.getChild('body');
  return {
    from,
    to,
    type,
    id,
    element: first && describe(first),
    xml: stanza.toString(),
    body: body ? body.text() : undefined,
  };
}

function describe(el: xml.Element): InboundElement {
  const attributes: Record<string, string> = {};
  for (const [name, value] of Object.entries(el.attrs)) {
    // Namespace declarations are reported as `namespace`, not as attributes.
    if (value !== undefined && name !== 'xmlns' && !name.startsWith('xmlns:')) attributes[name] = value;
  }
  return { localName: el.getName(), namespace: namespaceOf(el), attributes, text: el.text() };
}

function namespaceOf(el: xml.Element): string {
  const ns = el.getNS();
  return ns === undefined || CONTENT_NAMESPACES.has(ns) ? CLIENT_NS : ns;
}

function isContent(el: xml.Element): boolean {
  return namespaceOf(el) === CLIENT_NS;
}

/**
 * Builds the `<message>` for an OutboundMessage. XML children are parsed into elements (never concatenated);
 * throws when a child is not acceptable XML (see parseXmlPayload) or text holds characters XML forbids.
 */
export function buildMessageStanza(message: OutboundMessage): xml.Element {
  // ltx escapes markup but writes any character as is; one XML 1.0 forbids would break the stream (RFC 6120 §4.9.3.12).
  for (const value of [message.from, message.to, message.type, message.id]) if (value !== undefined) assertXmlText(value);
  const stanza = xml('message', { from: message.from, to: message.to, type: message.type, id: message.id });
  for (const child of message.children) {
    switch (child.kind) {
      case 'text':
        assertXmlText(child.text);
        stanza.append(xml(child.name, {}, child.text));
        break;
      case 'xml':
        stanza.append(parseXmlElement(child.xml));
        break;
      default:
        throw new Error(`unknown child kind ${JSON.stringify(child satisfies never)}`);
    }
  }
  return stanza;
}

/** What a local recipient sees for a message routed in-process: the same shape as one that crossed Prosody. */
export function toInboundMessage(message: OutboundMessage): InboundMessage {
  const parsed = parseMessageStanza(buildMessageStanza(message));
  if (!parsed) throw new Error('an outbound message of type error cannot be routed locally');
  return parsed;
}

export const BOUNCE_CONDITIONS = ['item-not-found', 'service-unavailable', 'resource-constraint'] as const;
export type BounceCondition = (typeof BOUNCE_CONDITIONS)[number];

/** RFC 6120 §8.3.3: the error type each condition is defined with. */
function errorType(condition: BounceCondition): 'cancel' | 'wait' {
  switch (condition) {
    case 'item-not-found':
    case 'service-unavailable':
      return 'cancel';
    case 'resource-constraint':
      return 'wait';
  }
}

/** RFC 6120 §8.3: an error reply, addresses swapped, same id, one defined condition. */
export function buildBounce(original: InboundMessage, condition: BounceCondition): xml.Element {
  return xml(
    'message',
    { from: original.to, to: original.from, id: original.id, type: 'error' },
    xml('error', { type: errorType(condition) }, xml(condition, { xmlns: NS_STANZAS })),
  );
}
