/**
 * Child server for the channel benchmarks: the real tabwire app (buildApp, own SQLite file, silent
 * log) plus bench-only control routes under /__bench/ that are added here, never in src/:
 *
 *   POST /__bench/gc            full GC (needs --expose-gc), then process.memoryUsage()
 *   POST /__bench/heap-snapshot settled heap written as a V8 heap snapshot beside the SQLite file; answers its path
 *   GET  /__bench/stats         hub.snapshot(), process.memoryUsage() and the number of open files
 *   POST /__bench/deliver-run   {prefix, tabs, count, perSecond}: `count` events via hub.deliver to random
 *                               tabs tabIdOf(prefix, i), paced; each event's data carries the CLOCK_MONOTONIC
 *                               time (ns) just before hub.deliver. Answers when the last one was handed over.
 *   POST /__bench/deliver-all   {prefix, tabs}: one event to every tab tabIdOf(prefix, i)
 *   GET  /__bench/redis-counts  cluster node: the commands this node sent to Redis (and its Redis Cluster) so far, by kind
 *   GET  /__bench/pubsub-received  cluster node: the pub/sub messages Redis delivered to this node so far, by
 *                               channel (the node's key prefix left out, ids as `*`): plain, pattern and sharded
 *   POST /__bench/binding-refresh  what the node's binding-refresh timer does, once, now (tab bindings in the
 *                               store, handler TTLs in Redis); answers how long it took
 *   GET  /__bench/loop          event-loop delay (p99, max ms; 1 ms sampling) and GC pauses since the last call, then resets
 *   GET  /__bench/phases        durations (ms) of the signature path's parts since the last call, then resets:
 *                               the signature POST as the server saw it, the store calls it makes, hub.deliver
 *   GET  /__bench/refreshes     the node's last presence refreshes (hub.refresh, cluster mode): [startNs, endNs]
 *                               pairs on CLOCK_MONOTONIC, so event latencies can be set beside them
 *
 * Args: one JSON object {port, sqliteFile, pingTimeoutSeconds?, longPollHoldSeconds?, tabIdleSeconds?,
 * databaseUrl?, redisUrl?, redisClusterUrls?, publicBaseUrl?, qrRequestsPerAddressPerMinute?, qrRequestsPerSessionPerMinute?,
 * tabBindingRetentionSeconds?}: with databaseUrl and redisUrl
 * the node runs in cluster mode (PostgreSQL store, Redis broker, bus and limits); publicBaseUrl names the
 * address every node of one cluster shares (the load balancer's).
 */
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { writeHeapSnapshot } from 'node:v8';
import { PerformanceObserver, monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/load.js';
import { refreshTabBindings } from '../../src/hub/binding-refresh.js';
import type { TabAddress } from '../../src/protocol/address.js';
import { settleHeap } from '../lib/measure/channel-heap.js';
import { tabIdOf } from '../lib/load/channel-ids.js';
import { serveAsChild } from './protocol.js';
import { commandKind, countClusterCommands, type SentCommand } from './redis-command-kinds.js';

interface Args {
  port: number;
  sqliteFile: string;
  pingTimeoutSeconds?: number;
  longPollHoldSeconds?: number;
  tabIdleSeconds?: number;
  databaseUrl?: string;
  redisUrl?: string;
  redisClusterUrls?: string[];
  publicBaseUrl?: string;
  qrRequestsPerAddressPerMinute?: number;
  qrRequestsPerSessionPerMinute?: number;
  tabBindingRetentionSeconds?: number;
}

/**
 * Counts every command a node sends on its Redis command connection (pipelined ones included: ioredis
 * sends each through `sendCommand`), by kind: a broker script by its name (`twPublish`, `twHold` …),
 * another script and a plain command by the first key's family (`evalsha rate:qr_address`,
 * `hgetall handlers:tab`, `publish bus`), with ` (pipelined)` when sent in a pipeline. Bench-only; src/
 * is not changed.
 */
function countRedisCommands(client: Redis, prefix: string): Map<string, number> {
  const counts = new Map<string, number>();
  const scripts = (client as unknown as { scriptsSet?: Record<string, { sha: string }> }).scriptsSet ?? {};
  const names = new Map<string, string>();
  const send = client.sendCommand.bind(client) as (command: SentCommand, stream?: unknown) => unknown;
  (client as unknown as { sendCommand: typeof send }).sendCommand = (command, stream) => {
    let kind = commandKind(command, scripts, names, prefix);
    // A pipelined twHold is the node's periodic presence refresh; a lone one a Register or a detach.
    if ((stream as { isPipeline?: boolean } | undefined)?.isPipeline) kind += ' (pipelined)';
    counts.set(kind, (counts.get(kind) ?? 0) + 1);
    return send(command, stream);
  };
  return counts;
}

/**
 * Counts every pub/sub message any Redis connection of this process receives, by channel: ioredis emits
 * `messageBuffer`, `pmessageBuffer` and `smessageBuffer` for each (plain, pattern, sharded) whether or not
 * anyone listens. Installed before the app opens its connections; it reads, never changes, what is emitted.
 * So the benchmark counts what each node is sent, whichever channels the service subscribes to.
 */
function countPubsubMessages(): Map<string, number> {
  const counts = new Map<string, number>();
  const emit = Redis.prototype.emit;
  const count = (channel: unknown): void => {
    const name = String(channel);
    counts.set(name, (counts.get(name) ?? 0) + 1);
  };
  Redis.prototype.emit = function (this: Redis, event: string | symbol, ...rest: unknown[]): boolean {
    if (event === 'messageBuffer' || event === 'smessageBuffer') count(rest[0]);
    else if (event === 'pmessageBuffer') count(rest[1]);
    return emit.call(this, event, ...rest);
  };
  return counts;
}
const pubsubReceived = countPubsubMessages();

/** A channel's name without the key prefix, its id-like parts (digits, long tokens) as `*`. */
function channelFamily(channel: string, prefix: string): string {
  const bare = channel.startsWith(prefix) ? channel.slice(prefix.length) : channel;
  return bare
    .split(':')
    .map((part) => (/\d/.test(part) || part.length > 16 ? '*' : part))
    .join(':');
}

await serveAsChild(async () => {
  const args = JSON.parse(process.argv[2] ?? '{}') as Args;
  if (!Number.isInteger(args.port) || args.port <= 0 || !args.sqliteFile) throw new Error('usage: channel-tabwire.ts <json args>');
  const config = loadConfig(
    {},
    {
      port: args.port,
      sqliteFile: args.sqliteFile,
      logLevel: 'silent',
      ...(args.pingTimeoutSeconds === undefined ? {} : { pingTimeoutSeconds: args.pingTimeoutSeconds }),
      ...(args.longPollHoldSeconds === undefined ? {} : { longPollHoldSeconds: args.longPollHoldSeconds }),
      ...(args.tabIdleSeconds === undefined ? {} : { tabIdleSeconds: args.tabIdleSeconds }),
      ...(args.databaseUrl === undefined ? {} : { databaseUrl: args.databaseUrl }),
      ...(args.redisUrl === undefined ? {} : { redisUrl: args.redisUrl }),
      ...(args.redisClusterUrls === undefined ? {} : { redisClusterUrls: args.redisClusterUrls }),
      ...(args.publicBaseUrl === undefined ? {} : { publicBaseUrl: args.publicBaseUrl }),
      ...(args.qrRequestsPerAddressPerMinute === undefined ? {} : { qrRequestsPerAddressPerMinute: args.qrRequestsPerAddressPerMinute }),
      ...(args.qrRequestsPerSessionPerMinute === undefined ? {} : { qrRequestsPerSessionPerMinute: args.qrRequestsPerSessionPerMinute }),
      ...(args.tabBindingRetentionSeconds === undefined ? {} : { tabBindingRetentionSeconds: args.tabBindingRetentionSeconds }),
    },
  );
  // With a Redis Cluster for the streams, what the node sends there is counted too (before its clients exist).
  const clusterCounts = new Map<string, number>();
  if (config.redisClusterUrls) countClusterCommands(config.redisKeyPrefix, clusterCounts);
  const app = await buildApp(config);
  const { hub, store, redis, handlers, clock } = app.tabwire;
  const redisCounts = redis ? countRedisCommands(redis.client, redis.prefix) : new Map<string, number>();
  // When the presence refresh runs (the timer calls hub.refresh through the instance, so this sees every run).
  const refreshes: [string, string][] = [];
  const refresh = hub.refresh.bind(hub);
  hub.refresh = async () => {
    const start = process.hrtime.bigint();
    try {
      await refresh();
    } finally {
      refreshes.push([start.toString(), process.hrtime.bigint().toString()]);
      if (refreshes.length > 200) refreshes.shift();
    }
  };
  // The signature path's parts, timed where the node sees them (docs/benchmarks-history.md "Where the signature's tail goes").
  const phases = new Map<string, number[]>();
  const record = (name: string, ms: number) => {
    const list = phases.get(name) ?? [];
    if (list.length < 20_000) list.push(ms);
    phases.set(name, list);
  };
  const timed = <T extends object>(target: T, method: keyof T & string, name: string) => {
    const original = (target[method] as (...a: unknown[]) => Promise<unknown>).bind(target);
    (target as Record<string, unknown>)[method] = async (...a: unknown[]) => {
      const t = performance.now();
      try {
        return await original(...a);
      } finally {
        record(name, performance.now() - t);
      }
    };
  };
  timed(store.codes, 'get', 'store.codes.get');
  timed(store.codes, 'settle', 'store.codes.settle');
  timed(store.identities, 'get', 'store.identities.get');
  timed(hub, 'deliver', 'hub.deliver');
  app.addHook('onRequest', async (request) => {
    (request as unknown as { benchStart: number }).benchStart = performance.now();
  });
  app.addHook('onResponse', async (request) => {
    if (request.method === 'POST' && request.routeOptions.url === '/QuickLogin/Sign/:code') record('POST sign (server)', performance.now() - (request as unknown as { benchStart: number }).benchStart);
  });
  /**
   * Events are addressed to a tab of a session: look each tab's session up once, before any timing (and
   * once per prefix and count: with a PostgreSQL store 10,000 look-ups take seconds).
   */
  const looked = new Map<string, TabAddress[]>();
  const addresses = async (prefix: string, tabs: number): Promise<TabAddress[]> => {
    const known = looked.get(`${prefix}:${tabs}`);
    if (known) return known;
    const out = [];
    for (let i = 0; i < tabs; i++) {
      const tabId = tabIdOf(prefix, i);
      out.push({ tabId, session: (await store.tabs.sessionOf(tabId)) ?? 'unbound' });
    }
    looked.set(`${prefix}:${tabs}`, out);
    return out;
  };

  app.post('/__bench/gc', async () => settleHeap());
  // A settled heap written as a V8 heap snapshot into the bench's own temporary directory (bench/tab-heap.ts).
  app.post('/__bench/heap-snapshot', async () => {
    await settleHeap();
    return { file: writeHeapSnapshot(join(dirname(args.sqliteFile), `heap-${Date.now()}.heapsnapshot`)) };
  });
  app.get('/__bench/stats', async () => ({ hub: hub.snapshot(), memory: process.memoryUsage(), openFiles: readdirSync('/proc/self/fd').length }));

  app.post('/__bench/deliver-run', async (request) => {
    const o = request.body as { prefix: string; tabs: number; count: number; perSecond: number };
    const count = Math.min(o.count, 100_000);
    const intervalNs = 1e9 / o.perSecond;
    const targets = await addresses(o.prefix, o.tabs);
    const start = process.hrtime.bigint();
    let lateNs = 0n;
    for (let i = 0; i < count; i++) {
      const due = start + BigInt(Math.round(i * intervalNs));
      let now = process.hrtime.bigint();
      if (due > now) {
        await sleep(Number(due - now) / 1e6);
        now = process.hrtime.bigint();
      }
      if (now - due > lateNs) lateNs = now - due;
      const tab = targets[Math.floor(Math.random() * o.tabs)]!;
      const sentNs = process.hrtime.bigint();
      await hub.deliver(tab, { type: 'BenchLatency', data: { n: i, t: sentNs.toString() } });
    }
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    return { count, ms, maxLateMs: Number(lateNs) / 1e6 };
  });

  app.get('/__bench/phases', async () => {
    const out = Object.fromEntries([...phases].map(([name, values]) => [name, values]));
    phases.clear();
    return out;
  });
  app.get('/__bench/redis-counts', async () => {
    const all = new Map(redisCounts);
    for (const [k, v] of clusterCounts) all.set(k, (all.get(k) ?? 0) + v);
    return Object.fromEntries(all);
  });
  app.get('/__bench/pubsub-received', async () => {
    const out: Record<string, number> = {};
    for (const [channel, n] of pubsubReceived) {
      const family = channelFamily(channel, redis?.prefix ?? '');
      out[family] = (out[family] ?? 0) + n;
    }
    return out;
  });
  app.get('/__bench/refreshes', async () => refreshes);
  // Sampled every 1 ms; a sample is the time between two timer runs, so 1 ms is "no delay".
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  let gc = { count: 0, maxMs: 0 };
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) gc = { count: gc.count + 1, maxMs: Math.max(gc.maxMs, entry.duration) };
  }).observe({ entryTypes: ['gc'] });
  app.get('/__bench/loop', async () => {
    const reading = { p99Ms: loop.percentile(99) / 1e6, maxMs: loop.max / 1e6, gcCount: gc.count, gcMaxMs: gc.maxMs };
    loop.reset();
    gc = { count: 0, maxMs: 0 };
    return reading;
  });
  app.post('/__bench/binding-refresh', async () => {
    const started = process.hrtime.bigint();
    await refreshTabBindings(hub, store.tabs, clock);
    await handlers.touchTabs(hub.heldAddresses());
    return { ms: Number(process.hrtime.bigint() - started) / 1e6, tabs: hub.heldTabIds().length };
  });

  app.post('/__bench/deliver-all', async (request) => {
    const o = request.body as { prefix: string; tabs: number };
    const targets = await addresses(o.prefix, o.tabs);
    for (let i = 0; i < o.tabs; i++) await hub.deliver(targets[i]!, { type: 'BenchRelease', data: i });
    return { delivered: o.tabs };
  });

  await app.listen({ host: '127.0.0.1', port: args.port });
  return { port: args.port, close: () => app.close() };
});
