/**
 * Where one node and a cluster part ways: each factory answers the memory implementation without a
 * Redis connection and the Redis one with it (docs/redis.md). The rest of the code sees interfaces only.
 */
import type { FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import type { Logger } from 'pino';
import type { HandlerRegistry } from '../agent/handlers.js';
import type { InboundMessage } from '../protocol/xmpp-message.js';
import { MemoryHandlerRegistry } from '../agent/memory-handlers.js';
import { MemoryLoginThrottle } from '../agent/memory-throttle.js';
import { RedisHandlerRegistry } from './redis-handlers.js';
import { RedisLoginThrottle } from './redis-throttle.js';
import type { LoginThrottle } from '../agent/throttle.js';
import type { Bus } from '../bus/bus.js';
import { MemoryBus } from '../bus/memory-bus.js';
import { RedisBus } from '../bus/redis-bus.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config/schema.js';
import { redisRateLimitStore } from './redis-rate-limit-store.js';
import { LeaderRunner, runOncePerCluster, type ClusterJob } from '../lease/leader.js';
import type { LeaseFactory } from '../lease/lease.js';
import { MemoryLeaseTable } from '../lease/memory-lease.js';
import { RedisLease } from '../lease/redis-lease.js';
import type { RedisConnection } from '../redis/connection.js';
import { XmppComponent } from '../xmpp/component.js';
import { LeasedXmppComponent, XMPP_LEASE_TTL_MS } from '../xmpp/leased-component.js';

/** The bus: in-process without Redis, Redis pub/sub with it (subscribed before it is returned). */
export async function createBus(redis: RedisConnection | undefined, log: Logger): Promise<Bus> {
  const busLog = log.child({ module: 'bus' });
  return redis ? RedisBus.open(redis, busLog) : new MemoryBus(busLog);
}

export interface Limits {
  /** Login attempts per user name (docs/agent-api.md "Throttling"). */
  accountThrottle: LoginThrottle;
  /** Login attempts per client address. */
  addressThrottle: LoginThrottle;
  /** For request-limits.ts `store`: undefined means the plugin's memory store. */
  rateLimitStore: FastifyRateLimitStoreCtor | undefined;
}

/**
 * The login throttles and the request rate limiter's store. With Redis, counted across the cluster;
 * during a Redis outage both fall back to counting on each node (docs/redis.md "During a Redis outage").
 */
export function createLimits(o: { redis: RedisConnection | undefined; clock: Clock; config: Config; log: Logger }): Limits {
  const windowMs = o.config.loginThrottleWindowSeconds * 1000;
  const log = o.log.child({ module: 'limits' });
  if (!o.redis) {
    return {
      accountThrottle: new MemoryLoginThrottle(o.clock, o.config.loginAttemptsPerAccount, windowMs),
      addressThrottle: new MemoryLoginThrottle(o.clock, o.config.loginAttemptsPerAddress, windowMs),
      rateLimitStore: undefined,
    };
  }
  const redis = o.redis;
  const throttle = (name: string, limit: number) => new RedisLoginThrottle({ redis, name, limit, windowMs, clock: o.clock, log });
  return {
    accountThrottle: throttle('account', o.config.loginAttemptsPerAccount),
    addressThrottle: throttle('address', o.config.loginAttemptsPerAddress),
    rateLimitStore: redisRateLimitStore(redis, log),
  };
}

/**
 * The XMPP event handler registry. With Redis, registrations expire `tabBindingRetentionSeconds` after
 * the last register or `touchTabs` (call it with the node's live tabs from the binding-refresh timer,
 * every retention / 4), so a dead node's handlers go with its tab bindings.
 */
export function createHandlerRegistry(o: { redis: RedisConnection | undefined; config: Config; log: Logger }): HandlerRegistry {
  if (!o.redis) return new MemoryHandlerRegistry(o.config.handlersPerTab);
  return new RedisHandlerRegistry({
    redis: o.redis,
    maxPerTab: o.config.handlersPerTab,
    ttlMs: o.config.tabBindingRetentionSeconds * 1000,
    log: o.log.child({ module: 'agent:handlers' }),
  });
}

/** Leases held by `nodeId`: in Redis for a cluster; without Redis in a table of this process (one node always holds them). */
export function createLeases(o: { redis: RedisConnection | undefined; nodeId: string; table?: MemoryLeaseTable }): LeaseFactory {
  const { redis } = o;
  if (redis) return (name, ttlMs) => new RedisLease(redis, name, o.nodeId, ttlMs);
  const table = o.table ?? new MemoryLeaseTable();
  return (name, ttlMs) => table.lease(name, o.nodeId, ttlMs);
}

/** Lease names; every node of a deployment uses the same ones. */
export const LEASES = {
  xmppComponent: 'xmpp-component',
  retentionPurge: 'retention-purge',
  resultOutbox: 'result-outbox',
} as const;

/** The purge needs no quick fail-over: a missed run is done by the next holder's first interval. */
const PURGE_LEASE_TTL_MS = 30_000;

/**
 * The retention purge on one node of the cluster (the lease holder) instead of every node; returns
 * the runner to `start()` in place of `purge.start(interval)` and to `stop()` at shutdown.
 */
export function createPurgeRunner(o: { leases: LeaseFactory; purge: { start(intervalMs: number): void; stop(): Promise<void> }; intervalMs: number; log: Logger }): LeaderRunner {
  const job: ClusterJob = { start: () => o.purge.start(o.intervalMs), stop: () => o.purge.stop() };
  return runOncePerCluster(o.leases(LEASES.retentionPurge, PURGE_LEASE_TTL_MS), job, o.log);
}

/**
 * Short, so that when the holder dies with results owed (the case the outbox is for), another node
 * publishes them within seconds: the hold ends at most this long after the last renewal.
 */
const RESULT_OUTBOX_LEASE_TTL_MS = 6_000;

/** The result outbox's sweep on one node of the cluster (the lease holder); `start()` / `stop()` the runner. */
export function createResultOutboxRunner(o: { leases: LeaseFactory; outbox: { start(intervalMs: number): void; stop(): Promise<void> }; intervalMs: number; log: Logger }): LeaderRunner {
  const job: ClusterJob = { start: () => o.outbox.start(o.intervalMs), stop: () => o.outbox.stop() };
  return runOncePerCluster(o.leases(LEASES.resultOutbox, RESULT_OUTBOX_LEASE_TTL_MS), job, o.log);
}

/**
 * The XMPP server connection of the cluster: this node connects only while it holds the
 * `xmpp-component` lease; sends from any node reach the holder over the bus. `start()` it (not
 * awaited by anything), `stop()` at shutdown; it is the Messaging link and the router's bouncer.
 */
export function createXmppConnection(o: {
  config: Config;
  leases: LeaseFactory;
  bus: Bus;
  nodeId: string;
  log: Logger;
  onMessage: (message: InboundMessage) => Promise<void>;
}): LeasedXmppComponent | undefined {
  if (o.config.xmppService === undefined) return undefined;
  const component = new XmppComponent({
    service: o.config.xmppService,
    domain: o.config.xmppComponentDomain,
    password: o.config.xmppComponentSecret!,
    log: o.log,
    onMessage: o.onMessage,
  });
  return new LeasedXmppComponent({ component, lease: o.leases(LEASES.xmppComponent, XMPP_LEASE_TTL_MS), bus: o.bus, nodeId: o.nodeId, log: o.log });
}
