import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { InboundMessage, OutboundMessage } from '../protocol/xmpp-message.js';
import { XmppOfflineError, type XmppLink } from '../agent/messaging.js';
import type { Bus, BusMessage, XmppSendAnswer } from '../bus/bus.js';
import { LeaderRunner } from '../lease/leader.js';
import type { Lease } from '../lease/lease.js';
import type { XmppComponent } from './component.js';
import type { BounceCondition } from './stanza.js';

/** The component lease: fail-over within TTL + retry (≤ 7 s) plus the connection set-up, under the 10 s asked of a cluster. */
export const XMPP_LEASE_TTL_MS = 6_000;
export const XMPP_LEASE_RENEW_MS = 2_000;
export const XMPP_LEASE_RETRY_MS = 1_000;
/** How long a node without the connection waits for the holder to answer a relayed send. */
const RELAY_TIMEOUT_MS = 5_000;

export interface LeasedXmppOptions {
  /** This node's component, not started: it connects only while this node holds `lease`. */
  component: XmppComponent;
  /** The cluster-wide lease for the component (e.g. `xmpp-component`, TTL XMPP_LEASE_TTL_MS). */
  lease: Lease;
  bus: Bus;
  /** This node's id: where answers to its relayed sends are addressed. */
  nodeId: string;
  log: Logger;
  /** Tests: shorter intervals. */
  renewEveryMs?: number;
  retryEveryMs?: number;
  relayTimeoutMs?: number;
  onChange?: (holding: boolean) => void;
}

/**
 * One XEP-0114 component connection per cluster (docs/redis.md "XMPP component"). The XMPP server
 * accepts one stream per component domain (Prosody: "Component already connected"), so only the holder
 * of a lease connects; when it loses the lease it disconnects, and when it dies another node takes the
 * lease after its TTL and connects. Inbound stanzas arrive on the holder, whose router delivers them to
 * tabs on any node (through Delivery). Outbound messages from any node travel over the bus to the
 * holder the lease names (`xmpp-send`, to that node only), which answers to the asking node (`xmpp-sent`);
 * a node that no longer holds the lease answers `offline` at once; with no holder, or no answer within the
 * relay timeout (the holder died), a send fails as it does on one node whose component is down
 * (XmppOfflineError → 503).
 * On one node (a memory lease) the node always holds the lease and nothing travels over the bus.
 */
export class LeasedXmppComponent implements XmppLink {
  readonly #o: LeasedXmppOptions;
  readonly #runner: LeaderRunner;
  readonly #log: Logger;
  readonly #pending = new Map<string, (outcome: XmppSendAnswer['outcome']) => void>();
  #unsubscribe: (() => void) | undefined;

  constructor(options: LeasedXmppOptions) {
    this.#o = options;
    this.#log = options.log.child({ module: 'xmpp:lease' });
    this.#runner = new LeaderRunner({
      lease: options.lease,
      log: options.log,
      renewEveryMs: options.renewEveryMs ?? XMPP_LEASE_RENEW_MS,
      retryEveryMs: options.retryEveryMs ?? XMPP_LEASE_RETRY_MS,
      lead: () => {
        // Not awaited: the component connects (and reconnects) in the background while the lease is held.
        void options.component.start();
        return () => options.component.stop();
      },
      ...(options.onChange ? { onChange: options.onChange } : {}),
    });
  }

  /** True while this node's stream is authenticated (only ever on the holder). */
  get online(): boolean {
    return this.#o.component.online;
  }

  /** True while this node holds the lease (its component is connected or connecting). */
  get holding(): boolean {
    return this.#runner.leading;
  }

  /** This node's part for health reports: `online`/`connecting` on the holder, `standby` elsewhere. */
  get state(): 'online' | 'connecting' | 'standby' {
    return !this.holding ? 'standby' : this.online ? 'online' : 'connecting';
  }

  start(): void {
    this.#unsubscribe = this.#o.bus.subscribe((message) => this.#onBus(message));
    this.#runner.start();
  }

  /** Disconnects (if holding), releases the lease, stops answering relays; pending relayed sends fail as offline. */
  async stop(): Promise<void> {
    await this.#runner.stop();
    this.#unsubscribe?.();
    for (const settle of this.#pending.values()) settle('offline');
    this.#pending.clear();
  }

  async send(message: OutboundMessage): Promise<void> {
    if (this.holding) return this.#o.component.send(message);
    const hold = await this.#o.lease.current().catch(() => undefined);
    if (!hold) throw new XmppOfflineError('No node holds the XMPP server connection');
    const outcome = await this.#relay(hold.holder, message);
    if (outcome === 'offline') throw new XmppOfflineError();
    if (outcome === 'failed') throw new Error('the node holding the XMPP server connection could not send the message');
  }

  /** Answers a received message with a stanza error; received messages only arrive on the holder. */
  bounce(original: InboundMessage, condition: BounceCondition): Promise<void> {
    return this.#o.component.bounce(original, condition);
  }

  async #relay(holder: string, message: OutboundMessage): Promise<XmppSendAnswer['outcome']> {
    const requestId = randomUUID();
    const answered = new Promise<XmppSendAnswer['outcome']>((resolve) => {
      const timer = setTimeout(() => settle('offline'), this.#o.relayTimeoutMs ?? RELAY_TIMEOUT_MS);
      const settle = (outcome: XmppSendAnswer['outcome']) => {
        clearTimeout(timer);
        this.#pending.delete(requestId);
        resolve(outcome);
      };
      this.#pending.set(requestId, settle);
    });
    try {
      await this.#o.bus.publish(holder, { kind: 'xmpp-send', requestId, replyTo: this.#o.nodeId, message });
    } catch (err) {
      this.#pending.get(requestId)?.('offline');
      this.#log.warn({ err }, 'relaying an XMPP message over the bus failed');
    }
    return answered;
  }

  #onBus(message: BusMessage): void {
    switch (message.kind) {
      case 'xmpp-send':
        // Addressed to this node as the lease's holder; one that lost the lease since says so at once.
        if (this.holding) void this.#sendFor(message.requestId, message.replyTo, message.message);
        else void this.#answer(message.requestId, message.replyTo, 'offline');
        return;
      case 'xmpp-sent':
        if (message.to === this.#o.nodeId) this.#pending.get(message.requestId)?.(message.outcome);
        return;
    }
  }

  /** Sends a message relayed by another node and tells it how that went. */
  async #sendFor(requestId: string, replyTo: string, message: OutboundMessage): Promise<void> {
    let outcome: XmppSendAnswer['outcome'] = 'sent';
    try {
      await this.#o.component.send(message);
    } catch (err) {
      outcome = err instanceof XmppOfflineError ? 'offline' : 'failed';
      if (outcome === 'failed') this.#log.warn({ err, to: message.to }, 'sending a relayed XMPP message failed');
    }
    await this.#answer(requestId, replyTo, outcome);
  }

  async #answer(requestId: string, replyTo: string, outcome: XmppSendAnswer['outcome']): Promise<void> {
    await this.#o.bus.publish(replyTo, { kind: 'xmpp-sent', requestId, to: replyTo, outcome }).catch((err: unknown) => {
      this.#log.warn({ err }, 'answering a relayed XMPP send failed');
    });
  }
}
