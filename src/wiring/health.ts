import { Drain } from '../health/drain.js';
import { readinessProbes } from '../health/readiness.js';
import { healthRoutes } from '../http/health-routes.js';
import type { Hub } from '../hub/hub.js';
import type { Metrics } from '../metrics.js';
import type { RedisConnection } from '../redis/connection.js';
import type { RedisClusterConnection } from '../redis/cluster-connection.js';
import type { Store } from '../store/stores.js';
import type { LeasedXmppComponent } from '../xmpp/leased-component.js';
import type { Area } from './area.js';

export interface HealthAreaDeps {
  hub: Hub;
  metrics: Metrics;
  store: Store;
  redis: RedisConnection | undefined;
  redisCluster: RedisClusterConnection | undefined;
  xmpp: LeasedXmppComponent | undefined;
  /** Set by the process when it is asked to stop (main.ts); /readyz then answers 503. */
  drain: Drain | undefined;
}

/** Operations: /healthz, /readyz with its timed probes of Redis and the store, and /metrics (docs/metrics.md). */
export function createHealthArea({ hub, metrics, store, redis, redisCluster, xmpp, drain }: HealthAreaDeps): Area {
  const probes = readinessProbes({ redis, redisCluster, store });
  return {
    async registerRoutes({ app }) {
      await app.register(healthRoutes, { hub, metrics, xmpp, redis, redisCluster, probes, drain: drain ?? new Drain() });
    },
    start() {},
    async stop() {},
  };
}
