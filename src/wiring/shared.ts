import type { Logger } from 'pino';
import { MemoryBroker } from '../broker/memory-broker.js';
import type { Broker, BrokerBounds } from '../broker/broker.js';
import type { Bus } from '../bus/bus.js';
import { randomUUID } from 'node:crypto';
import { RedisBroker } from '../broker/redis-broker.js';
import { createBus, createLeases } from '../cluster/factories.js';
import type { LeaseFactory } from '../lease/lease.js';
import { connectRedis, type RedisConnection } from '../redis/connection.js';
import type { Config } from '../config/schema.js';
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
  /** Leases (one holder per cluster for the XMPP connection and the purge; on one node always this one). */
  leases: LeaseFactory;
  /** This process among the nodes of a cluster (presence, leases): unique per start. */
  nodeId: string;
  /** How long the broker keeps this node's presence without a refresh; refreshed every third of it when shared. */
  presenceTtlMs: number;
  /** True when the broker is shared with other nodes (its presence must be refreshed). */
  clustered: boolean;
}

export interface SharedDeps {
  store?: Store;
  bus?: Bus;
  broker?: Broker;
}

/**
 * Opens the store, the bus, the broker and the leases: SQLite and memory by default, Redis with
 * `redisUrl` (docs/deployment.md); what the caller supplies instead (tests) is used and left open at `stop`.
 */
export async function openShared(config: Config, deps: SharedDeps, log: Logger): Promise<SharedState> {
  const nodeId = randomUUID();
  const store = deps.store ?? (await openStore(config, log.child({ module: 'store' })));
  const redis = config.redisUrl === undefined ? undefined : connectRedis(config.redisUrl, log, { prefix: config.redisKeyPrefix });
  const bus = deps.bus ?? (await createBus(redis, log));
  const clustered = deps.broker !== undefined || redis !== undefined;
  const presenceTtlMs = clustered ? PRESENCE_TTL_MS : SINGLE_NODE_PRESENCE_MS;
  const bounds = brokerBounds(config, presenceTtlMs);
  // The presence refresh has a connection of its own, so the node's events never queue behind it. The
  // broker announces each event itself (on Redis: in the script that appends it) and listens through the
  // connection's subscriber, subscribed before the node serves.
  const brokerLog = log.child({ module: 'broker' });
  const broker =
    deps.broker ??
    (redis
      ? await RedisBroker.open(redis, bounds, { refreshConnection: redis.duplicate('presence'), log: brokerLog })
      : new MemoryBroker(bounds, brokerLog));
  return {
    store,
    bus,
    broker,
    redis,
    leases: createLeases({ redis, nodeId }),
    nodeId,
    presenceTtlMs,
    clustered,
    start() {},
    async stop() {
      if (!deps.broker) await broker.close();
      if (!deps.bus) await bus.close();
      await redis?.close();
      if (!deps.store) await store.close();
    },
  };
}
