import type { RedisConnection } from '../redis/connection.js';
import type { RedisClusterConnection } from '../redis/cluster-connection.js';
import type { Store } from '../store/stores.js';
import { TimedProbe } from './timed-probe.js';

/**
 * A server that has not answered within this is not ready (docs/metrics.md "Health endpoints"). Far above
 * a round trip on a healthy network and below the 2 s after which a Redis command is given up
 * (redis/connection.ts), so /readyz turns not ready before requests start failing.
 */
const PROBE_DEADLINE_MS = 1_000;
/** A probe's answer is kept this long: a load balancer asking every second costs one round trip a second. */
const PROBE_CACHE_MS = 1_000;

const monotonic = (): number => performance.now();

/**
 * The readiness probes of a node: its Redis in a cluster (PING), every primary of its Redis Cluster when it
 * has one (PING each), and its store (SELECT 1).
 */
export function readinessProbes(o: { redis: RedisConnection | undefined; redisCluster?: RedisClusterConnection | undefined; store: Store }): {
  redis: TimedProbe | undefined;
  redisCluster: TimedProbe | undefined;
  store: TimedProbe;
} {
  const { redis, redisCluster } = o;
  const probe = (check: () => Promise<unknown>) => new TimedProbe({ check, now: monotonic }, { deadlineMs: PROBE_DEADLINE_MS, cacheMs: PROBE_CACHE_MS });
  return {
    redis: redis === undefined ? undefined : probe(() => redis.client.ping()),
    redisCluster: redisCluster === undefined ? undefined : probe(() => Promise.all(redisCluster.client.nodes('master').map((shard) => shard.ping()))),
    store: probe(() => o.store.ping()),
  };
}
