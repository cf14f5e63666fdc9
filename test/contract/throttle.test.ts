import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { MemoryLoginThrottle } from '../../src/throttle/memory-throttle.js';
import { RedisLoginThrottle } from '../../src/throttle/redis-throttle.js';
import type { LoginThrottle } from '../../src/throttle/throttle.js';
import { systemClock } from '../../src/clock.js';
import type { RedisConnection } from '../../src/redis/connection.js';
import { startRedis, testConnection, testPrefix } from '../helpers/redis.js';
import { stateBackends, twoNodes } from '../helpers/state-backends.js';
import { until } from '../helpers/until.js';

const silent = pino({ level: 'silent' });
const LIMIT = 5;
const WINDOW_MS = 400;

const redisThrottle = (redis: RedisConnection, limit: number, windowMs: number) =>
  new RedisLoginThrottle({ redis, clock: systemClock, log: silent }, { name: 'account', limit, windowMs });

const backends = stateBackends<LoginThrottle, { limit: number; windowMs: number }>('throttle', {
  memory: ({ limit, windowMs }) => {
    const throttle = new MemoryLoginThrottle(systemClock, limit, windowMs);
    return () => throttle;
  },
  redis: (redis, _nodeId, { limit, windowMs }) => redisThrottle(redis, limit, windowMs),
});

let keyCount = 0;
const freshKey = () => `account:user${++keyCount}`;

describe.each(backends)('LoginThrottle contract: $name', (backend) => {
  /** The throttle of one node of a fresh cluster. */
  const open = (limit: number, windowMs: number) => backend.cluster({ limit, windowMs })('node-a');

  it('grants `limit` slots, then answers the rest of the window and takes nothing', async () => {
    const throttle = open(LIMIT, 60_000);
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
    const throttle = open(LIMIT, 60_000);
    const key = freshKey();
    const answers = await Promise.all(Array.from({ length: 50 }, () => throttle.take(key)));
    expect(answers.filter((a) => a === 0)).toHaveLength(LIMIT);
  });

  it('reset forgets the key; other keys are counted apart', async () => {
    const throttle = open(2, 60_000);
    const [key, other] = [freshKey(), freshKey()];
    await throttle.take(key);
    await throttle.take(key);
    expect(await throttle.take(key)).toBeGreaterThan(0);
    expect(await throttle.take(other)).toBe(0);
    await throttle.reset(key);
    expect(await throttle.take(key)).toBe(0);
  });

  it('a new window starts when the old one ends', async () => {
    const throttle = open(1, WINDOW_MS);
    const key = freshKey();
    const started = performance.now();
    expect(await throttle.take(key)).toBe(0);
    const second = await throttle.take(key);
    // Both takes fell in the first window unless this machine stalled for a whole window between them.
    if (performance.now() - started < WINDOW_MS) expect(second).toBeGreaterThan(0);
    await until(async () => (await throttle.take(key)) === 0, 'a slot in the next window');
  });

  it('two nodes of a cluster share the limit: the limit is the limit, not 2 × it', async () => {
    const { a: nodeA, b: nodeB } = twoNodes(backend, { limit: LIMIT, windowMs: 60_000 });
    const key = freshKey();
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => (i % 2 ? nodeA : nodeB).take(key)));
    expect(answers.filter((a) => a === 0)).toHaveLength(LIMIT);
    expect(await nodeA.take(key)).toBeGreaterThan(0);
    // A correct password on node B clears it for node A too.
    await nodeB.reset(key);
    expect(await nodeA.take(key)).toBe(0);
  });
});

describe('Redis login throttle', () => {
  it('while Redis is down each node still throttles, on its own, without waiting for Redis', async () => {
    const server = await startRedis();
    const redis = testConnection(server.url, testPrefix('throttle-outage'));
    try {
      const throttle = redisThrottle(redis, 2, 60_000);
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
