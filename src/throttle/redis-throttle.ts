import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { RedisConnection } from '../redis/connection.js';
import { RedisScript } from '../redis/script.js';
import { MemoryLoginThrottle } from './memory-throttle.js';
import type { LoginThrottle } from './throttle.js';

/**
 * KEYS[1] counter; ARGV limit, window ms. A full window answers its remaining time and takes nothing;
 * otherwise INCR, and the first slot starts the window (PEXPIRE), all in one atomic step.
 */
const TAKE = new RedisScript(`
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
if used >= tonumber(ARGV[1]) then
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl < 0 then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    ttl = tonumber(ARGV[2])
  end
  return math.max(1, ttl)
end
if redis.call('INCR', KEYS[1]) == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`);

/** KEYS[1] counter: one slot back; the key goes with its last slot. */
const RELEASE = new RedisScript(`
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
if used <= 1 then redis.call('DEL', KEYS[1]) else redis.call('DECR', KEYS[1]) end
return 0
`);

/** What a RedisLoginThrottle works with. */
export interface RedisThrottleDeps {
  redis: RedisConnection;
  clock: Clock;
  log: Pick<Logger, 'warn' | 'info'>;
}

/** How a RedisLoginThrottle counts. */
export interface RedisThrottleSettings {
  /** Names this throttle's keys (`account`, `address`); two throttles must not share a name. */
  name: string;
  limit: number;
  windowMs: number;
}

/**
 * The login throttle of a cluster: one counter per key in Redis (`<prefix>throttle:<name>:<key>`, TTL
 * the window), so the limit holds across nodes, not N times it. Fixed windows as in memory, timed by
 * Redis' clock (no clock skew between nodes matters).
 *
 * During a Redis outage it falls back to a node-local MemoryLoginThrottle: logins keep working and are
 * still throttled, at most N × limit per window across N nodes, never unlimited (docs/redis.md "Outage").
 */
export class RedisLoginThrottle implements LoginThrottle {
  readonly limit: number;
  private readonly redis: RedisConnection;
  private readonly log: Pick<Logger, 'warn' | 'info'>;
  private readonly name: string;
  private readonly windowMs: number;
  private readonly fallback: MemoryLoginThrottle;
  private failing = false;

  constructor({ redis, clock, log }: RedisThrottleDeps, { name, limit, windowMs }: RedisThrottleSettings) {
    this.redis = redis;
    this.log = log;
    this.name = name;
    this.limit = limit;
    this.windowMs = windowMs;
    this.fallback = new MemoryLoginThrottle(clock, limit, windowMs);
  }

  async take(key: string): Promise<number> {
    // Known down: count here at once rather than wait for the command timeout.
    if (this.redis.down) {
      this.failed(new Error('Redis connection down'));
      return this.fallback.takeNow(key);
    }
    try {
      const wait = Number(await TAKE.run(this.redis.client, [this.key(key)], [this.limit, this.windowMs]));
      this.recovered();
      return wait;
    } catch (err) {
      this.failed(err);
      return this.fallback.takeNow(key);
    }
  }

  async release(key: string): Promise<void> {
    this.fallback.releaseNow(key);
    try {
      await RELEASE.run(this.redis.client, [this.key(key)]);
    } catch (err) {
      this.failed(err); // a slot not given back only makes the throttle stricter until the window ends
    }
  }

  async reset(key: string): Promise<void> {
    await this.fallback.reset(key);
    try {
      await this.redis.client.del(this.key(key));
    } catch (err) {
      this.failed(err);
    }
  }

  private key(key: string): string {
    return this.redis.key('throttle', this.name, key);
  }

  private failed(err: unknown): void {
    if (this.failing) return;
    this.failing = true;
    this.log.warn({ err, throttle: this.name }, 'Redis unreachable: login throttle counts on this node only');
  }

  private recovered(): void {
    if (!this.failing) return;
    this.failing = false;
    this.log.info({ throttle: this.name }, 'Redis back: login throttle shared again');
  }
}
