import type { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import xml from '@xmpp/xml';

/** The part of @xmpp/client 0.13 (untyped) this helper uses. */
interface ClientEntity extends EventEmitter {
  status: string;
  jid: { toString(): string; bare(): { toString(): string } } | null;
  start(): Promise<unknown>;
  stop(): Promise<unknown>;
  send(element: xml.Element): Promise<void>;
  iqCaller: { request(element: xml.Element, timeout?: number): Promise<xml.Element> };
  reconnect: { stop(): void };
}
interface ClientModule {
  client(options: { service: string; domain: string; resource?: string; credentials: { username: string; password: string } }): ClientEntity;
}
const { client } = createRequire(import.meta.url)('@xmpp/client') as ClientModule;

const NS_STREAMS = 'http://etherx.jabber.org/streams';
const NS_SASL = 'urn:ietf:params:xml:ns:xmpp-sasl';

/** A logged-in test user on the private Prosody. */
export interface TestXmppClient {
  /** Full JID after resource binding. */
  jid: string;
  bareJid: string;
  /** The SASL mechanism the login used (always PLAIN; asserted by the tests). */
  mechanism: string | undefined;
  /** Every `<message>` received so far, oldest first. */
  messages: xml.Element[];
  /** The first received message (already here or still to come) matching `match`; rejects after `timeoutMs`. */
  nextMessage(match?: (message: xml.Element) => boolean, timeoutMs?: number): Promise<xml.Element>;
  send(stanza: xml.Element): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Logs in over plain TCP on loopback with SASL PLAIN, sends initial presence (so messages to the bare JID are
 * delivered, RFC 6121 §8.5.2.1.1) and collects messages.
 */
export async function startXmppClient(options: { service: string; domain: string; username: string; password: string }): Promise<TestXmppClient> {
  const { service, domain, username, password } = options;
  const entity = client({ service, domain, resource: 'test', credentials: { username, password } });
  entity.reconnect.stop();
  // @xmpp/sasl 0.13 always takes the first of *its* mechanisms the server offers (SCRAM-SHA-1, then PLAIN); the
  // credentials callback is told the choice but cannot change it. SCRAM's PBKDF2 costs ~0.8 s of CPU per login in
  // JS, so hide everything but PLAIN from the offer before the SASL middleware reads it.
  entity.prependListener('element', (el: xml.Element) => {
    const mechanisms = el.is('features', NS_STREAMS) ? el.getChild('mechanisms', NS_SASL) : undefined;
    if (mechanisms) mechanisms.children = mechanisms.getChildElements().filter((m) => m.text() === 'PLAIN');
  });
  let mechanism: string | undefined;
  entity.on('send', (el: xml.Element) => {
    if (el.is('auth', NS_SASL)) mechanism = el.attrs.mechanism;
  });
  entity.on('error', () => {
    /* surfaced through start() or the tests' own timeouts */
  });

  const messages: xml.Element[] = [];
  const waiters = new Set<(message: xml.Element) => boolean>();
  entity.on('stanza', (stanza: xml.Element) => {
    if (stanza.name !== 'message') return;
    messages.push(stanza);
    for (const waiter of waiters) if (waiter(stanza)) waiters.delete(waiter);
  });

  await entity.start();
  await entity.send(xml('presence'));
  // XEP-0199 ping: once answered, the presence before it has been processed.
  await entity.iqCaller.request(xml('iq', { type: 'get', to: domain }, xml('ping', { xmlns: 'urn:xmpp:ping' })));

  const jid = String(entity.jid);
  return {
    jid,
    bareJid: entity.jid ? entity.jid.bare().toString() : jid,
    get mechanism() {
      return mechanism;
    },
    messages,
    nextMessage(match = () => true, timeoutMs = 5_000) {
      const seen = messages.find(match);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const waiter = (message: xml.Element) => {
          if (!match(message)) return false;
          clearTimeout(timer);
          resolve(message);
          return true;
        };
        const timer = setTimeout(() => {
          waiters.delete(waiter);
          reject(new Error(`no matching message within ${timeoutMs} ms (got ${messages.length})`));
        }, timeoutMs);
        waiters.add(waiter);
      });
    },
    send: (stanza) => entity.send(stanza),
    async stop() {
      try {
        await entity.stop();
      } catch {
        /* already disconnected */
      }
    },
  };
}
