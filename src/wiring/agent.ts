import type { Logger } from 'pino';
import { Accounts } from '../agent/accounts.js';
import { Messaging } from '../agent/messaging.js';
import { MessageRouter } from '../agent/router.js';
import type { TokenService } from '../agent/tokens.js';
import { UndeliveredMessages } from '../agent/undelivered.js';
import type { Bus } from '../bus/bus.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config/schema.js';
import { isOutage } from '../errors.js';
import type { HandlerRegistry } from '../handlers/handlers.js';
import { agentAccountRoutes, type AgentAccountRoutesOptions } from '../http/agent-account-routes.js';
import { agentXmppRoutes } from '../http/agent-xmpp-routes.js';
import type { Hub } from '../hub/hub.js';
import type { TabRegistry } from '../hub/registry.js';
import type { LeaseFactory } from '../lease/lease.js';
import type { Metrics } from '../metrics.js';
import type { InboundMessage } from '../protocol/xmpp-message.js';
import type { Store } from '../store/stores.js';
import { XmppComponent } from '../xmpp/component.js';
import { LeasedXmppComponent, XMPP_LEASE_TTL_MS } from '../xmpp/leased-component.js';
import { toInboundMessage } from '../xmpp/stanza.js';
import { parseXmlPayload } from '../xmpp/xml-payload.js';
import type { Area } from './area.js';
import type { TabHooks } from './events.js';
import { LEASES, type SharedState } from './shared.js';

export interface AgentArea extends Area {
  accounts: Accounts;
  router: MessageRouter;
  messaging: Messaging;
  /** The XMPP server connection, when one is configured (held by one node of a cluster at a time). */
  xmpp: LeasedXmppComponent | undefined;
}

/** What the hub does for the agent (createEventsArea's `hooks`): made before the hub, with what needs no hub. */
export function createAgentTabHooks(config: Config, { store, handlers, log }: { store: Store; handlers: HandlerRegistry; log: Logger }): TabHooks {
  // Logged as the router's, whose part it was (docs/xmpp.md "Delivered means confirmed").
  const undelivered = new UndeliveredMessages({ messages: store.messages, log: log.child({ module: 'agent:router' }) }, config.messageQuotaPerAccount);
  return {
    storeUndelivered: (fallback) => undelivered.store(fallback),
    forgetHandlers: (address) => void handlers.forgetTab(address),
    touchHandlers: (addresses) => void handlers.touchTabs(addresses),
  };
}

export interface AgentAreaDeps {
  shared: SharedState;
  hub: Hub;
  registry: TabRegistry;
  tokens: TokenService;
  /** The Agent API's bearer check (wiring/keys.ts). */
  guard: AgentAccountRoutesOptions['guard'];
  clock: Clock;
  metrics: Metrics;
  log: Logger;
}

/**
 * The Agent API's domain: accounts and their throttles, XMPP event handlers, message routing, the XMPP
 * component (docs/agent-api.md, docs/xmpp.md); the /Agent/Account and /Agent/Xmpp routes.
 */
export function createAgentArea(config: Config, { shared, hub, registry, tokens, guard, clock, metrics, log }: AgentAreaDeps): AgentArea {
  const { store, handlers, limits } = shared;
  const accounts = new Accounts({
    accounts: store.accounts,
    tokens,
    clock,
    // docs/agent-api.md "Throttling": a few attempts per account and window; an address gets more room.
    accountThrottle: limits.accountThrottle,
    addressThrottle: limits.addressThrottle,
    onLimited: (limit) => metrics.rateLimited.inc({ limit }),
  });
  const router = new MessageRouter(
    {
      accounts: store.accounts,
      handlers,
      delivery: hub,
      // Any node's connection counts (the broker's presence): a handler of a tab on another node is live.
      isConnected: (address) => hub.isConnected(address),
      messages: store.messages,
      clock,
      log: log.child({ module: 'agent:router' }),
    },
    { componentDomain: config.xmppComponentDomain, quota: config.messageQuotaPerAccount },
  );
  const xmpp = createXmppConnection(config, {
    leases: shared.leases,
    bus: shared.bus,
    nodeId: shared.nodeId,
    log,
    // An incoming message is answered on the connection it came in on: a bounce when it can be neither delivered nor stored.
    onMessage: async (message, bounce) => {
      let outcome;
      try {
        outcome = await router.route(message);
      } catch (err) {
        if (!isOutage(err)) throw err;
        // The store (or Redis) cannot be reached: the message can be neither pushed nor stored. The sender is
        // told to try again rather than left to think it arrived (RFC 6120 §8.3.2: type "wait", temporary).
        log.warn({ err, to: message.to }, 'an XMPP message could not be routed during an outage; bounced');
        return bounce(message, 'resource-constraint');
      }
      // RFC 6121 §8.5.2: a message to an account that does not exist is answered service-unavailable.
      if (outcome === 'unknown_recipient') await bounce(message, 'service-unavailable');
      if (outcome === 'quota_full') await bounce(message, 'resource-constraint');
    },
  });
  const messaging = new Messaging({ router, messages: store.messages, toLocal: toInboundMessage, link: xmpp }, config.xmppComponentDomain);
  return {
    accounts,
    router,
    messaging,
    xmpp,
    async registerRoutes({ app }) {
      await app.register(agentAccountRoutes, { accounts, tokens, apiKeys: store.apiKeys, openRegistration: config.openRegistration, guard });
      await app.register(agentXmppRoutes, { handlers, messaging, registry, parseXml: parseXmlPayload, guard });
    },
    // The lease holder connects in the background; the service starts without its XMPP server and keeps reconnecting.
    start: () => xmpp?.start(),
    stop: async () => xmpp?.stop(),
  };
}

/** Answers a message with a stanza error (RFC 6120 §8.3). */
type Bounce = XmppComponent['bounce'];

/**
 * The XMPP server connection of the cluster: this node connects only while it holds the
 * `xmpp-component` lease; sends from any node reach the holder over the bus. `start()` it (not
 * awaited by anything), `stop()` at shutdown; it is the Messaging link. `onMessage` is given the
 * connection's bounce for the message it handles.
 */
function createXmppConnection(
  config: Config,
  { leases, bus, nodeId, log, onMessage }: { leases: LeaseFactory; bus: Bus; nodeId: string; log: Logger; onMessage: (message: InboundMessage, bounce: Bounce) => Promise<void> },
): LeasedXmppComponent | undefined {
  if (config.xmppService === undefined) return undefined;
  const component: XmppComponent = new XmppComponent({
    service: config.xmppService,
    domain: config.xmppComponentDomain,
    password: config.xmppComponentSecret!,
    log,
    // Called only once the component is connected, so `component` is made by then.
    onMessage: (message) => onMessage(message, (original, condition) => component.bounce(original, condition)),
  });
  return new LeasedXmppComponent({ component, lease: leases(LEASES.xmppComponent, XMPP_LEASE_TTL_MS), bus, nodeId, log });
}
