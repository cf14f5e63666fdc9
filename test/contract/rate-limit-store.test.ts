import type { FastifyRateLimitStore, FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import { createRequire } from 'node:module';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { redisRateLimitStore } from '../../src/rate-limit/redis-rate-limit-store.js';
import { startRedis, testConnection, testPrefix } from '../helpers/redis.js';
import { stateBackends, twoNodes } from '../helpers/state-backends.js';
import { until } from '../helpers/until.js';

/**
 * The request rate limits' store (`@fastify/rate-limit`'s store contract, src/http/request-limits.ts): the
 * plugin's own memory store on one node, src/rate-limit/redis-rate-limit-store.ts in a cluster. Both count the
 * hits of a key in a fixed window and answer the count and the time left, each limit apart (the plugin
 * makes one child store per limiter), so the limits answer alike on one node and on many.
 */
const silent = pino({ level: 'silent' });
/** The store the plugin uses when none is given (its package has no exports map, so the file is reachable). */
const LocalStore = createRequire(import.meta.url)('@fastify/rate-limit/store/LocalStore.js') as new (
  continueExceeding: boolean,
  exponentialBackoff: boolean,
  cache: number,
) => FastifyRateLimitStore;

/** One node's limiters by name: as the plugin does for each `createRateLimit`, one child of the node's store per limit. */
type Limits = (limitName: string) => FastifyRateLimitStore;

function limitsOf(store: FastifyRateLimitStore): Limits {
  const children = new Map<string, FastifyRateLimitStore>();
  return (limitName) => {
    let child = children.get(limitName);
    if (!child) {
      // What request-limits.ts passes (with the plugin's merged route options, which these stores do not read).
      const options = { limitName, cache: 5_000, continueExceeding: false, exponentialBackoff: false };
      child = store.child(options as unknown as Parameters<FastifyRateLimitStore['child']>[0]);
      children.set(limitName, child);
    }
    return child;
  };
}

const redisStore = (Store: FastifyRateLimitStoreCtor): FastifyRateLimitStore => new Store({});

const backends = stateBackends<Limits>('rate', {
  memory: () => {
    const limits = limitsOf(new LocalStore(false, false, 5_000));
    return () => limits;
  },
  redis: (redis) => limitsOf(redisStore(redisRateLimitStore(redis, silent))),
});

/**
 * One hit of `key`: the count in its window and the milliseconds left of it, as the plugin reads them in
 * the callback (the memory store answers with its own record, which later hits change).
 */
function hit(store: FastifyRateLimitStore, key: string, windowMs = 60_000, max = 1_000): Promise<{ current: number; ttl: number }> {
  return new Promise((resolve, reject) =>
    store.incr(key, (err, result) => (err || !result ? reject(err ?? new Error('no result')) : resolve({ current: result.current, ttl: result.ttl })), windowMs, max),
  );
}

let keyCount = 0;
const freshKey = () => `192.0.2.${++keyCount}`;

describe.each(backends)('rate-limit store contract: $name', (backend) => {
  const limits = () => backend.cluster()('node-a');

  it("counts a key's hits in its window and answers the time left of it", async () => {
    const qr = limits()('qr_address');
    const key = freshKey();
    const answers = [await hit(qr, key), await hit(qr, key), await hit(qr, key)];
    expect(answers.map((a) => a.current)).toEqual([1, 2, 3]);
    for (const { ttl } of answers) {
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(60_000);
    }
  });

  it('counts each key, and each limit, apart', async () => {
    const node = limits();
    const [key, other] = [freshKey(), freshKey()];
    await hit(node('qr_address'), key);
    await hit(node('qr_address'), key);
    expect((await hit(node('qr_address'), other)).current).toBe(1);
    expect((await hit(node('registration_address'), key)).current).toBe(1);
    expect((await hit(node('qr_address'), key)).current).toBe(3);
  });

  it('counts concurrent hits exactly: 50 at once are numbered 1 to 50', async () => {
    const qr = limits()('qr_address');
    const key = freshKey();
    const answers = await Promise.all(Array.from({ length: 50 }, () => hit(qr, key)));
    expect(answers.map((a) => a.current).sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
  });

  it('starts counting again once the window ends', async () => {
    const qr = limits()('qr_address');
    const key = freshKey();
    expect((await hit(qr, key, 300)).current).toBe(1);
    // Polled, not timed: a loaded machine may take longer than the window between two hits.
    await until(async () => (await hit(qr, key, 300)).current === 1, 'a hit counted in a new window');
  });

  it('the nodes of a cluster count together: the limit is the limit, not N times it', async () => {
    const { a, b } = twoNodes(backend, undefined);
    const key = freshKey();
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => hit((i % 2 ? a : b)('qr_address'), key)));
    expect(answers.map((x) => x.current).sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  });
});

describe('Redis rate-limit store', () => {
  it('while Redis is down it counts on this node, without waiting for Redis; then in Redis again', async () => {
    const server = await startRedis();
    const redis = testConnection(server.url, testPrefix('rate-outage'));
    try {
      const qr = limitsOf(redisStore(redisRateLimitStore(redis, silent)))('qr_address');
      expect((await hit(qr, 'k')).current).toBe(1);
      expect((await hit(qr, 'k')).current).toBe(2);
      await server.stopServer();
      await until(() => redis.down, 'the connection to notice');
      // The node-local fallback counts from zero: the limit holds per node during the outage.
      expect((await hit(qr, 'k')).current).toBe(1);
      expect((await hit(qr, 'k')).current).toBe(2);
      await server.start();
      await until(() => redis.ready, 'the reconnection');
      // Back in Redis, which lost its counters with the restart (no persistence configured here).
      expect((await hit(qr, 'k')).current).toBe(1);
    } finally {
      await redis.close();
      await server.stop();
    }
  });
});
