import type { Logger } from 'pino';
import { MemoryBroker } from '../broker/memory-broker.js';
import type { Broker, BrokerBounds } from '../broker/broker.js';
import type { Bus } from '../bus/bus.js';
import { MemoryBus } from '../bus/memory-bus.js';
import { RedisBus } from '../bus/redis-bus.js';
import { RedisBroker } from '../broker/redis-broker.js';
import { Redis } from 'ioredis';
import type { Config } from '../config/schema.js';
import { openSqliteStore } from '../store/sqlite.js';
import type { Store } from '../store/stores.js';
import type { Lifecycle } from './area.js';

/** A node's presence in a shared broker lasts this long unless refreshed (every third of it). */
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
});

/** What the nodes of a cluster share (one node: the same interfaces, in this process). */
export interface SharedState extends Lifecycle {
  store: Store;
  bus: Bus;
  broker: Broker;
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
 * Opens the store, the bus and the broker: SQLite, memory and memory by default; what the caller
 * supplies instead (tests, a cluster) is used and left open at `stop`.
 */
export async function openShared(config: Config, deps: SharedDeps, log: Logger): Promise<SharedState> {
  const store = deps.store ?? (await openSqliteStore(config.sqliteFile));
  const redis = config.redisUrl === undefined ? undefined : await connectShared(config.redisUrl, config, log);
  const bus = deps.bus ?? redis?.bus ?? new MemoryBus(log.child({ module: 'bus' }));
  const clustered = deps.broker !== undefined || redis !== undefined;
  const presenceTtlMs = clustered ? PRESENCE_TTL_MS : SINGLE_NODE_PRESENCE_MS;
  const broker = deps.broker ?? redis?.broker ?? new MemoryBroker(brokerBounds(config, presenceTtlMs));
  return {
    store,
    bus,
    broker,
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

/** Keys and the bus channel of one deployment in a Redis it may share with others. */
const REDIS_PREFIX = 'tabwire:';

/** The Redis side of a cluster: a command connection (broker, bus publishing) and a subscriber connection (bus). */
async function connectShared(url: string, config: Config, log: Logger): Promise<{ broker: Broker; bus: RedisBus; close(): Promise<void> }> {
  const commands = new Redis(url, { lazyConnect: true });
  const subscriber = new Redis(url, { lazyConnect: true });
  for (const connection of [commands, subscriber]) connection.on('error', (err: unknown) => log.warn({ err }, 'redis connection error'));
  await Promise.all([commands.connect(), subscriber.connect()]);
  const bus = new RedisBus(commands, subscriber, REDIS_PREFIX, log.child({ module: 'bus' }));
  await bus.started();
  return {
    broker: new RedisBroker(commands, brokerBounds(config, PRESENCE_TTL_MS), REDIS_PREFIX),
    bus,
    async close() {
      commands.disconnect();
      subscriber.disconnect();
    },
  };
}
