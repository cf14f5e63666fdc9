import type { Logger } from 'pino';
import { Accounts } from '../agent/accounts.js';
import { EventHandlers } from '../agent/handlers.js';
import { Messaging } from '../agent/messaging.js';
import { MessageRouter } from '../agent/router.js';
import { FailureThrottle } from '../agent/throttle.js';
import type { TokenService } from '../agent/tokens.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config/schema.js';
import type { Hub } from '../hub/hub.js';
import type { Metrics } from '../metrics.js';
import type { Store } from '../store/stores.js';
import { XmppComponent } from '../xmpp/component.js';
import { toInboundMessage } from '../xmpp/stanza.js';
import type { Lifecycle } from './area.js';
import type { TabHooks } from './events.js';

export interface AgentArea extends Lifecycle {
  accounts: Accounts;
  handlers: EventHandlers;
  router: MessageRouter;
  messaging: Messaging;
  /** The XMPP server connection, when one is configured. */
  xmpp: XmppComponent | undefined;
}

/** The Agent API's domain: accounts and their throttles, XMPP event handlers, message routing, the XMPP component (docs/agent-api.md, docs/xmpp.md). */
export function createAgentArea(o: { config: Config; store: Store; hub: Hub; tokens: TokenService; clock: Clock; metrics: Metrics; log: Logger; hooks: TabHooks }): AgentArea {
  const { config, store, hub, clock, log } = o;
  const accounts = new Accounts({
    accounts: store.accounts,
    tokens: o.tokens,
    clock,
    // docs/agent-api.md "Throttling": a few attempts per account and window; an address gets more room.
    accountThrottle: new FailureThrottle(clock, config.loginAttemptsPerAccount, config.loginThrottleWindowSeconds * 1000),
    addressThrottle: new FailureThrottle(clock, config.loginAttemptsPerAddress, config.loginThrottleWindowSeconds * 1000),
    onLimited: (limit) => o.metrics.rateLimited.inc({ limit }),
  });
  const handlers = new EventHandlers(config.handlersPerTab);
  const router = new MessageRouter({
    componentDomain: config.xmppComponentDomain,
    accounts: store.accounts,
    handlers,
    delivery: hub,
    isConnected: (address) => hub.isConnectedHere(address),
    messages: store.messages,
    clock,
    log: log.child({ module: 'agent:router' }),
    quota: config.messageQuotaPerAccount,
  });
  const xmpp: XmppComponent | undefined =
    config.xmppService === undefined
      ? undefined
      : new XmppComponent({
          service: config.xmppService,
          domain: config.xmppComponentDomain,
          password: config.xmppComponentSecret!,
          log,
          onMessage: async (message) => {
            const outcome = await router.route(message);
            // RFC 6121 §8.5.2: a message to an account that does not exist is answered service-unavailable.
            if (outcome === 'unknown_recipient') await xmpp!.bounce(message, 'service-unavailable');
            if (outcome === 'quota_full') await xmpp!.bounce(message, 'resource-constraint');
          },
        });
  o.hooks.storeUndelivered = (fallback) => router.storeUndelivered(fallback);
  o.hooks.forgetHandlers = (address) => handlers.forgetTab(address);
  const messaging = new Messaging({ componentDomain: config.xmppComponentDomain, router, messages: store.messages, toLocal: toInboundMessage, link: xmpp });
  return {
    accounts,
    handlers,
    router,
    messaging,
    xmpp,
    // Not awaited: the service starts without its XMPP server and keeps reconnecting in the background.
    start: () => void xmpp?.start(),
    stop: async () => xmpp?.stop(),
  };
}
