import type { FastifyInstance } from 'fastify';
import { TabwireError } from '../errors.js';
import type { Hub } from '../hub/hub.js';
import type { Metrics } from '../metrics.js';

export interface HealthRoutesOptions {
  hub: Hub;
  metrics: Metrics;
  xmpp: { readonly online: boolean; readonly state?: 'online' | 'connecting' | 'standby' } | undefined;
  /** The cluster's Redis connection, when there is one (readiness depends on it). */
  redis: { readonly ready: boolean } | undefined;
}

/**
 * Liveness, readiness and Prometheus metrics for operators (docs/metrics.md "Health endpoints": what
 * each checks, what a load balancer and Kubernetes probes should use). `/readyz` answers 503 while a
 * node of a cluster cannot reach its Redis, so a load balancer sends new requests to nodes that can.
 */
export async function healthRoutes(app: FastifyInstance, o: HealthRoutesOptions): Promise<void> {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async () => {
    if (o.redis && !o.redis.ready) throw new TabwireError('shared_state_unavailable', 'This node cannot reach Redis', { retryAfter: 1 });
    return {
      status: 'ready',
      hub: o.hub.snapshot(),
      // 'off' without an XMPP server configured; in a cluster one node is 'online' and the others 'standby'.
      xmpp: o.xmpp === undefined ? 'off' : (o.xmpp.state ?? (o.xmpp.online ? 'online' : 'offline')),
      redis: o.redis === undefined ? 'off' : 'up',
    };
  });
  app.get('/metrics', async (_request, reply) => reply.type(o.metrics.registry.contentType).send(await o.metrics.registry.metrics()));
}
