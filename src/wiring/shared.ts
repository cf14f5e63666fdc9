/**
 * Where one node and a cluster part ways, in one file: each piece of node-local state answers its memory
 * implementation without a Redis connection and its Redis one with it (docs/redis.md, docs/architecture.md
 * "State with a memory and a Redis home"). The rest of the code sees interfaces only.
 */
import type { Logger } from 'pino';
import { MemoryBroker } from '../broker/memory-broker.js';
import type { Broker, BrokerBounds } from '../broker/broker.js';
import type { Bus } from '../bus/bus.js';
import { MemoryBus } from '../bus/memory-bus.js';
import { RedisBus } from '../bus/redis-bus.js';
import { randomUUID } from 'node:crypto';
import { RedisBroker } from '../broker/redis-broker.js';
import { systemClock, type Clock } from '../clock.js';
import type { HandlerRegistry } from '../handlers/handlers.js';
import { MemoryHandlerRegistry } from '../handlers/memory-handlers.js';
import { RedisHandlerRegistry } from '../handlers/redis-handlers.js';
import type { LeaseFactory } from '../lease/lease.js';
import { MemoryLeaseTable } from '../lease/memory-lease.js';
import { RedisLease } from '../lease/redis-lease.js';
import { rateLimitStoreByLimit, type RateLimitStore } from '../rate-limit/rate-limit-store.js';
import { redisRateLimitStore } from '../rate-limit/redis-rate-limit-store.js';
import { syncedRateLimitStore } from '../rate-limit/synced-rate-limit-store.js';
import { connectRedisCluster, type RedisClusterConnection } from '../redis/cluster-connection.js';
import { connectRedis, type RedisConnection } from '../redis/connection.js';
import type { Config } from '../config/schema.js';
import { MemoryLoginThrottle } from '../throttle/memory-throttle.js';
import { RedisLoginThrottle } from '../throttle/redis-throttle.js';
import type { LoginThrottle } from '../throttle/throttle.js';
import { openStore } from '../store/open.js';
import type { Store } from '../store/stores.js';
import type { Lifecycle } from './area.js';
import { DEFAULT_ROLL_MS } from '../hub/presence-keeper.js';

/** A node's presence in a shared broker lasts this long unless its heartbeat goes on (every third of it). */
export const PRESENCE_TTL_MS = 30_000;
/** One node's broker is told of every change at once, so its presence needs no expiry. */
const SINGLE_NODE_PRESENCE_MS = 1e12;

/** The stream bounds of the configuration (docs/events.md "Event streams"). */
export const brokerBounds = (config: Config, presenceTtlMs: number): BrokerBounds => ({
  limit: config.outboxLimit,
  maxAgeMs: config.outboxMaxAgeSeconds * 1000,
  presenceTtlMs,
  // A stream nobody holds waits this long for its session to come back (a reload, a moment offline).
  idleStreamMs: Math.max(config.tabIdleSeconds, config.outboxMaxAgeSeconds) * 1000,
  // Four times the time in which nodes hold each of their tabs again.
  keepAliveMs: 4 * DEFAULT_ROLL_MS,
});

/** What the nodes of a cluster share (one node: the same interfaces, in this process). */
export interface SharedState extends Lifecycle {
  store: Store;
  bus: Bus;
  broker: Broker;
  /** The Redis connection of a cluster (undefined on one node). */
  redis: RedisConnection | undefined;
  /** The Redis Cluster of the event streams and presence, with `redisClusterUrls` (else they are on `redis`). */
  redisCluster: RedisClusterConnection | undefined;
  /** Leases (one holder per cluster for the XMPP connection and the purge; on one node always this one). */
  leases: LeaseFactory;
  /** This process among the nodes of a cluster (presence, leases): unique per start. */
  nodeId: string;
  /** How long the broker keeps this node's presence without a refresh; refreshed every third of it when shared. */
  presenceTtlMs: number;
  /** True when the broker is shared with other nodes (its presence must be refreshed). */
  clustered: boolean;
  /** The XMPP event handlers of every tab (RegisterEventHandler). */
  handlers: HandlerRegistry;
  /** Login throttles and the request rate limiter's store. */
  limits: Limits;
}

export interface SharedDeps {
  store?: Store;
  bus?: Bus;
  broker?: Broker;
  /** What the login throttles time their windows by (default: the system clock). */
  clock?: Clock;
}

/**
 * Opens the store, the bus, the broker, the leases, the handler registry and the limits: SQLite and memory
 * by default, Redis with `redisUrl` (docs/deployment.md); what the caller supplies instead (tests) is used
 * and left open at `stop`.
 */
export async function openShared(config: Config, deps: SharedDeps, log: Logger): Promise<SharedState> {
  const nodeId = randomUUID();
  const store = deps.store ?? (await openStore(config, log.child({ module: 'store' })));
  const redis = config.redisUrl === undefined ? undefined : connectRedis(config.redisUrl, log, { prefix: config.redisKeyPrefix });
  const bus = deps.bus ?? (await createBus(redis, nodeId, log));
  const clustered = deps.broker !== undefined || redis !== undefined;
  const presenceTtlMs = clustered ? PRESENCE_TTL_MS : SINGLE_NODE_PRESENCE_MS;
  const bounds = brokerBounds(config, presenceTtlMs);
  // The presence refresh has a connection of its own, so the node's events never queue behind it. The
  // broker announces each event itself (on Redis: in the script that appends it, to the nodes that hold the
  // tab) and listens on this node's channel through the connection's subscriber, subscribed before the node serves.
  const brokerLog = log.child({ module: 'broker' });
  // With `redisClusterUrls` the streams and the presence go on a Redis Cluster, and only there.
  const redisCluster = redis && config.redisClusterUrls ? connectRedisCluster(config.redisClusterUrls, log, { prefix: config.redisKeyPrefix }) : undefined;
  const streams = redisCluster ?? redis;
  const broker =
    deps.broker ??
    (streams
      ? await RedisBroker.open(streams, bounds, { node: nodeId, refreshConnection: streams.duplicate('presence'), log: brokerLog })
      : new MemoryBroker(bounds, brokerLog));
  const limits = createLimits({ redis, clock: deps.clock ?? systemClock, log }, config);
  return {
    store,
    bus,
    broker,
    redis,
    redisCluster,
    leases: createLeases({ redis, nodeId }),
    nodeId,
    presenceTtlMs,
    clustered,
    handlers: createHandlerRegistry({ redis, log }, config),
    limits,
    start() {},
    async stop() {
      limits.stop();
      if (!deps.broker) await broker.close();
      if (!deps.bus) await bus.close();
      await redisCluster?.close();
      await redis?.close();
      if (!deps.store) await store.close();
    },
  };
}

/** The bus: in-process without Redis, Redis pub/sub with it (`node`'s channel, subscribed before it is returned). */
export async function createBus(redis: RedisConnection | undefined, node: string, log: Logger): Promise<Bus> {
  const busLog = log.child({ module: 'bus' });
  return redis ? RedisBus.open(redis, node, busLog) : new MemoryBus(busLog);
}

/** Leases held by `nodeId`: in Redis for a cluster; without Redis in a table of this process (one node always holds them). */
export function createLeases({ redis, nodeId, table }: { redis: RedisConnection | undefined; nodeId: string; table?: MemoryLeaseTable }): LeaseFactory {
  if (redis) return (name, ttlMs) => new RedisLease(redis, name, nodeId, ttlMs);
  const local = table ?? new MemoryLeaseTable();
  return (name, ttlMs) => local.lease(name, nodeId, ttlMs);
}

export interface Limits {
  /** Login attempts per user name (docs/agent-api.md "Throttling"). */
  accountThrottle: LoginThrottle;
  /** Login attempts per client address. */
  addressThrottle: LoginThrottle;
  /** For request-limits.ts `store`: undefined means the plugin's memory store. */
  rateLimitStore: RateLimitStore | undefined;
  /** Cluster: pushes the QR limits' unpushed counts now (the background does it every `rateLimitSyncMs`). */
  syncRateLimits(): Promise<void>;
  /** Stops the background sync (before the Redis connection closes). */
  stop(): void;
}

/**
 * The login throttles and the request rate limiter's store. With Redis, counted across the cluster: the
 * QR limits on each node, synced in the background within a bound; the other request limits and the
 * login throttles exactly, in Redis, per request (docs/redis.md "Limits"). During a Redis outage all fall
 * back to counting on each node (docs/redis.md "During a Redis outage").
 */
export function createLimits(
  { redis, clock, log }: { redis: RedisConnection | undefined; clock: Clock; log: Logger },
  config: Pick<Config, 'loginThrottleWindowSeconds' | 'loginAttemptsPerAccount' | 'loginAttemptsPerAddress' | 'rateLimitSyncMs'>,
): Limits {
  const windowMs = config.loginThrottleWindowSeconds * 1000;
  if (!redis) {
    return {
      accountThrottle: new MemoryLoginThrottle(clock, config.loginAttemptsPerAccount, windowMs),
      addressThrottle: new MemoryLoginThrottle(clock, config.loginAttemptsPerAddress, windowMs),
      rateLimitStore: undefined,
      syncRateLimits: async () => {},
      stop() {},
    };
  }
  const limitsLog = log.child({ module: 'limits' });
  const throttle = (name: string, limit: number) => new RedisLoginThrottle({ redis, clock, log: limitsLog }, { name, limit, windowMs });
  const synced = syncedRateLimitStore({ redis, clock, log: limitsLog }, { syncMs: config.rateLimitSyncMs });
  return {
    accountThrottle: throttle('account', config.loginAttemptsPerAccount),
    addressThrottle: throttle('address', config.loginAttemptsPerAddress),
    // The QR limits are the hot path (every refresh of every waiting page); the rest are rare and stay exact.
    rateLimitStore: rateLimitStoreByLimit({ qr_session: synced.store, qr_address: synced.store }, redisRateLimitStore(redis, limitsLog)),
    syncRateLimits: synced.syncNow,
    stop: synced.stop,
  };
}

/**
 * The XMPP event handler registry. With Redis, registrations expire `tabBindingRetentionSeconds` after
 * the last register or `touchTabs` (the events area calls it with the node's live tabs from the
 * binding-refresh timer, every retention / 4), so a dead node's handlers go with its tab bindings.
 */
export function createHandlerRegistry(
  { redis, log }: { redis: RedisConnection | undefined; log: Logger },
  config: Pick<Config, 'handlersPerTab' | 'tabBindingRetentionSeconds'>,
): HandlerRegistry {
  if (!redis) return new MemoryHandlerRegistry(config.handlersPerTab);
  return new RedisHandlerRegistry(
    { redis, log: log.child({ module: 'agent:handlers' }) },
    { maxPerTab: config.handlersPerTab, ttlMs: config.tabBindingRetentionSeconds * 1000 },
  );
}

/** Lease names; every node of a deployment uses the same ones. */
export const LEASES = {
  xmppComponent: 'xmpp-component',
  retentionPurge: 'retention-purge',
  resultOutbox: 'result-outbox',
} as const;
