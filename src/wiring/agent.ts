import type { Logger } from 'pino';
import { Accounts } from '../agent/accounts.js';
import type { HandlerRegistry } from '../agent/handlers.js';
import { Messaging } from '../agent/messaging.js';
import { MessageRouter } from '../agent/router.js';
import type { TokenService } from '../agent/tokens.js';
import { UndeliveredMessages } from '../agent/undelivered.js';
import { createHandlerRegistry, createLimits, createXmppConnection, type Limits } from '../cluster/factories.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config/schema.js';
import { isOutage } from '../errors.js';
import type { Hub } from '../hub/hub.js';
import type { Metrics } from '../metrics.js';
import type { LeasedXmppComponent } from '../xmpp/leased-component.js';
import { toInboundMessage } from '../xmpp/stanza.js';
import type { Lifecycle } from './area.js';
import type { TabHooks } from './events.js';
import type { SharedState } from './shared.js';

export interface AgentArea extends Lifecycle {
  accounts: Accounts;
  handlers: HandlerRegistry;
  /** Login throttles and the request rate limiter's store (shared in a cluster). */
  limits: Limits;
  router: MessageRouter;
  messaging: Messaging;
  /** The XMPP server connection, when one is configured (held by one node of a cluster at a time). */
  xmpp: LeasedXmppComponent | undefined;
}

/** The part of the agent a tab's life reaches: made before the events area, whose hub is given `hooks` when it is made. */
export interface AgentTabState {
  handlers: HandlerRegistry;
  /** For createEventsArea: what the hub does with an XMPP message a tab could not take, and with a tab it lets go. */
  hooks: TabHooks;
}

/**
 * The handler registry and the store of undelivered messages need no hub, so they are made first and the
 * hub is built with them; the router, which delivers through the hub, comes after it in createAgentArea.
 */
export function createAgentTabState(o: { config: Config; shared: SharedState; log: Logger }): AgentTabState {
  const { config, log } = o;
  const handlers = createHandlerRegistry({ redis: o.shared.redis, config, log });
  // Logged as the router's, whose part it was (docs/xmpp.md "Delivered means confirmed").
  const undelivered = new UndeliveredMessages({ messages: o.shared.store.messages, quota: config.messageQuotaPerAccount, log: log.child({ module: 'agent:router' }) });
  return {
    handlers,
    hooks: {
      storeUndelivered: (fallback) => undelivered.store(fallback),
      forgetHandlers: (address) => void handlers.forgetTab(address),
      touchHandlers: (addresses) => void handlers.touchTabs(addresses),
    },
  };
}

/** The Agent API's domain: accounts and their throttles, XMPP event handlers, message routing, the XMPP component (docs/agent-api.md, docs/xmpp.md). */
export function createAgentArea(o: { config: Config; shared: SharedState; hub: Hub; handlers: HandlerRegistry; tokens: TokenService; clock: Clock; metrics: Metrics; log: Logger }): AgentArea {
  const { config, hub, handlers, clock, log } = o;
  const { store, redis } = o.shared;
  const limits = createLimits({ redis, clock, config, log });
  const accounts = new Accounts({
    accounts: store.accounts,
    tokens: o.tokens,
    clock,
    // docs/agent-api.md "Throttling": a few attempts per account and window; an address gets more room.
    accountThrottle: limits.accountThrottle,
    addressThrottle: limits.addressThrottle,
    onLimited: (limit) => o.metrics.rateLimited.inc({ limit }),
  });
  const router = new MessageRouter({
    componentDomain: config.xmppComponentDomain,
    accounts: store.accounts,
    handlers,
    delivery: hub,
    // Any node's connection counts (the broker's presence): a handler of a tab on another node is live.
    isConnected: (address) => hub.isConnected(address),
    messages: store.messages,
    clock,
    log: log.child({ module: 'agent:router' }),
    quota: config.messageQuotaPerAccount,
  });
  const xmpp = createXmppConnection({
    config,
    leases: o.shared.leases,
    bus: o.shared.bus,
    nodeId: o.shared.nodeId,
    log,
    onMessage: async (message) => {
      let outcome;
      try {
        outcome = await router.route(message);
      } catch (err) {
        if (!isOutage(err)) throw err;
        // The store (or Redis) cannot be reached: the message can be neither pushed nor stored. The sender is
        // told to try again rather than left to think it arrived (RFC 6120 §8.3.2: type "wait", temporary).
        log.warn({ err, to: message.to }, 'an XMPP message could not be routed during an outage; bounced');
        return xmpp!.bounce(message, 'resource-constraint');
      }
      // RFC 6121 §8.5.2: a message to an account that does not exist is answered service-unavailable.
      if (outcome === 'unknown_recipient') await xmpp!.bounce(message, 'service-unavailable');
      if (outcome === 'quota_full') await xmpp!.bounce(message, 'resource-constraint');
    },
  });
  const messaging = new Messaging({ componentDomain: config.xmppComponentDomain, router, messages: store.messages, toLocal: toInboundMessage, link: xmpp });
  return {
    accounts,
    handlers,
    limits,
    router,
    messaging,
    xmpp,
    // The lease holder connects in the background; the service starts without its XMPP server and keeps reconnecting.
    start: () => xmpp?.start(),
    stop: async () => xmpp?.stop(),
  };
}
