import { readFileSync } from 'node:fs';
import cookie from '@fastify/cookie';
import cors from '@fastify/cors';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { upgradesOnly } from './channel/websocket-upgrade.js';
import type { Config } from './config/schema.js';
import { answerNodeRefusals, clientErrorHandler } from './http/client-error.js';
import { preflightGuard } from './http/cors-preflight.js';
import { registerHttpMetrics } from './http/http-metrics.js';
import { registerOpenApi } from './http/openapi.js';
import { registerProblemHandlers, sendFrameworkError } from './http/problem.js';
import { registerRequestLimits } from './http/request-limits.js';
import { AccessLog, serializeRequest } from './http/request-log.js';
import { ajvTextFormats } from './http/schema-text.js';
import { PROTOCOL_VERSION, PROTOCOL_VERSION_HEADER } from './protocol/version.js';

const PROTOCOL_VERSION_TEXT = String(PROTOCOL_VERSION);
import { WEBSOCKET_PATH } from './wiring/events.js';
import { assembleNode, type AssembledNode, type Deps, type NodeHandle } from './wiring/node.js';

export type { Deps, NodeHandle } from './wiring/node.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** What tests and benchmarks reach of the node (wiring/node.ts); the service itself never reads it. */
    tabwire: NodeHandle;
  }
}

/**
 * The one wiring point (docs/architecture.md "Assembly"): a ready Fastify instance that does not listen.
 * Here: the server's options and the hooks every route shares (problem answers, request log, metrics,
 * CORS and origins, rate limits); the areas of wiring/ make the rest and register their own routes.
 */
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
  const node = await assembleNode(config, deps, log);
  app.decorate('tabwire', node.handle);
  app.addHook('onClose', () => node.close());
  const shutdown = registerShutdown(app, node, config.shutdownTimeoutSeconds * 1000);
  // Node reports a request that did not arrive in time as a client error (and answers 408 itself).
  app.server.on('clientError', (err: NodeJS.ErrnoException) => {
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') node.metrics.requestTimeouts.inc();
  });

  registerProblemHandlers(app);
  answerNodeRefusals(app);
  // Request counts and latency by route (docs/metrics.md); before the routes, so each inherits the hook.
  registerHttpMetrics(app, node.metrics);
  // Every answer tells browsers to honour its Content-Type (never sniff JSON into HTML or script), and which
  // wire protocol this is, so clients learn it without a request of their own (docs/protocol.md "Versioning").
  // Once shutdown has begun it also says `Connection: close` (registerShutdown). One hook for all three: each
  // root onSend hook is a step of every answer's send.
  app.addHook('onSend', (_request, reply, payload, done) => {
    reply.header('x-content-type-options', 'nosniff');
    reply.header(PROTOCOL_VERSION_HEADER, PROTOCOL_VERSION_TEXT);
    if (shutdown.closing) reply.header('connection', 'close');
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
  // Before the routes: the OpenAPI generator collects them as they are declared (docs/openapi.md).
  await registerOpenApi(app, { publicBaseUrl: config.publicBaseUrl });
  const limits = await registerRequestLimits(app, {
    qrPerSessionPerMinute: config.qrRequestsPerSessionPerMinute,
    qrPerAddressPerMinute: config.qrRequestsPerAddressPerMinute,
    registrationsPerAddressPerMinute: config.registrationsPerAddressPerMinute,
    oidcTokenPerAddressPerMinute: config.oidcTokenRequestsPerAddressPerMinute,
    ...(node.rateLimitStore ? { store: node.rateLimitStore } : {}),
    onLimited: (limit) => node.metrics.rateLimited.inc({ limit }),
  });
  const cookies = { secure: config.publicBaseUrl.startsWith('https:'), sameSite: config.cookieSameSite };
  await node.registerRoutes({ app, cookies, limits });
  return app;
}

/**
 * Shutdown with a deadline (docs/configuration.md "Slow clients and shutdown"). Fastify runs onClose
 * hooks only once every in-flight request has finished, so tab connections are closed first, in
 * preClose: held long-polls are answered at once and WebSockets closed (1001). Idle keep-alive
 * connections are closed then; answers still to come say `Connection: close`, so their connections
 * end with them (Node would keep them open for keepAliveTimeout; buildApp's onSend hook reads `closing`).
 * Whatever still runs when `deadlineMs` has passed is cut.
 */
function registerShutdown(app: FastifyInstance, node: Pick<AssembledNode, 'closeConnections'>, deadlineMs: number): { readonly closing: boolean } {
  const state = { closing: false };
  let deadline: NodeJS.Timeout | undefined;
  app.addHook('preClose', async () => {
    state.closing = true;
    node.closeConnections();
    deadline = setTimeout(() => app.server.closeAllConnections(), deadlineMs);
    deadline.unref();
    app.server.closeIdleConnections();
  });
  app.addHook('onClose', async () => clearTimeout(deadline));
  return state;
}
