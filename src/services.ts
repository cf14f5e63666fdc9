import { randomBytes } from 'node:crypto';
import type { DestinationStream, Logger } from 'pino';
import { Accounts } from './agent/accounts.js';
import { EventHandlers } from './agent/handlers.js';
import { Messaging } from './agent/messaging.js';
import { MessageRouter } from './agent/router.js';
import { FailureThrottle } from './agent/throttle.js';
import { TokenService } from './agent/tokens.js';
import { readFileSync } from 'node:fs';
import type { Bus } from './bus/bus.js';
import { systemResolver, type Resolver } from './callbacks/address-policy.js';
import { backendMode } from './callbacks/backend-mode.js';
import { CallbackDeliverer } from './callbacks/deliverer.js';
import { BackendRegistrations } from './callbacks/registrations.js';
import { createMetrics, type Metrics } from './metrics.js';
import { MemoryBus } from './bus/memory-bus.js';
import { systemClock, type Clock } from './clock.js';
import type { Config } from './config/schema.js';
import type { DeliveryFallback } from './bus/bus.js';
import type { TabAddress } from './hub/address.js';
import { EventTypes } from './protocol/events.js';
import { Hub } from './hub/hub.js';
import { refreshTabBindings, tabBindingPurgeTask, tabBindingRefreshMs } from './hub/binding-refresh.js';
import { TabRegistry } from './hub/registry.js';
import type { ApplyOptions } from './identity/apply.js';
import { ensureDevIdentity, type DevIdentity } from './identity/dev-identity.js';
import { IdentityQuota, LIVE_STATES } from './identity/quota.js';
import { Purge } from './retention/purge.js';
import { retentionWindows, storeRetentionTasks } from './retention/tasks.js';
import { QuickLogin } from './quicklogin/quicklogin.js';
import { loadServerSigner, type ServerSigner } from './quicklogin/server-signer.js';
import { openStore } from './store/open.js';
import { XmppComponent } from './xmpp/component.js';
import { toInboundMessage } from './xmpp/stanza.js';
import type { Store } from './store/stores.js';

/** Collaborators a caller may supply (tests: a moved clock, a shared store); the rest are made here. */
export interface Deps {
  store?: Store;
  bus?: Bus;
  clock?: Clock;
  /** DNS for callback hosts; tests give one that answers without the network. */
  resolve?: Resolver;
  /** Where the log goes (default: stdout); tests capture it. */
  logStream?: DestinationStream;
}

/** The domain services of one node, reachable from HTTP plugins, tests and the CLI. */
export interface Services {
  config: Config;
  clock: Clock;
  store: Store;
  bus: Bus;
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
  handlers: EventHandlers;
  router: MessageRouter;
  messaging: Messaging;
  /** The XMPP server connection, when one is configured. */
  xmpp: XmppComponent | undefined;
  /**
   * First step of shutdown: closes every tab connection now (held long-polls are answered, WebSockets
   * closed with 1001), so in-flight HTTP requests are all that shutdown waits for. Idempotent.
   */
  closeConnections(): void;
  /** Stops what createServices started and closes what it opened (not what the caller supplied). */
  close(): Promise<void>;
}

const HUB_SWEEP_MS = 5_000;
const LONG_POLL_GAP_MS = 10_000;
/** A cookie-less QR request that beats its tab's Register waits this long for it (the reference script asks after 500 ms). */
const TAB_REGISTRATION_WAIT_MS = 3_000;
const TOKEN_KEY_RELOAD_MS = 60_000;

/** Builds every domain service from the configuration; no HTTP here (ARCHITECTURE.md §1). */
export async function createServices(config: Config, deps: Deps, log: Logger): Promise<Services> {
  const clock = deps.clock ?? systemClock;
  const store = deps.store ?? (await openStore(config, log.child({ module: 'store' })));
  const bus = deps.bus ?? new MemoryBus(log.child({ module: 'bus' }));
  const handlers = new EventHandlers(config.handlersPerTab);
  const metrics = createMetrics();
  // Changes when the service restarts, or with each deployment generation when the operator sets it.
  const instanceId = config.instanceId ?? randomBytes(12).toString('base64url');
  // The router is made below; the hub hands it the XMPP events a tab could not take.
  let storeUndelivered: (fallback: DeliveryFallback) => Promise<void> = async () => undefined;
  const hub = new Hub({
    bus,
    clock,
    log: log.child({ module: 'hub' }),
    outboxLimit: config.outboxLimit,
    outboxMaxAgeMs: config.outboxMaxAgeSeconds * 1000,
    tabIdleMs: config.tabIdleSeconds * 1000,
    // The reference client polls again at once after an answer, or 5 s after an error.
    longPollGapMs: LONG_POLL_GAP_MS,
    maxTabsPerSession: config.tabsPerSession,
    // Pages remember the first id and reload when a later one differs (docs/events.md "Restarts").
    greeting: () => ({ type: EventTypes.CheckServerInstance, data: instanceId }),
    counters: metrics.hubCounters,
    onFallback: (fallback) => {
      storeUndelivered(fallback).catch((err: unknown) => log.error({ err }, 'storing an undelivered message failed'));
    },
    // On release the registry removes the binding itself (awaited before the connection's next frame).
    onRelease: (address) => handlers.forgetTab(address),
    onForget: (address) => dropTab(address),
  });
  metrics.watchHub(() => hub.snapshot());
  /** Handlers live as long as their tab (docs/xmpp.md); the binding goes only if it is still this session's. */
  function dropTab(address: TabAddress): void {
    handlers.forgetTab(address);
    store.tabs.remove(address.tabId, address.session).catch((err: unknown) => log.error({ err, tabId: address.tabId }, 'removing a tab binding failed'));
  }
  const signer = await loadServerSigner(store.serverKeys, clock);
  const tokens = await TokenService.load(store.serverKeys, clock, config.publicBaseUrl);
  const accounts = new Accounts({
    accounts: store.accounts,
    tokens,
    clock,
    // docs/agent-api.md "Throttling": a few attempts per account and window; an address gets more room.
    accountThrottle: new FailureThrottle(clock, config.loginAttemptsPerAccount, config.loginThrottleWindowSeconds * 1000),
    addressThrottle: new FailureThrottle(clock, config.loginAttemptsPerAddress, config.loginThrottleWindowSeconds * 1000),
    onLimited: (limit) => metrics.rateLimited.inc({ limit }),
  });
  const policy = { allowHttpLoopback: config.callbackAllowHttpLoopback, allowedHosts: config.callbackAllowedHosts };
  const resolve = deps.resolve ?? systemResolver;
  const registrations = new BackendRegistrations({ store: store.services, clock, validityMs: config.serviceValiditySeconds * 1000, policy, resolve });
  const deliverer = new CallbackDeliverer({
    callbacks: store.callbacks,
    delivery: hub,
    clock,
    log: log.child({ module: 'callbacks' }),
    metrics,
    privateKey: signer.privateKey,
    policy,
    resolve,
    ca: config.callbackCaFile === undefined ? undefined : readFileSync(config.callbackCaFile, 'utf8'),
    retryBaseMs: config.callbackRetryBaseMs,
    retryCapMs: config.callbackRetryCapMs,
    connectTimeoutMs: config.callbackConnectTimeoutMs,
    totalTimeoutMs: config.callbackTimeoutMs,
    pollMs: config.callbackPollMs,
  });
  const registry = new TabRegistry({
    tabs: store.tabs,
    codes: store.codes,
    hub,
    clock,
    resultReplayMs: config.outboxMaxAgeSeconds * 1000,
    registrationWaitMs: TAB_REGISTRATION_WAIT_MS,
  });
  const quickLogin = new QuickLogin({
    backend: backendMode({
      registrations,
      services: store.services,
      deliverer,
      clock,
      retryWindowMs: config.callbackRetrySeconds * 1000,
    }),
    store,
    delivery: hub,
    clock,
    signer,
    log: log.child({ module: 'quicklogin' }),
    publicBaseUrl: config.publicBaseUrl,
    codeValidityMs: config.codeValiditySeconds * 1000,
    modulePixels: config.qrModulePixels,
    allowCookielessQrRequests: config.allowCookielessQrRequests,
    awaitTab: (tabId) => registry.awaitRegistration(tabId),
    issueAgentToken: (accountId, seconds) => accounts.tokenFor(accountId, seconds),
  });
  const apply: ApplyOptions = {
    store,
    clock,
    provider: config.legalDomain,
    signBytes: (bytes) => signer.signBytes(bytes),
    validDays: config.identityValidDays,
    autoApprove: config.autoApproveIdentities,
  };
  const identityQuota = new IdentityQuota({
    count: (accountId) => store.identities.countFor(accountId, LIVE_STATES),
    limit: config.identitiesPerAccount,
    onRefused: () => metrics.quotaExceeded.inc({ limit: 'identities_per_account' }),
  });
  const purge = new Purge({
    // Each kind of stored data with its retention window; further kinds join this list as PurgeTasks.
    tasks: [...storeRetentionTasks(store, retentionWindows(config)), tabBindingPurgeTask(store.tabs, config.tabBindingRetentionSeconds * 1000)],
    clock,
    log: log.child({ module: 'retention' }),
    onPurged: (kind, count) => metrics.purged.inc({ kind }, count),
  });
  const router = new MessageRouter({
    componentDomain: config.xmppComponentDomain,
    accounts: store.accounts,
    handlers,
    delivery: hub,
    isConnected: (address) => hub.isConnected(address),
    messages: store.messages,
    clock,
    log: log.child({ module: 'agent:router' }),
    quota: config.messageQuotaPerAccount,
  });
  const xmpp =
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
  storeUndelivered = (fallback) => router.storeUndelivered(fallback);
  const messaging = new Messaging({ componentDomain: config.xmppComponentDomain, router, messages: store.messages, toLocal: toInboundMessage, link: xmpp });
  const devIdentity = config.devApprovalEnabled ? await ensureDevIdentity(store, clock, config.legalDomain) : undefined;

  let connectionsClosed = false;
  const closeConnections = (): void => {
    if (connectionsClosed) return;
    connectionsClosed = true;
    hub.close();
  };

  const timers = [
    setInterval(() => hub.sweep(), HUB_SWEEP_MS),
    setInterval(() => {
      refreshTabBindings(hub, store.tabs, clock).catch((err: unknown) => log.error({ err }, 'tab binding refresh failed'));
    }, tabBindingRefreshMs(config.tabBindingRetentionSeconds * 1000)),
    // Picks up keys rotated by the CLI or another node, so the newest key signs everywhere.
    setInterval(() => tokens.reload().catch((err: unknown) => log.error({ err }, 'token key reload failed')), TOKEN_KEY_RELOAD_MS),
  ];
  for (const t of timers) t.unref();
  purge.start(config.purgeIntervalSeconds * 1000);
  // Resumes pending callbacks left by a previous run (durable outbox).
  deliverer.start();
  // Not awaited: the service starts without its XMPP server and keeps reconnecting in the background.
  void xmpp?.start();

  return {
    config,
    clock,
    store,
    bus,
    hub,
    registry,
    quickLogin,
    signer,
    tokens,
    accounts,
    apply,
    identityQuota,
    purge,
    devIdentity,
    registrations,
    deliverer,
    metrics,
    handlers,
    router,
    messaging,
    xmpp,
    closeConnections,
    async close() {
      for (const t of timers) clearInterval(t);
      await purge.stop();
      await xmpp?.stop();
      await deliverer.stop();
      closeConnections();
      if (!deps.bus) await bus.close();
      if (!deps.store) await store.close();
    },
  };
}
