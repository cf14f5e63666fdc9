import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { TabwireError } from '../errors.js';
import type { Hub } from '../hub/hub.js';
import type { Metrics } from '../metrics.js';
import { json, media, problems } from './openapi-schemas.js';

export interface HealthRoutesOptions {
  hub: Hub;
  metrics: Metrics;
  xmpp: { readonly online: boolean; readonly state?: 'online' | 'connecting' | 'standby' } | undefined;
  /** The cluster's Redis connection, when there is one (readiness depends on it). */
  redis: { readonly ready: boolean } | undefined;
  /** The Redis Cluster of the event streams, when there is one. */
  redisCluster: { readonly ready: boolean } | undefined;
  /**
   * Timed probes (timed-probe.ts): Redis in a cluster, every primary of the Redis Cluster, and the store; a
   * server that does not answer in time is down.
   */
  probes: { redis: Probe | undefined; redisCluster: { any: Probe; all: Probe } | undefined; store: Probe };
  /** Whether the node is draining before it stops (health/drain.ts). */
  drain: { readonly draining: boolean };
}

/** Whether a server answered its latest readiness probe in time. */
interface Probe {
  up(): Promise<boolean>;
}

const healthzSchema = {
  tags: ['Operations'],
  summary: 'Liveness: the process answers',
  response: { 200: json(Type.Object({ status: Type.Literal('ok') }), 'Alive'), ...problems() },
};
const readyzSchema = {
  tags: ['Operations'],
  summary: 'Readiness: whether a load balancer should send requests here',
  response: {
    200: json(
      Type.Object({
        status: Type.Literal('ready'),
        hub: Type.Object({ tabs: Type.Integer({ description: 'Tabs held by this node' }), connected: Type.Integer({ description: 'Of which connected now' }) }),
        xmpp: Type.Union(['off', 'online', 'offline', 'connecting', 'standby'].map((s) => Type.Literal(s))),
        redis: Type.Union([Type.Literal('off'), Type.Literal('up')]),
        redisCluster: Type.Union([Type.Literal('off'), Type.Literal('up'), Type.Literal('degraded')], {
          description: "The Redis Cluster of the event streams: 'degraded' while a primary does not answer in time (its tabs' events wait; every node is alike, so the node stays ready)",
        }),
        store: Type.Literal('up'),
      }),
      'Ready',
    ),
    ...problems('shared_state_unavailable', 'store_unavailable', 'shutting_down'),
  },
};
const metricsSchema = {
  tags: ['Operations'],
  summary: 'Prometheus metrics (text exposition format)',
  response: { 200: media('text/plain', 'The metrics'), ...problems() },
};

/**
 * Liveness, readiness and Prometheus metrics for operators (docs/metrics.md "Health endpoints": what
 * each checks, what a load balancer and Kubernetes probes should use). `/readyz` answers 503 while a
 * node cannot reach its Redis or its database, or they do not answer a probe in time, so a load balancer
 * sends new requests to nodes that can.
 */
export async function healthRoutes(app: FastifyInstance, o: HealthRoutesOptions): Promise<void> {
  app.get('/healthz', { schema: healthzSchema }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: readyzSchema }, async () => {
    if (o.drain.draining) throw new TabwireError('shutting_down', 'This node is stopping; send requests to another node', { retryAfter: 1 });
    if (o.redis && !o.redis.ready) throw new TabwireError('shared_state_unavailable', 'This node cannot reach Redis', { retryAfter: 1 });
    if (o.redisCluster && !o.redisCluster.ready) throw new TabwireError('shared_state_unavailable', 'This node cannot reach the Redis Cluster', { retryAfter: 1 });
    // All asked at once: a stalled server costs one deadline, not several.
    const [redisUp, storeUp, clusterAny, clusterAll] = await Promise.all([
      o.probes.redis?.up() ?? true,
      o.probes.store.up(),
      o.probes.redisCluster?.any.up(),
      o.probes.redisCluster?.all.up(),
    ]);
    if (clusterAny === false) throw new TabwireError('shared_state_unavailable', 'No primary of the Redis Cluster answers this node in time', { retryAfter: 1 });
    if (!redisUp) throw new TabwireError('shared_state_unavailable', 'Redis does not answer this node in time (a stalled server, or a network that drops packets)', { retryAfter: 1 });
    if (!storeUp) throw new TabwireError('store_unavailable', 'The database does not answer this node in time', { retryAfter: 1 });
    return {
      status: 'ready',
      hub: o.hub.snapshot(),
      // 'off' without an XMPP server configured; in a cluster one node is 'online' and the others 'standby'.
      xmpp: o.xmpp === undefined ? 'off' : (o.xmpp.state ?? (o.xmpp.online ? 'online' : 'offline')),
      redis: o.redis === undefined ? 'off' : 'up',
      redisCluster: clusterAll === undefined ? 'off' : clusterAll ? 'up' : 'degraded',
      store: 'up',
    };
  });
  app.get('/metrics', { schema: metricsSchema }, async (_request, reply) => reply.type(o.metrics.registry.contentType).send(await o.metrics.registry.metrics()));
}
