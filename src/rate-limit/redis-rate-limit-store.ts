import type { FastifyRateLimitStore } from '@fastify/rate-limit';
import type { Logger } from 'pino';
import type { RedisConnection } from '../redis/connection.js';
import { RedisScript } from '../redis/script.js';
import type { RateLimitStore } from './rate-limit-store.js';
import { outageNotice } from './outage-notice.js';

/** KEYS: counter. ARGV: window ms. The plugin's own Redis store does the same: INCR, the first hit starts the window. */
const INCR = new RedisScript(`
local current = redis.call('INCR', KEYS[1])
if current == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) return {current, tonumber(ARGV[1])} end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) ttl = tonumber(ARGV[1]) end
return {current, ttl}
`);

/** Keys counted on this node while Redis is unreachable, per limit; the oldest are forgotten first. */
const FALLBACK_KEYS = 50_000;

/** What request-limits.ts passes to `createRateLimit` beside the plugin's options: the limit's name. */
export interface NamedLimitOptions {
  limitName?: string;
}

/**
 * A `@fastify/rate-limit` store in Redis for a cluster: every node counts in one fixed-window counter
 * per limit and key, `<prefix>rate:<limit>:<key>` (TTL the window), so the limit is the limit, not N
 * times it. Not the plugin's `redis` option: its store names keys by route (`child()` uses the route's
 * method and URL), and limiters made with `createRateLimit` have no route, so the QR and registration
 * limits, both keyed by client address, would share one counter.
 *
 * Outage (docs/redis.md): while the connection is down, or when a command fails, the request is
 * counted on this node instead (fixed windows in memory), so limits still hold per node, at most
 * N × limit across N nodes, and no request waits for Redis or is refused because of it.
 */
export function redisRateLimitStore(redis: RedisConnection, log: Pick<Logger, 'warn' | 'info'>): RateLimitStore {
  const notice = outageNotice(log, 'request rate limits');
  const failed = (err: unknown) => notice.failed(err);
  const recovered = () => notice.recovered();

  class LimitStore implements FastifyRateLimitStore {
    private readonly local = new Map<string, { start: number; count: number }>();

    /** The plugin passes its options first (unused here); `child` names the limit. */
    constructor(_options?: unknown, private readonly limitName = 'default') {}

    incr(key: string, callback: (error: Error | null, result?: { current: number; ttl: number }) => void, timeWindow: number): void {
      if (redis.down) {
        failed(new Error('Redis connection down'));
        callback(null, this.countLocally(key, timeWindow));
        return;
      }
      INCR.run(redis.client, [redis.key('rate', this.limitName, key)], [timeWindow]).then(
        (reply) => {
          recovered();
          const [current, ttl] = reply as [number, number];
          callback(null, { current, ttl });
        },
        (err: unknown) => {
          failed(err);
          callback(null, this.countLocally(key, timeWindow));
        },
      );
    }

    /** The plugin calls it per limiter with the limiter's merged options, `limitName` included (request-limits.ts). */
    child(routeOptions: Parameters<FastifyRateLimitStore['child']>[0]): FastifyRateLimitStore {
      return new LimitStore(undefined, (routeOptions as NamedLimitOptions).limitName);
    }

    private countLocally(key: string, windowMs: number): { current: number; ttl: number } {
      const now = Date.now();
      let window = this.local.get(key);
      if (!window || now - window.start >= windowMs) {
        this.local.delete(key);
        window = { start: now, count: 0 };
        if (this.local.size >= FALLBACK_KEYS) this.local.delete(this.local.keys().next().value!);
        this.local.set(key, window);
      }
      window.count++;
      return { current: window.count, ttl: window.start + windowMs - now };
    }
  }
  return LimitStore;
}
