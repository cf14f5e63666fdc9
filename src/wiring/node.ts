import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { DestinationStream } from 'pino';
import type { TokenService } from '../agent/tokens.js';
import type { Broker } from '../broker/broker.js';
import type { Bus } from '../bus/bus.js';
import type { Resolver } from '../callbacks/address-policy.js';
import type { CallbackDeliverer } from '../callbacks/deliverer.js';
import { systemClock, type Clock } from '../clock.js';
import type { Config } from '../config/schema.js';
import type { HandlerRegistry } from '../handlers/handlers.js';
import type { Drain } from '../health/drain.js';
import type { Hub } from '../hub/hub.js';
import { createMetrics, type Metrics } from '../metrics.js';
import type { QuickLogin } from '../quicklogin/quicklogin.js';
import type { ServerSigner } from '../quicklogin/server-signer.js';
import type { RateLimitStore } from '../rate-limit/rate-limit-store.js';
import type { RedisConnection } from '../redis/connection.js';
import type { Purge } from '../retention/purge.js';
import type { Store } from '../store/stores.js';
import type { LeasedXmppComponent } from '../xmpp/leased-component.js';
import { createAgentArea, createAgentTabHooks } from './agent.js';
import type { Area, Lifecycle, RouteContext } from './area.js';
import { createEventsArea } from './events.js';
import { createHealthArea } from './health.js';
import { createIdentityArea } from './identity.js';
import { createKeysArea } from './keys.js';
import { createOidcArea, type OidcArea } from './oidc.js';
import { createQuickLoginArea } from './quicklogin.js';
import { createRetentionArea } from './retention.js';
import { openShared } from './shared.js';

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

/**
 * What tests and benchmarks reach of a running node (`app.tabwire`): to move its clock, deliver to a tab,
 * run the purge now, watch the XMPP link. The service itself never reads it: each area's routes are given
 * what they use when they are registered.
 */
export interface NodeHandle {
  config: Config;
  clock: Clock;
  store: Store;
  /** The cluster's Redis connection (undefined on one node). */
  redis: RedisConnection | undefined;
  metrics: Metrics;
  hub: Hub;
  handlers: HandlerRegistry;
  quickLogin: QuickLogin;
  deliverer: CallbackDeliverer;
  signer: ServerSigner;
  tokens: TokenService;
  purge: Purge;
  /** The XMPP server connection, when one is configured. */
  xmpp: LeasedXmppComponent | undefined;
  /** The OpenID Provider (its provider when on, and a key reload for rotation tests). */
  oidc: Pick<OidcArea, 'provider' | 'reloadKeys'>;
}

/** A node's areas, made and started; buildApp adds the HTTP server around them. */
export interface AssembledNode {
  handle: NodeHandle;
  metrics: Metrics;
  /** The request rate limits' store: undefined for this node's memory (wiring/shared.ts chooses). */
  rateLimitStore: RateLimitStore | undefined;
  /** Each area registers its own routes, in a fixed order (the OpenAPI document lists them so). */
  registerRoutes(http: RouteContext): Promise<void>;
  /**
   * First step of shutdown: closes every tab connection now (held long-polls are answered, WebSockets
   * closed with 1001), so in-flight HTTP requests are all that shutdown waits for. Idempotent.
   */
  closeConnections(): void;
  /** Stops what was started and closes what was opened (not what the caller supplied). Idempotent. */
  close(): Promise<void>;
}

/**
 * Builds every area of a node from the configuration (src/wiring/: each makes its objects and says how
 * its background work starts and stops) in dependency order, and starts them. Nothing is filled in
 * afterwards: the hub is given, when it is made, what the agent does with a message a tab could not take
 * and with a tab it lets go; the agent's router, which delivers through the hub, is made after it.
 */
export async function assembleNode(config: Config, deps: Deps, log: Logger): Promise<AssembledNode> {
  const clock = deps.clock ?? systemClock;
  const metrics = createMetrics();
  // Changes when the service restarts, or with each deployment generation when the operator sets it.
  const instanceId = config.instanceId ?? randomBytes(12).toString('base64url');
  const shared = await openShared(config, deps, log);
  const { store } = shared;
  const keys = await createKeysArea(config, { store, clock, log });
  const hooks = createAgentTabHooks(config, { store, handlers: shared.handlers, log });
  const events = createEventsArea(config, instanceId, { shared, clock, metrics, log, hooks });
  const { hub, registry } = events;
  const identity = await createIdentityArea(config, { store, clock, signer: keys.signer, metrics, guard: keys.guard });
  const agent = createAgentArea(config, { shared, hub, registry, tokens: keys.tokens, guard: keys.guard, clock, metrics, log });
  const quickLogin = createQuickLoginArea(config, {
    store,
    hub,
    registry,
    signer: keys.signer,
    codeKeys: keys.codeKeys,
    accounts: agent.accounts,
    devIdentity: identity.devIdentity,
    clock,
    metrics,
    log,
    leases: shared.leases,
    ...(deps.resolve ? { resolve: deps.resolve } : {}),
  });
  const oidc = await createOidcArea(config, { store, quickLogin: quickLogin.quickLogin, clock, log });
  const retention = createRetentionArea(config, { store, leases: shared.leases, clock, metrics, log });
  const health = createHealthArea({ hub, metrics, store, redis: shared.redis, redisCluster: shared.redisCluster, xmpp: agent.xmpp, drain: deps.drain });

  const areas: Lifecycle[] = [shared, keys, events, identity, agent, quickLogin, oidc, retention, health];
  const served: Area[] = [health, events, quickLogin, agent, identity, oidc];
  for (const area of areas) area.start();
  let stopped: Promise<void> | undefined;

  return {
    handle: {
      config,
      clock,
      store,
      redis: shared.redis,
      metrics,
      hub,
      handlers: shared.handlers,
      quickLogin: quickLogin.quickLogin,
      deliverer: quickLogin.deliverer,
      signer: keys.signer,
      tokens: keys.tokens,
      purge: retention.purge,
      xmpp: agent.xmpp,
      oidc,
    },
    metrics,
    rateLimitStore: shared.limits.rateLimitStore,
    async registerRoutes(http) {
      for (const area of served) await area.registerRoutes(http);
    },
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
