import { readFileSync } from 'node:fs';
import cookie from '@fastify/cookie';
import cors from '@fastify/cors';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from './config/schema.js';
import { agentAccountRoutes } from './http/agent-account-routes.js';
import { agentLegalRoutes } from './http/agent-legal-routes.js';
import { agentXmppRoutes } from './http/agent-xmpp-routes.js';
import { parseXmlPayload } from './xmpp/xml-payload.js';
import { bearerGuard } from './http/bearer.js';
import { serveWebSocket } from './channel/websocket.js';
import { upgradesOnly, WebSocketUpgrade } from './channel/websocket-upgrade.js';
import { decideUpgrade, eventsRoutes } from './http/events-routes.js';
import { eventsScriptRoutes } from './http/events-script-routes.js';
import { Drain } from './health/drain.js';
import { healthRoutes } from './http/health-routes.js';
import { readinessProbes } from './health/readiness.js';
import { registerHttpMetrics } from './http/http-metrics.js';
import { registerOpenApi } from './http/openapi.js';
import { pagesRoutes } from './http/pages-routes.js';
import { walletRoutes } from './http/wallet-routes.js';
import { answerNodeRefusals, clientErrorHandler } from './http/client-error.js';
import { preflightGuard } from './http/cors-preflight.js';
import { rawProblemResponse, registerProblemHandlers, sendFrameworkError } from './http/problem.js';
import { quickLoginRoutes } from './http/quicklogin-routes.js';
import { registerRequestLimits } from './http/request-limits.js';
import { AccessLog, serializeRequest } from './http/request-log.js';
import { ajvTextFormats } from './http/schema-text.js';
import { createServices, type Deps, type Services } from './services.js';
import { PROTOCOL_VERSION, PROTOCOL_VERSION_HEADER } from './protocol/version.js';

export type { Deps, Services } from './services.js';

/**
 * At shutdown, a WebSocket not closed this long after its close was sent is cut (docs/deployment.md
 * "Stopping a node"). A close handshake takes a round trip; this only bounds a peer that never finishes it.
 */
export const WEBSOCKET_CLOSE_DEADLINE_MS = 2_000;

declare module 'fastify' {
  interface FastifyInstance {
    tabwire: Services;
    /** The WebSocket server behind `/ClientEventsWS` (its `clients` are the live sockets). */
    websocketServer: WebSocketUpgrade['server'];
  }
}

/** The event channel's WebSocket endpoint (docs/events.md); the only path whose upgrades are accepted. */
const WEBSOCKET_PATH = '/ClientEventsWS';

/** The one wiring point (docs/deployment.md): a ready Fastify instance that does not listen. */
export async function buildApp(config: Config, deps: Deps = {}): Promise<FastifyInstance> {
  // Slow clients (docs/configuration.md "Slow clients and shutdown"): headers and the whole request must arrive in time,
  // else Node answers 408 and closes. Node checks every connectionsCheckingInterval (30 s by default),
  // which would let a 2 s timeout run for 30 s: once a second keeps them within a second of their value.
  const timeouts = {
    requestTimeout: config.requestTimeoutSeconds * 1000,
    // Node refuses a headers timeout above the request timeout.
    headersTimeout: Math.min(config.headersTimeoutSeconds, config.requestTimeoutSeconds) * 1000,
    connectionsCheckingInterval: 1000,
    shouldUpgradeCallback: upgradesOnly(WEBSOCKET_PATH),
  };
  // HTTPS served directly when a certificate is configured (docs/deployment.md); else plain HTTP, e.g. behind a proxy.
  const server =
    config.tlsCertFile === undefined || config.tlsKeyFile === undefined
      ? { http: timeouts }
      : { https: { cert: readFileSync(config.tlsCertFile), key: readFileSync(config.tlsKeyFile), ...timeouts } };
  const app = Fastify({
    ...server,
    // Fastify sets the server's requestTimeout itself (0, none, unless given).
    requestTimeout: timeouts.requestTimeout,
    // A socket silent for longer than any request may take plus a held long-poll is dead (or a client
    // that stopped reading its answer): closed. Upgraded WebSockets have their own ping timeout.
    connectionTimeout: (config.requestTimeoutSeconds + config.longPollHoldSeconds) * 1000,
    trustProxy: config.trustProxy,
    // A request that still reaches a closing service (on a kept-alive connection) is served, not answered
    // 503: reference page scripts show any non-200 answer to the person, and the QR script then stops for
    // good. Shutdown closes idle connections and answers with Connection: close, so few do.
    return503OnClosing: false,
    // Request logs never carry a whole login code (request-log.ts).
    logger: { level: config.logLevel, serializers: { req: serializeRequest }, ...(deps.logStream ? { stream: deps.logStream } : {}) },
    // One access-log line per request instead of Fastify's two (request-log.ts).
    logController: new AccessLog(),
    bodyLimit: config.bodyLimitBytes,
    // Types are not coerced: "60" is not a number of seconds. All errors, so one answer names every bad field.
    // The text formats are the one rule for free text (http/schema-text.ts, docs/input.md).
    ajv: { customOptions: { coerceTypes: false, allErrors: true, removeAdditional: false, formats: ajvTextFormats } },
    // Refusals made before routing (bad percent-encoding, too long a parameter) and by Node's HTTP parser are problem+json too.
    frameworkErrors: sendFrameworkError,
    clientErrorHandler,
  }) as unknown as FastifyInstance;
  const log = app.log as unknown as Logger;
  const services = await createServices(config, deps, log);
  const { store, hub, registry, clock, quickLogin, signer, tokens, accounts } = services;
  app.decorate('tabwire', services);
  app.addHook('onClose', () => services.close());
  registerShutdown(app, services, config.shutdownTimeoutSeconds * 1000);
  // Node reports a request that did not arrive in time as a client error (and answers 408 itself).
  app.server.on('clientError', (err: NodeJS.ErrnoException) => {
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') services.metrics.requestTimeouts.inc();
  });

  registerProblemHandlers(app);
  answerNodeRefusals(app);
  // Request counts and latency by route (docs/metrics.md); before the routes, so each inherits the hook.
  registerHttpMetrics(app, services.metrics);
  // Every answer tells browsers to honour its Content-Type (never sniff JSON into HTML or script).
  app.addHook('onSend', (_request, reply, payload, done) => {
    reply.header('x-content-type-options', 'nosniff');
    // Which wire protocol this is, on every answer, so clients learn it without a request of their own (docs/protocol.md "Versioning").
    reply.header(PROTOCOL_VERSION_HEADER, String(PROTOCOL_VERSION));
    done(null, payload);
  });
  await app.register(cookie);
  // Cross-origin pages (page on host A, tabwire on host B) get CORS with credentials for allowed
  // origins only; any other origin gets no CORS headers, and its POSTs are refused by checkOrigin.
  // Its preflight from a foreign origin is a 403 problem, an incomplete one a 400 (preflightGuard runs first).
  app.addHook('onRequest', preflightGuard(config.allowedOrigins));
  await app.register(cors, {
    origin: (origin, callback) => callback(null, origin !== undefined && config.allowedOrigins.includes(origin)),
    credentials: true,
    methods: ['GET', 'POST'],
    allowedHeaders: ['Content-Type', 'X-TabID', 'X-Last-Event-ID', 'Authorization', 'Tabwire-Binding'],
    // Cross-origin pages may read the protocol version (Fetch: only safelisted headers are readable otherwise).
    exposedHeaders: [PROTOCOL_VERSION_HEADER],
    maxAge: 600,
  });
  const cookies = { secure: config.publicBaseUrl.startsWith('https:'), sameSite: config.cookieSameSite };
  // A Register waits through an outage as long as a poll is held, so both transports ride out the same one.
  const channel = { registry, hub, log: log.child({ module: 'channel:websocket' }), outageWaitMs: config.longPollHoldSeconds * 1000 };
  const upgrade = new WebSocketUpgrade(app.server, {
    path: WEBSOCKET_PATH,
    maxPayload: 16 * 1024,
    clock,
    pingTimeoutMs: config.pingTimeoutSeconds * 1000,
    closeDeadlineMs: WEBSOCKET_CLOSE_DEADLINE_MS,
    decide: decideUpgrade(app, { allowedOrigins: config.allowedOrigins, cookies }),
    serve: (socket, sessionHash, alive, raw) => serveWebSocket(socket, sessionHash, channel, alive, raw),
    refusal: rawProblemResponse,
  });
  app.decorate('websocketServer', upgrade.server);
  app.addHook('preClose', async () => upgrade.close());
  // Before the routes: the OpenAPI generator collects them as they are declared (docs/openapi.md).
  await registerOpenApi(app, { publicBaseUrl: config.publicBaseUrl });
  const guard = bearerGuard(tokens, store.accounts);
  await app.register(healthRoutes, { hub, metrics: services.metrics, xmpp: services.xmpp, redis: services.redis, probes: readinessProbes(services), drain: deps.drain ?? new Drain() });
  await app.register(eventsRoutes, {
    registry,
    hub,
    tabs: store.tabs,
    longPollHoldMs: config.longPollHoldSeconds * 1000,
    tabIdleSeconds: config.tabIdleSeconds,
    allowedOrigins: config.allowedOrigins,
    cookies,
  });
  const limits = await registerRequestLimits(app, {
    qrPerSessionPerMinute: config.qrRequestsPerSessionPerMinute,
    qrPerAddressPerMinute: config.qrRequestsPerAddressPerMinute,
    registrationsPerAddressPerMinute: config.registrationsPerAddressPerMinute,
    ...(services.limits.rateLimitStore ? { store: services.limits.rateLimitStore } : {}),
    onLimited: (limit) => services.metrics.rateLimited.inc({ limit }),
  });
  await app.register(quickLoginRoutes, {
    limits,
    quickLogin,
    signer,
    registrations: services.registrations,
    allowedOrigins: config.allowedOrigins,
    devIdentity: services.devIdentity,
    attachmentFreshMs: config.attachmentUrlSeconds * 1000,
  });
  await app.register(agentAccountRoutes, { accounts, tokens, apiKeys: store.apiKeys, openRegistration: config.openRegistration, guard });
  await app.register(agentLegalRoutes, { apply: services.apply, guard, quota: services.identityQuota, pageSize: config.identityPageSize });
  await app.register(agentXmppRoutes, {
    handlers: services.handlers,
    messaging: services.messaging,
    registry: services.registry,
    parseXml: parseXmlPayload,
    guard,
  });
  // Both hand out the session cookie, so a page's first QR request carries it even when the event
  // channel's handshake is still under way (docs/events.md "QR requests and the tab").
  await app.register(pagesRoutes, { cookies });
  // The web wallet (docs/wallet.md): static files, no session cookie (it needs none).
  await app.register(walletRoutes);
  await app.register(eventsScriptRoutes, { cookies });
  return app;
}

/**
 * Shutdown with a deadline (docs/configuration.md "Slow clients and shutdown"). Fastify runs onClose
 * hooks only once every in-flight request has finished, so tab connections are closed first, in
 * preClose: held long-polls are answered at once and WebSockets closed (1001). Idle keep-alive
 * connections are closed then; answers still to come say `Connection: close`, so their connections
 * end with them (Node would keep them open for keepAliveTimeout). Whatever still runs when
 * `deadlineMs` has passed is cut.
 */
function registerShutdown(app: FastifyInstance, services: Services, deadlineMs: number): void {
  let closing = false;
  let deadline: NodeJS.Timeout | undefined;
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });
  app.addHook('preClose', async () => {
    closing = true;
    services.closeConnections();
    deadline = setTimeout(() => app.server.closeAllConnections(), deadlineMs);
    deadline.unref();
    app.server.closeIdleConnections();
  });
  app.addHook('onClose', async () => clearTimeout(deadline));
}
