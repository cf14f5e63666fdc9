import { afterAll, inject } from 'vitest';
import type { RedisConnection } from '../../src/redis/connection.js';
import { testConnection, testPrefix } from './redis.js';

/**
 * Node-local state with a memory and a Redis implementation (broker, bus, handler registry, leases,
 * throttles, the rate-limit store) is tested the way the store is (backends.ts `BACKENDS`): one contract
 * suite, run on every backend. A *cluster* is one fresh shared state (a memory object, or a fresh key
 * prefix on the run's Redis); each of its *nodes* is one implementation over it, on Redis with a
 * connection of its own, as two processes would have.
 */
export type StateBackendName = 'memory' | 'redis' | 'redis cluster';

/** The nodes of one cluster: `node('node-a')`, `node('node-b')` share state; each call is one more node. */
export type Node<T> = (nodeId: string) => T;

export interface StateBackend<T, O> {
  name: StateBackendName;
  /** A fresh cluster (nothing shared with any other) built with `options`; connections close after the file. */
  cluster(options: O): Node<T>;
}

/** How a contract's implementation is made on each backend. */
export interface Implementations<T, O> {
  /**
   * One cluster in memory: make the shared in-process object here, and return how a node sees it (often
   * the same object for every node: one process is one node).
   */
  memory(options: O): Node<T>;
  /** One node on Redis: `redis` is this node's own connection, under the cluster's key prefix. */
  redis(redis: RedisConnection, nodeId: string, options: O): T;
}

/**
 * The memory and the Redis backend of one contract (`label` names its keys):
 * `describe.each(stateBackends('bus', { memory: …, redis: … }))('Bus contract: $name', (backend) => …)`.
 * The Redis connections its clusters open are closed after the calling file's tests.
 */
export function stateBackends<T, O = void>(label: string, make: Implementations<T, O>): StateBackend<T, O>[] {
  const connections: RedisConnection[] = [];
  afterAll(async () => {
    await Promise.all(connections.splice(0).map((c) => c.close()));
  });
  return [
    { name: 'memory', cluster: (options) => make.memory(options) },
    {
      name: 'redis',
      cluster: (options) => {
        const prefix = testPrefix(label);
        return (nodeId) => {
          const redis = testConnection(inject('redisUrl'), prefix);
          connections.push(redis);
          return make.redis(redis, nodeId, options);
        };
      },
    },
  ];
}

/** Two nodes, `node-a` and `node-b`, of a fresh cluster on `backend`. */
export function twoNodes<T, O>(backend: StateBackend<T, O>, options: O): { a: T; b: T } {
  const node = backend.cluster(options);
  return { a: node('node-a'), b: node('node-b') };
}
