import { randomBytes } from 'node:crypto';
import type { DestinationStream, Logger } from 'pino';
import type { Drain } from './health/drain.js';
import type { Accounts } from './agent/accounts.js';
import type { HandlerRegistry } from './agent/handlers.js';
import type { Limits } from './cluster/factories.js';
import type { RedisConnection } from './redis/connection.js';
import type { Messaging } from './agent/messaging.js';
import type { MessageRouter } from './agent/router.js';
import type { TokenService } from './agent/tokens.js';
import type { Broker } from './broker/broker.js';
import type { Bus } from './bus/bus.js';
import type { Resolver } from './callbacks/address-policy.js';
import type { CallbackDeliverer } from './callbacks/deliverer.js';
import type { BackendRegistrations } from './callbacks/registrations.js';
import { systemClock, type Clock } from './clock.js';
import type { Config } from './config/schema.js';
import type { Hub } from './hub/hub.js';
import type { TabRegistry } from './hub/registry.js';
import type { ApplyOptions } from './identity/apply.js';
import type { DevIdentity } from './identity/dev-identity.js';
import type { IdentityQuota } from './identity/quota.js';
import { createMetrics, type Metrics } from './metrics.js';
import type { QuickLogin } from './quicklogin/quicklogin.js';
import type { ServerSigner } from './quicklogin/server-signer.js';
import type { Purge } from './retention/purge.js';
import type { Store } from './store/stores.js';
import { createAgentArea, createAgentTabState } from './wiring/agent.js';
import type { Lifecycle } from './wiring/area.js';
import { createEventsArea } from './wiring/events.js';
import { createIdentityArea } from './wiring/identity.js';
import { createKeysArea } from './wiring/keys.js';
import { createQuickLoginArea } from './wiring/quicklogin.js';
import { createRetentionArea } from './wiring/retention.js';
import { openShared } from './wiring/shared.js';
import type { LeasedXmppComponent } from './xmpp/leased-component.js';

/** Collaborators a caller may supply (tests: a moved clock, a shared store); the rest are made here. */
export interface Deps {
  store?: Store;
  bus?: Bus;
  /** The shared broker of a cluster (default: this process's memory). */
  broker?: Broker;
  clock?: Clock;
  /** DNS for callback hosts; tests give one that answers without the network. */
  resolve?: Resolver;
  /** Where the log goes (default: stdout); tests capture it. */
  logStream?: DestinationStream;
  /** Set by the process when it is asked to stop (main.ts); /readyz then answers 503. */
  drain?: Drain;
}

/** The domain services of one node, reachable from HTTP plugins, tests and the CLI. */
export interface Services {
  config: Config;
  clock: Clock;
  store: Store;
  bus: Bus;
  /** The cluster's Redis connection (undefined on one node). */
  redis: RedisConnection | undefined;
  hub: Hub;
  registry: TabRegistry;
  quickLogin: QuickLogin;
  signer: ServerSigner;
  tokens: TokenService;
  accounts: Accounts;
  apply: ApplyOptions;
  /** Identities per agent account (config identitiesPerAccount). */
  identityQuota: IdentityQuota;
  /** The periodic retention purge; its tasks say what goes and when (docs/configuration.md "Retention"). */
  purge: Purge;
  devIdentity: DevIdentity | undefined;
  registrations: BackendRegistrations;
  deliverer: CallbackDeliverer;
  metrics: Metrics;
  handlers: HandlerRegistry;
  /** Login throttles and the request rate limiter's store (shared through Redis in a cluster). */
  limits: Limits;
  router: MessageRouter;
  messaging: Messaging;
  /** The XMPP server connection, when one is configured. */
  xmpp: LeasedXmppComponent | undefined;
  /**
   * First step of shutdown: closes every tab connection now (held long-polls are answered, WebSockets
   * closed with 1001), so in-flight HTTP requests are all that shutdown waits for. Idempotent.
   */
  closeConnections(): void;
  /** Stops what createServices started and closes what it opened (not what the caller supplied). */
  close(): Promise<void>;
}

/**
 * Builds every domain service from the configuration; no HTTP here. Each area (src/wiring/) makes its
 * services and says how its background work starts and stops; this composes them in dependency order.
 */
export async function createServices(config: Config, deps: Deps, log: Logger): Promise<Services> {
  const clock = deps.clock ?? systemClock;
  const metrics = createMetrics();
  // Changes when the service restarts, or with each deployment generation when the operator sets it.
  const instanceId = config.instanceId ?? randomBytes(12).toString('base64url');
  const shared = await openShared(config, deps, log);
  const { store, bus } = shared;
  const keys = await createKeysArea({ config, store, clock, log });
  // In dependency order: the hub hands the agent what a tab could not take and the tabs it lets go, and the
  // agent's router delivers through the hub; so the agent's tab state comes first, the rest of it after the hub.
  const agentTabs = createAgentTabState({ config, shared, log });
  const events = createEventsArea({ config, shared, clock, metrics, log, instanceId, hooks: agentTabs.hooks });
  const { hub, registry } = events;
  const agent = createAgentArea({ config, shared, hub, handlers: agentTabs.handlers, tokens: keys.tokens, clock, metrics, log });
  const identity = await createIdentityArea({ config, store, clock, signer: keys.signer, metrics });
  const quickLogin = createQuickLoginArea({ config, store, hub, registry, signer: keys.signer, accounts: agent.accounts, clock, metrics, log, leases: shared.leases, ...(deps.resolve ? { resolve: deps.resolve } : {}) });
  const retention = createRetentionArea({ config, store, leases: shared.leases, clock, metrics, log });

  const areas: Lifecycle[] = [shared, keys, events, agent, identity, quickLogin, retention];
  for (const area of areas) area.start();
  let stopped: Promise<void> | undefined;

  return {
    config,
    clock,
    store,
    bus,
    redis: shared.redis,
    hub,
    registry,
    quickLogin: quickLogin.quickLogin,
    signer: keys.signer,
    tokens: keys.tokens,
    accounts: agent.accounts,
    apply: identity.apply,
    identityQuota: identity.identityQuota,
    purge: retention.purge,
    devIdentity: identity.devIdentity,
    registrations: quickLogin.registrations,
    deliverer: quickLogin.deliverer,
    metrics,
    handlers: agent.handlers,
    limits: agent.limits,
    router: agent.router,
    messaging: agent.messaging,
    xmpp: agent.xmpp,
    closeConnections: () => events.closeConnections(),
    close() {
      // Reverse order: nothing is stopped while an area started after it still uses it.
      stopped ??= (async () => {
        for (const area of [...areas].reverse()) await area.stop();
      })();
      return stopped;
    },
  };
}
