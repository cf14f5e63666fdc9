import type { FastifyInstance } from 'fastify';
import type { Hub } from '../hub/hub.js';
import type { Metrics } from '../metrics.js';

/** Liveness, readiness and Prometheus metrics for operators (ARCHITECTURE.md §5). */
export async function healthRoutes(app: FastifyInstance, o: { hub: Hub; metrics: Metrics; xmpp: { readonly online: boolean } | undefined }): Promise<void> {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async () => ({
    status: 'ready',
    hub: o.hub.snapshot(),
    // 'off' without an XMPP server configured; 'offline' while the component reconnects.
    xmpp: o.xmpp === undefined ? 'off' : o.xmpp.online ? 'online' : 'offline',
  }));
  app.get('/metrics', async (_request, reply) => reply.type(o.metrics.registry.contentType).send(await o.metrics.registry.metrics()));
}
