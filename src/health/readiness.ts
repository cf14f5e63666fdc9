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
  redisCluster: { any: TimedProbe; all: TimedProbe } | undefined;
  store: TimedProbe;
} {
  const { redis, redisCluster } = o;
  const probe = (check: () => Promise<unknown>) => new TimedProbe({ check, now: monotonic }, { deadlineMs: PROBE_DEADLINE_MS, cacheMs: PROBE_CACHE_MS });
  return {
    redis: redis === undefined ? undefined : probe(() => redis.client.ping()),
    redisCluster:
      redisCluster === undefined
        ? undefined
        : {
            // Some primary answers: the node can serve the tabs of the shards that do.
            any: probe(() => Promise.any(redisCluster.client.nodes('master').map((shard) => shard.ping()))),
            // Every primary that owns slots is connected and answers (one that is away leaves the client's pool).
            all: probe(() => everyPrimaryAnswers(redisCluster)),
          },
    store: probe(() => o.store.ping()),
  };
}

/** Resolves when every primary that owns slots in the client's slot table is in its pool and answers PING. */
async function everyPrimaryAnswers(cluster: RedisClusterConnection): Promise<void> {
  const owners = new Set<string>();
  for (const keys of cluster.client.slots) if (keys?.[0]) owners.add(keys[0]);
  const pool = cluster.client.nodes('master');
  const inPool = new Set(pool.map((shard) => `${shard.options.host}:${shard.options.port}`));
  const missing = [...owners].filter((owner) => !inPool.has(owner));
  if (owners.size === 0 || missing.length > 0) throw new Error(`primaries not connected: ${missing.join(', ') || 'no slot table'}`);
  await Promise.all(pool.map((shard) => shard.ping()));
}
