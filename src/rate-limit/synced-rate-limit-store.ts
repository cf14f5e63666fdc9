import type { FastifyRateLimitStore } from '@fastify/rate-limit';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { RedisConnection } from '../redis/connection.js';
import { RedisScript } from '../redis/script.js';
import type { RateLimitStore } from './rate-limit-store.js';
import type { NamedLimitOptions } from './redis-rate-limit-store.js';
import { ShareLedger, type LedgerEntry } from './share-ledger.js';
import { outageNotice } from './outage-notice.js';

/**
 * KEYS: counters `<prefix>rate:<limit>:<key>`. ARGV: per key, the hits pushed and the window in ms. Adds
 * each node's hits to the cluster's count (the first hit of a window starts its expiry, as the exact
 * store does) and answers, per key, the total and the ms left of the window.
 */
const PUSH = new RedisScript(`
local out = {}
for i, key in ipairs(KEYS) do
  local window = tonumber(ARGV[2 * i])
  local total = redis.call('INCRBY', key, ARGV[2 * i - 1])
  local ttl = redis.call('PTTL', key)
  if ttl < 0 then redis.call('PEXPIRE', key, window) ttl = window end
  out[2 * i - 1] = total
  out[2 * i] = ttl
end
return out
`);

/** Keys per script: one sync of many active keys is a few scripts, each short enough not to hold Redis up. */
const KEYS_PER_SCRIPT = 500;
/** Keys kept per limit (as the plugin's memory store: least recently hit forgotten first). */
const KEYS_PER_LIMIT = 50_000;

export interface SyncedRateLimits {
  /** For request-limits.ts: each limit's child counts in a ledger of its own. */
  store: RateLimitStore;
  /** Pushes every ledger's unpushed hits now (the timer does it every `syncMs`); resolves when answered. */
  syncNow(): Promise<void>;
  /** Stops the timer (before the connection closes). */
  stop(): void;
}

/**
 * A `@fastify/rate-limit` store for a cluster that sends no Redis command on the request path
 * (docs/redis.md "Limits"): each node decides every hit from its own ledger (share-ledger.ts) and, every
 * `syncMs`, pushes the hits it admitted for each active key and learns the cluster's totals, in one
 * script per 500 keys. Cost per sync: O(keys hit since the last one), whatever the request rate.
 *
 * Outage (docs/redis.md "During a Redis outage"): while the connection is down or the last push failed,
 * each node counts on its own against the whole limit; what it counted is pushed once Redis answers.
 */
export function syncedRateLimitStore(
  { redis, clock, log }: { redis: RedisConnection; clock: Clock; log: Pick<Logger, 'warn' | 'info'> },
  { syncMs }: { syncMs: number },
): SyncedRateLimits {
  /** Per limit: its ledger and its window (the plugin passes it on every hit; the script starts windows with it). */
  const ledgers = new Map<string, { ledger: ShareLedger; windowMs: number }>();
  /** Set by a failed push (or a sync while the connection is down); cleared by a push Redis answered. */
  const notice = outageNotice(log, 'QR request limits');
  const shared = () => !notice.failing && !redis.down;
  const failed = (err: unknown) => notice.failed(err);
  const recovered = () => notice.recovered();

  const ledgerOf = (limitName: string) => {
    let found = ledgers.get(limitName);
    if (!found) ledgers.set(limitName, (found = { ledger: new ShareLedger(KEYS_PER_LIMIT, syncMs), windowMs: 60_000 }));
    return found;
  };

  class SyncedStore implements FastifyRateLimitStore {
    private readonly limit: { ledger: ShareLedger; windowMs: number };
    /** The plugin passes its options first (unused here); `child` names the limit. */
    constructor(_options?: unknown, limitName = 'default') {
      this.limit = ledgerOf(limitName);
    }

    incr(key: string, callback: (error: Error | null, result?: { current: number; ttl: number }) => void, timeWindow: number, max?: number): void {
      this.limit.windowMs = timeWindow;
      const decision = this.limit.ledger.hit(key, clock.now(), timeWindow, max ?? Number.MAX_SAFE_INTEGER, shared());
      callback(null, { current: decision.current, ttl: decision.ttl });
    }

    /** The plugin calls it per limiter with the limiter's merged options, `limitName` included (request-limits.ts). */
    child(routeOptions: Parameters<FastifyRateLimitStore['child']>[0]): FastifyRateLimitStore {
      return new SyncedStore(undefined, (routeOptions as NamedLimitOptions).limitName);
    }
  }

  async function push(batch: { limitName: string; entry: LedgerEntry; pushed: number }[]): Promise<void> {
    const keys = batch.map((b) => redis.key('rate', b.limitName, b.entry.key));
    const args = batch.flatMap((b) => [b.pushed, ledgers.get(b.limitName)!.windowMs]);
    try {
      const reply = (await PUSH.run(redis.client, keys, args)) as number[];
      const now = clock.now();
      batch.forEach((b, i) => ledgers.get(b.limitName)!.ledger.settle(b.entry, b.pushed, reply[2 * i]!, reply[2 * i + 1]!, now));
      recovered();
    } catch (err) {
      for (const b of batch) ledgers.get(b.limitName)!.ledger.restore(b.entry, b.pushed);
      failed(err);
    }
  }

  async function syncNow(): Promise<void> {
    if (redis.down) {
      failed(new Error('Redis connection down'));
      return;
    }
    const all: { limitName: string; entry: LedgerEntry; pushed: number }[] = [];
    for (const [limitName, { ledger }] of ledgers) for (const { entry, pushed } of ledger.take()) all.push({ limitName, entry, pushed });
    // Nothing to push and the connection is up: nothing says Redis is away, so the share applies again
    // (a stalled Redis keeps failing the pushes of the hits it is offered).
    if (all.length === 0) recovered();
    const batches = [];
    for (let i = 0; i < all.length; i += KEYS_PER_SCRIPT) batches.push(push(all.slice(i, i + KEYS_PER_SCRIPT)));
    await Promise.all(batches);
  }

  // One sync at a time, `syncMs` after the last one ended, so a slow Redis never piles syncs up.
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => void syncNow().finally(schedule), syncMs);
    timer.unref();
  };
  schedule();

  return {
    store: SyncedStore,
    syncNow,
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
