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
import { WebSocketUpgrade } from './channel/websocket-upgrade.js';
import { decideUpgrade, eventsRoutes } from './http/events-routes.js';
import { eventsScriptRoutes } from './http/events-script-routes.js';
import { healthRoutes } from './http/health-routes.js';
import { pagesRoutes } from './http/pages-routes.js';
import { answerNodeRefusals, clientErrorHandler } from './http/client-error.js';
import { preflightGuard } from './http/cors-preflight.js';
import { rawProblemResponse, registerProblemHandlers, sendFrameworkError } from './http/problem.js';
import { quickLoginRoutes } from './http/quicklogin-routes.js';
import { ajvTextFormats } from './http/schema-text.js';
import { createServices, type Deps, type Services } from './services.js';

export type { Deps, Services } from './services.js';

declare module 'fastify' {
  interface FastifyInstance {
    tabwire: Services;
    /** The WebSocket server behind `/ClientEventsWS` (its `clients` are the live sockets). */
    websocketServer: WebSocketUpgrade['server'];
  }
}

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

  registerProblemHandlers(app);
  answerNodeRefusals(app);
  // Every answer tells browsers to honour its Content-Type (never sniff JSON into HTML or script).
  app.addHook('onSend', (_request, reply, payload, done) => {
    reply.header('x-content-type-options', 'nosniff');
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
    allowedHeaders: ['Content-Type', 'X-TabID', 'X-Last-Event-ID', 'Authorization'],
    maxAge: 600,
  });
  const cookies = { secure: config.publicBaseUrl.startsWith('https:'), sameSite: config.cookieSameSite };
  const channel = { registry, hub, log: log.child({ module: 'channel:websocket' }) };
  const upgrade = new WebSocketUpgrade(app.server, {
    path: '/ClientEventsWS',
    maxPayload: 16 * 1024,
    clock,
    pingTimeoutMs: config.pingTimeoutSeconds * 1000,
    decide: decideUpgrade(app, { allowedOrigins: config.allowedOrigins, cookies }),
    serve: (socket, sessionHash, alive) => serveWebSocket(socket, sessionHash, channel, alive),
    refusal: rawProblemResponse,
  });
  app.decorate('websocketServer', upgrade.server);
  app.addHook('preClose', async () => upgrade.close());
  const guard = bearerGuard(tokens, store.accounts);
  await app.register(healthRoutes, { hub, metrics: services.metrics, xmpp: services.xmpp });
  await app.register(eventsRoutes, {
    registry,
    hub,
    tabs: store.tabs,
    longPollHoldMs: config.longPollHoldSeconds * 1000,
    allowedOrigins: config.allowedOrigins,
    cookies,
  });
  await app.register(quickLoginRoutes, {
    quickLogin,
    signer,
    registrations: services.registrations,
    allowedOrigins: config.allowedOrigins,
    devIdentity: services.devIdentity,
    attachmentFreshMs: config.attachmentUrlSeconds * 1000,
  });
  await app.register(agentAccountRoutes, { accounts, tokens, apiKeys: store.apiKeys, openRegistration: config.openRegistration, guard });
  await app.register(agentLegalRoutes, { apply: services.apply, guard });
  await app.register(agentXmppRoutes, {
    handlers: services.handlers,
    messaging: services.messaging,
    hub,
    tabs: store.tabs,
    parseXml: parseXmlPayload,
    guard,
  });
  await app.register(pagesRoutes);
  await app.register(eventsScriptRoutes);
  return app;
}
