import { component, type Component } from '@xmpp/component';
import type xml from '@xmpp/xml';
import type { Logger } from 'pino';
import type { InboundMessage, OutboundMessage } from '../protocol/xmpp-message.js';
import { XmppOfflineError } from '../agent/messaging.js';
import { buildBounce, buildMessageStanza, parseMessageStanza, type BounceCondition } from './stanza.js';

export interface XmppComponentOptions {
  /** The server's component listener, `xmpp://host:port` (XEP-0114; Prosody's default port is 5347). */
  service: string;
  /** The component's domain, e.g. `agents.example.org`; agent accounts are `user@domain`. */
  domain: string;
  /** The shared secret (Prosody: `component_secret`). */
  password: string;
  log: Logger;
  /** Called for every received message stanza that is not an error, one at a time in stream order. */
  onMessage: (message: InboundMessage) => Promise<void>;
}

/** First retry after a lost or failed connection; doubles per failure up to MAX_BACKOFF_MS. */
const MIN_BACKOFF_MS = 200;
const MAX_BACKOFF_MS = 5_000;
/** A connection attempt (TCP, stream open, handshake) that takes longer than this is abandoned and retried. */
const ATTEMPT_TIMEOUT_MS = 10_000;
/** One step of an attempt (the library's own timeout for the stream open and the handshake answer), within the attempt's. */
const STEP_TIMEOUT_MS = 5_000;

/**
 * An XEP-0114 external component: keeps one stream to the XMPP server, reconnecting forever with backoff,
 * hands incoming messages to `onMessage` and sends messages and stanza errors out.
 */
export class XmppComponent {
  readonly #options: XmppComponentOptions;
  readonly #log: Logger;
  #entity: Component | undefined;
  #stopped = true;
  #loop: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  #inbox: Promise<void> = Promise.resolve();

  constructor(options: XmppComponentOptions) {
    this.#options = options;
    this.#log = options.log.child({ module: 'xmpp:component' });
  }

  /** True while the stream is authenticated and stanzas can be sent. */
  get online(): boolean {
    return this.#entity?.status === 'online';
  }

  /**
   * Connects; resolves once online the first time (or when stop() comes first), never rejects. Failures are
   * retried in the background (backoff 200 ms doubling to 5 s) until stop(), so a server restart is survived.
   * Do not await it where the service must start without its XMPP server.
   */
  start(): Promise<void> {
    if (!this.#stopped) throw new Error('XmppComponent already started');
    this.#stopped = false;
    return new Promise((resolve) => {
      this.#loop = this.#run(resolve).finally(resolve);
    });
  }

  /** Closes the stream (best effort) and stops reconnecting; resolves when nothing is left running. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#wake?.();
    const entity = this.#entity;
    if (entity) await closeQuietly(entity);
    await this.#loop;
    await this.#inbox;
  }

  /** Sends a message; rejects with XmppOfflineError when offline (the caller decides whether to store or fail), or when the payload is not valid XML. */
  async send(message: OutboundMessage): Promise<void> {
    await this.#sendStanza(buildMessageStanza(message));
  }

  /** Answers a received message with a stanza error (RFC 6120 §8.3); error stanzas are never answered. */
  async bounce(original: InboundMessage, condition: BounceCondition): Promise<void> {
    if (original.type === 'error') return; // RFC 6120 §8.3.1
    await this.#sendStanza(buildBounce(original, condition));
  }

  async #sendStanza(stanza: xml.Element): Promise<void> {
    const entity = this.#entity;
    if (!entity || entity.status !== 'online') throw new XmppOfflineError();
    await entity.send(stanza);
  }

  async #run(firstOnline: () => void): Promise<void> {
    let delay = MIN_BACKOFF_MS;
    while (!this.#stopped) {
      const entity = this.#create();
      try {
        const closed = new Promise<void>((resolve) => entity.once('disconnect', () => resolve()));
        await withTimeout(entity.start(), ATTEMPT_TIMEOUT_MS);
        if (this.#stopped) {
          await closeQuietly(entity); // stop() came while the handshake was under way
          break;
        }
        this.#log.info({ domain: this.#options.domain }, 'XMPP component online');
        firstOnline();
        delay = MIN_BACKOFF_MS;
        await closed;
        if (!this.#stopped) this.#log.warn('XMPP component stream lost; reconnecting');
      } catch (err) {
        this.#log.warn({ error: describeError(err), retryInMs: delay }, 'XMPP component connection failed');
        await closeQuietly(entity);
      }
      if (this.#stopped) break;
      await this.#sleep(delay);
      delay = Math.min(delay * 2, MAX_BACKOFF_MS);
    }
  }

  /** A fresh entity per attempt: no parser or socket state carries over from a failed stream. */
  #create(): Component {
    const { service, domain, password } = this.#options;
    const entity = component({ service, domain, password });
    entity.reconnect.stop(); // the built-in reconnect retries every 1 s without backoff; #run does it instead
    // Each step of the handshake (stream open, handshake answer, close) waits 2 s by default: on a loaded host
    // that failed good attempts and, closing an entity mid-step, left its pending steps to reject unhandled.
    entity.timeout = STEP_TIMEOUT_MS;
    entity.on('error', (err: unknown) => this.#log.debug({ error: describeError(err) }, 'XMPP component error'));
    entity.on('stanza', (stanza: xml.Element) => this.#receive(stanza));
    this.#entity = entity;
    return entity;
  }

  #receive(stanza: xml.Element): void {
    const message = parseMessageStanza(stanza);
    if (!message) return; // IQs are answered by @xmpp/iq's callee; presence is not routed
    // RFC 6120 §10.1: in-order processing; the router sees messages one at a time in stream order.
    this.#inbox = this.#inbox
      .then(() => this.#options.onMessage(message))
      .catch((err: unknown) => this.#log.error({ err, from: message.from, to: message.to }, 'routing an XMPP message failed'));
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.#wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}

async function closeQuietly(entity: Component): Promise<void> {
  entity.removeAllListeners('stanza');
  try {
    await entity.stop();
  } catch {
    /* already gone */
  }
}

/** xmpp.js errors carry the whole stanza tree (with parent links); log the message only. */
function describeError(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
