import type { FastifyInstance } from 'fastify';
import type { Hub } from '../hub/hub.js';
import type { Metrics } from '../metrics.js';

/** Liveness, readiness and Prometheus metrics for operators (ARCHITECTURE.md §5). */
export async function healthRoutes(app: FastifyInstance, o: { hub: Hub; metrics: Metrics }): Promise<void> {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async () => ({ status: 'ready', hub: o.hub.snapshot() }));
  app.get('/metrics', async (_request, reply) => reply.type(o.metrics.registry.contentType).send(await o.metrics.registry.metrics()));
}
