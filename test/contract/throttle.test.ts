import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { MemoryLoginThrottle } from '../../src/agent/memory-throttle.js';
import { RedisLoginThrottle } from '../../src/agent/redis-throttle.js';
import type { LoginThrottle } from '../../src/agent/throttle.js';
import { systemClock } from '../../src/clock.js';
import type { RedisConnection } from '../../src/redis/connection.js';
import { startRedis, testConnection, testPrefix } from '../helpers/redis.js';
import { until } from '../helpers/until.js';

const silent = pino({ level: 'silent' });
const LIMIT = 5;
const WINDOW_MS = 400;

/** Makes throttles that count together (the nodes of one cluster, or the one node). */
interface Backend {
  name: string;
  open(): Promise<{ throttle: (limit?: number, windowMs?: number) => LoginThrottle; close(): Promise<void> }>;
}

const redisThrottles = (redis: RedisConnection) => (limit = LIMIT, windowMs = WINDOW_MS) =>
  new RedisLoginThrottle({ redis, name: 'account', limit, windowMs, clock: systemClock, log: silent });

const backends: Backend[] = [
  { name: 'memory', open: async () => ({ throttle: (limit = LIMIT, windowMs = WINDOW_MS) => new MemoryLoginThrottle(systemClock, limit, windowMs), close: async () => undefined }) },
  {
    name: 'redis',
    open: async () => {
      const redis = testConnection(inject('redisUrl'), testPrefix('throttle'));
      return { throttle: redisThrottles(redis), close: () => redis.close() };
    },
  },
];

let keyCount = 0;
const freshKey = () => `account:user${++keyCount}`;

describe.each(backends)('LoginThrottle contract: $name', ({ open }) => {
  let backend: Awaited<ReturnType<Backend['open']>>;
  beforeAll(async () => {
    backend = await open();
  });
  afterAll(async () => backend.close());

  it('grants `limit` slots, then answers the rest of the window and takes nothing', async () => {
    const throttle = backend.throttle(LIMIT, 60_000);
    const key = freshKey();
    for (let i = 0; i < LIMIT; i++) expect(await throttle.take(key)).toBe(0);
    const wait = await throttle.take(key);
    expect(wait).toBeGreaterThanOrEqual(1);
    expect(wait).toBeLessThanOrEqual(60_000);
    // A refused take took nothing: one release makes exactly one slot.
    await throttle.release(key);
    expect(await throttle.take(key)).toBe(0);
    expect(await throttle.take(key)).toBeGreaterThan(0);
  });

  it('is atomic: 50 concurrent takes on one key are granted exactly `limit` times', async () => {
    const throttle = backend.throttle(LIMIT, 60_000);
    const key = freshKey();
    const answers = await Promise.all(Array.from({ length: 50 }, () => throttle.take(key)));
    expect(answers.filter((a) => a === 0)).toHaveLength(LIMIT);
  });

  it('reset forgets the key; other keys are counted apart', async () => {
    const throttle = backend.throttle(2, 60_000);
    const [key, other] = [freshKey(), freshKey()];
    await throttle.take(key);
    await throttle.take(key);
    expect(await throttle.take(key)).toBeGreaterThan(0);
    expect(await throttle.take(other)).toBe(0);
    await throttle.reset(key);
    expect(await throttle.take(key)).toBe(0);
  });

  it('a new window starts when the old one ends', async () => {
    const throttle = backend.throttle(1, WINDOW_MS);
    const key = freshKey();
    expect(await throttle.take(key)).toBe(0);
    expect(await throttle.take(key)).toBeGreaterThan(0);
    await until(async () => (await throttle.take(key)) === 0, 'a slot in the next window');
  });
});

describe('Redis login throttle in a cluster', () => {
  it('two nodes on one Redis share the limit: the limit is the limit, not 2 × it', async () => {
    const prefix = testPrefix('throttle-cluster');
    const [redisA, redisB] = [testConnection(inject('redisUrl'), prefix), testConnection(inject('redisUrl'), prefix)];
    try {
      const [nodeA, nodeB] = [redisThrottles(redisA)(LIMIT, 60_000), redisThrottles(redisB)(LIMIT, 60_000)];
      const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => (i % 2 ? nodeA : nodeB).take('account:frank')));
      expect(answers.filter((a) => a === 0)).toHaveLength(LIMIT);
      expect(await nodeA.take('account:frank')).toBeGreaterThan(0);
      // A correct password on node B clears it for node A too.
      await nodeB.reset('account:frank');
      expect(await nodeA.take('account:frank')).toBe(0);
    } finally {
      await Promise.all([redisA.close(), redisB.close()]);
    }
  });

  it('while Redis is down each node still throttles, on its own, without waiting for Redis', async () => {
    const server = await startRedis();
    const redis = testConnection(server.url, testPrefix('throttle-outage'));
    try {
      const throttle = redisThrottles(redis)(2, 60_000);
      expect(await throttle.take('k')).toBe(0);
      await server.stopServer();
      await until(() => redis.down, 'the connection to notice');
      // The node-local fallback counts from zero: the limit holds per node during the outage.
      expect(await throttle.take('k')).toBe(0);
      expect(await throttle.take('k')).toBe(0);
      expect(await throttle.take('k')).toBeGreaterThan(0);
      await server.start();
      await until(() => redis.ready, 'the reconnection');
      // Back on Redis (which lost its counters with the restart: no persistence configured here).
      expect(await throttle.take('k')).toBe(0);
    } finally {
      await redis.close();
      await server.stop();
    }
  });
});
