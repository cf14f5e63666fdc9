import { readFileSync } from 'node:fs';
import cookie from '@fastify/cookie';
import cors from '@fastify/cors';
import websocket from '@fastify/websocket';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { Accounts } from './agent/accounts.js';
import { FailureThrottle } from './agent/throttle.js';
import { TokenService } from './agent/tokens.js';
import type { Bus } from './bus/bus.js';
import { MemoryBus } from './bus/memory-bus.js';
import { systemClock, type Clock } from './clock.js';
import type { Config } from './config/schema.js';
import { agentAccountRoutes } from './http/agent-account-routes.js';
import { bearerGuard } from './http/bearer.js';
import { eventsRoutes } from './http/events-routes.js';
import { eventsScriptRoutes } from './http/events-script-routes.js';
import { healthRoutes } from './http/health-routes.js';
import { registerProblemHandlers } from './http/problem.js';
import { pagesRoutes } from './http/pages-routes.js';
import { quickLoginRoutes } from './http/quicklogin-routes.js';
import { ensureDevIdentity } from './identity/dev-identity.js';
import { Hub } from './hub/hub.js';
import { TabRegistry } from './hub/registry.js';
import { EVENTS_SUBPROTOCOL } from './protocol/frames.js';
import { QuickLogin } from './quicklogin/quicklogin.js';
import { loadServerSigner, type ServerSigner } from './quicklogin/server-signer.js';
import { openSqliteStore } from './store/sqlite.js';
import type { Store } from './store/stores.js';

/** Collaborators a caller may supply (tests: a moved clock, a shared store); the rest are made here. */
export interface Deps {
  store?: Store;
  bus?: Bus;
  clock?: Clock;
}

/** The running parts, reachable from tests and the CLI. */
export interface Services {
  config: Config;
  clock: Clock;
  store: Store;
  hub: Hub;
  registry: TabRegistry;
  quickLogin: QuickLogin;
  signer: ServerSigner;
  tokens: TokenService;
  accounts: Accounts;
}

declare module 'fastify' {
  interface FastifyInstance {
    tabwire: Services;
  }
}

const HUB_SWEEP_MS = 5_000;
const CODE_SWEEP_MS = 60_000;

/** The one wiring point (ARCHITECTURE.md §1): a ready Fastify instance that does not listen. */
export async function buildApp(config: Config, deps: Deps = {}): Promise<FastifyInstance> {
  // HTTPS served directly when a certificate is configured (ARCHITECTURE.md §5); else plain HTTP, e.g. behind a proxy.
  const https =
    config.tlsCertFile === undefined || config.tlsKeyFile === undefined
      ? {}
      : { https: { cert: readFileSync(config.tlsCertFile), key: readFileSync(config.tlsKeyFile) } };
  const app = Fastify({
    ...https,
    trustProxy: config.trustProxy,
    logger: { level: config.logLevel },
    bodyLimit: config.bodyLimitBytes,
    // Types are not coerced: "60" is not a number of seconds. All errors, so one answer names every bad field.
    ajv: { customOptions: { coerceTypes: false, allErrors: true, removeAdditional: false } },
  }) as unknown as FastifyInstance;
  const log = app.log as unknown as Logger;
  const clock = deps.clock ?? systemClock;
  const store = deps.store ?? (await openSqliteStore(config.sqliteFile));
  const bus = deps.bus ?? new MemoryBus();

  const hub = new Hub({
    bus,
    clock,
    log: log.child({ module: 'hub' }),
    outboxLimit: config.outboxLimit,
    outboxMaxAgeMs: config.outboxMaxAgeSeconds * 1000,
    tabIdleMs: config.tabIdleSeconds * 1000,
    onForget: (tabId) => {
      store.tabs.remove(tabId).catch((err: unknown) => log.error({ err, tabId }, 'removing a forgotten tab failed'));
    },
  });
  const registry = new TabRegistry(store.tabs, hub, clock);
  const signer = await loadServerSigner(store.serverKeys, clock);
  const quickLogin = new QuickLogin({
    store,
    hub,
    clock,
    signer,
    log: log.child({ module: 'quicklogin' }),
    publicBaseUrl: config.publicBaseUrl,
    codeValidityMs: config.codeValiditySeconds * 1000,
    modulePixels: config.qrModulePixels,
    allowCookielessQrRequests: config.allowCookielessQrRequests,
  });
  const tokens = await TokenService.load(store.serverKeys, clock, config.publicBaseUrl);
  const accounts = new Accounts({
    accounts: store.accounts,
    tokens,
    clock,
    // docs/agent-api.md: the 6th failure within a minute for one account is refused; an address gets more room.
    accountThrottle: new FailureThrottle(clock, 5, 60_000),
    addressThrottle: new FailureThrottle(clock, 50, 60_000),
  });
  app.decorate('tabwire', { config, clock, store, hub, registry, quickLogin, signer, tokens, accounts } satisfies Services);

  const timers = [
    setInterval(() => hub.sweep(), HUB_SWEEP_MS),
    // Picks up keys rotated by the CLI or another node, so the newest key signs everywhere.
    setInterval(() => tokens.reload().catch((err: unknown) => log.error({ err }, 'token key reload failed')), 60_000),
    setInterval(() => {
      quickLogin.sweep(config.codeValiditySeconds * 1000).catch((err: unknown) => log.error({ err }, 'code sweep failed'));
    }, CODE_SWEEP_MS),
  ];
  for (const t of timers) t.unref();

  registerProblemHandlers(app);
  await app.register(cookie);
  // Cross-origin pages (page on host A, tabwire on host B) get CORS with credentials for allowed
  // origins only; any other origin gets no CORS headers, and its POSTs are refused by checkOrigin.
  await app.register(cors, {
    origin: (origin, callback) => callback(null, origin !== undefined && config.allowedOrigins.includes(origin)),
    credentials: true,
    methods: ['GET', 'POST'],
    allowedHeaders: ['Content-Type', 'X-TabID', 'X-Last-Event-ID', 'Authorization'],
    maxAge: 600,
  });
  await app.register(websocket, {
    options: {
      maxPayload: 16 * 1024,
      handleProtocols: (protocols: Set<string>) => (protocols.has(EVENTS_SUBPROTOCOL) ? EVENTS_SUBPROTOCOL : false),
    },
  });
  const cookies = { secure: config.publicBaseUrl.startsWith('https:'), sameSite: config.cookieSameSite };
  await app.register(healthRoutes, { hub });
  await app.register(eventsRoutes, {
    tabs: store.tabs,
    longPollHoldMs: config.longPollHoldSeconds * 1000,
    allowedOrigins: config.allowedOrigins,
    cookies,
    channel: { registry, hub, clock, log: log.child({ module: 'channel:websocket' }), pingTimeoutMs: config.pingTimeoutSeconds * 1000 },
  });
  const devIdentity = config.devApprovalEnabled ? await ensureDevIdentity(store, clock, config.legalDomain) : undefined;
  await app.register(quickLoginRoutes, { quickLogin, signer, allowedOrigins: config.allowedOrigins, devIdentity });
  const guard = bearerGuard(tokens, store.accounts);
  await app.register(agentAccountRoutes, { accounts, tokens, apiKeys: store.apiKeys, openRegistration: config.openRegistration, guard });
  await app.register(pagesRoutes);
  await app.register(eventsScriptRoutes);

  app.addHook('onClose', async () => {
    for (const t of timers) clearInterval(t);
    hub.close();
    if (!deps.bus) await bus.close();
    if (!deps.store) await store.close();
  });
  return app;
}
