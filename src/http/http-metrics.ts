import type { FastifyInstance } from 'fastify';
import type { Metrics } from '../metrics.js';

/** Methods counted by name; anything else Node lets through is `other`, so a client cannot add series. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** Requests no route matched (404s of any URL) share one label value instead of one series per URL. */
export const UNMATCHED_ROUTE = 'unmatched';

/** `404` → `4xx`: five values, whatever status a route invents. */
export const statusClass = (status: number): string => `${Math.floor(status / 100)}xx`;

/**
 * Observes every answered request in `tabwire_http_request_duration_seconds` (docs/metrics.md), by
 * route pattern (`/QuickLogin/Sign/:code`, never the URL with its code), method and status class. A
 * root hook, registered before the routes so every route inherits it. WebSocket upgrades are no
 * Fastify request (channel/websocket-upgrade.ts) and are not counted here; connections cut before an
 * answer (408, a client gone) neither.
 */
export function registerHttpMetrics(app: FastifyInstance, metrics: Pick<Metrics, 'httpRequests'>): void {
  app.addHook('onResponse', (request, reply, done) => {
    metrics.httpRequests.observe(
      {
        route: request.routeOptions.url ?? UNMATCHED_ROUTE,
        method: METHODS.has(request.method) ? request.method : 'other',
        status: statusClass(reply.statusCode),
      },
      reply.elapsedTime / 1000,
    );
    done();
  });
}
