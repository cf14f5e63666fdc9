import type { FastifyInstance } from 'fastify';
import type { Hub } from '../hub/hub.js';

/** Liveness, readiness and counters for operators (ARCHITECTURE.md §5). */
export async function healthRoutes(app: FastifyInstance, o: { hub: Hub }): Promise<void> {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async () => ({ status: 'ready', hub: o.hub.snapshot() }));
}
