import { Cluster } from 'ioredis';
import type { Logger } from 'pino';
import { ChannelListeners } from './channel-listeners.js';
import { redisOptions, watch, type PrefixedRedis } from './connection.js';
import { checkVersionOnReady } from './version.js';
import { Listeners } from '../listeners.js';
import { boundedCommands, withDeadline } from './deadline.js';

/** How often the subscriptions' client reads the cluster's slot map (`CLUSTER SLOTS`). */
const SUBSCRIBER_SLOTS_REFRESH_MS = 5_000;

/** A redirection the client handed back instead of following it. */
const REDIRECTION = /^(MOVED|ASK)\b/;

/**
 * Reads the slot map again, resolving once read (or failed: the client then goes on with what it has). The
 * client follows a MOVED by itself only when every command of an automatic pipeline got the same one; otherwise
 * it hands each its error and keeps its old map, so the node would send the next command to the same wrong place.
 */
const refreshSlots = (cluster: Cluster): Promise<void> => new Promise((resolve) => cluster.refreshSlotsCache(() => resolve()));

export interface RedisClusterConnectOptions {
  /** Put before every key and channel name, as on one Redis (docs/configuration.md `redisKeyPrefix`). */
  prefix?: string;
  /** Shown by `CLIENT LIST` as `<name>:<role>`. */
  name?: string;
}

/**
 * A node's way to a Redis Cluster for the event streams and the tabs' presence (docs/redis.md "Redis
 * Cluster"): one cluster client for commands and scripts, routed by each command's hash slot, and sharded
 * pub/sub (Redis 7 `SSUBSCRIBE`/`SPUBLISH`) for the announcements, so a message goes only through the shard
 * that owns its channel instead of being copied to every shard as classic PUBLISH is on a cluster.
 */
export interface RedisClusterConnection extends PrefixedRedis {
  readonly topology: 'cluster';
  /**
   * For commands and Lua scripts; every script's keys share one hash slot (a `{…}` tag). Every command that
   * answers a promise is bounded by REDIS_COMMAND_TIMEOUT_MS (deadline.ts), as on one Redis. Channels are
   * sharded (`SSUBSCRIBE`), each on the shard that owns its slot.
   */
  readonly client: Cluster;
  /** Publishes on a sharded channel (prefixed name, as `channel` gives). */
  publish(channel: string, payload: string): Promise<void>;
  /** Another cluster client with the same settings (the presence refresh's). Closed by `close()`. */
  duplicate(role: string): Cluster;
}

/**
 * Connects to the Redis Cluster whose seed nodes are `urls` (`redis://host:port`; the client learns the rest
 * from `CLUSTER SLOTS`). Each shard's connection has the settings of a single Redis's (connection.ts
 * `redisOptions`: bounded command time, reconnect with backoff); commands to one shard are pipelined
 * automatically, so the presence refresh's thousands of scripts go in few writes per shard.
 */
export function connectRedisCluster(urls: readonly string[], log: Logger, options: RedisClusterConnectOptions = {}): RedisClusterConnection {
  const prefix = options.prefix ?? 'tabwire:';
  const name = options.name ?? 'tabwire';
  const moduleLog = log.child({ module: 'redis-cluster' });
  const seeds = urls.map((url) => {
    const parsed = new URL(url);
    return { host: parsed.hostname, port: Number(parsed.port || 6379) };
  });
  const first = new URL(urls[0]!);
  const extra: Cluster[] = [];
  const open = (role: string, sharded: boolean): Cluster => {
    // A shard's connection does not reconnect by itself in a cluster client: the client finds the shards again.
    const { retryStrategy, enableOfflineQueue, ...perShard } = redisOptions(`${name}:${role}`);
    const cluster = new Cluster(seeds, {
      redisOptions: {
        ...perShard,
        ...(first.username ? { username: decodeURIComponent(first.username) } : {}),
        ...(first.password ? { password: decodeURIComponent(first.password) } : {}),
        ...(first.protocol === 'rediss:' ? { tls: {} } : {}),
      },
      clusterRetryStrategy: (times) => retryStrategy?.(times) ?? 1_000,
      enableOfflineQueue,
      // Auto-pipelining would send SSUBSCRIBE (which ioredis 5 does not keep out of its pipelines) on a command
      // connection, which then refuses every other command: the subscriptions have a client of their own.
      enableAutoPipelining: !sharded,
      shardedSubscribers: sharded,
      // The subscriptions' client asks for the slot map now and then: a fail-over or a re-shard elsewhere changes
      // no shard it subscribes on, so it would not hear of it. A changed map makes it subscribe again, and the
      // node's open tabs then read their streams (subscribersReady below), which is how a quiet tab's stream that
      // a fail-over let go is found (docs/redis.md "Replicas and fail-over").
      ...(sharded ? { slotsRefreshInterval: SUBSCRIBER_SLOTS_REFRESH_MS } : {}),
    });
    watch(cluster, role, moduleLog, 'Redis Cluster');
    return cluster;
  };
  /** `cluster`'s commands bounded in time; a redirection handed back makes it read the slot map again. */
  const bounded = (cluster: Cluster): Cluster =>
    boundedCommands(cluster, undefined, (err) => {
      if (err instanceof Error && REDIRECTION.test(err.message)) void refreshSlots(cluster);
    });
  const raw = open('commands', false);
  const client = bounded(raw);
  checkVersionOnReady(client, 'Redis Cluster', moduleLog);
  let everReady = false;
  client.on('ready', () => (everReady = true));
  // The sharded subscriptions: one connection per primary that owns a subscribed channel, made by the client.
  const rawSubscriber = open('pubsub', true);
  const subscriber = boundedCommands(rawSubscriber);

  const listeners = new ChannelListeners(moduleLog);
  const resubscribed = new Listeners<void>('resubscription listener', moduleLog);
  /** Whether every wanted channel was confirmed once: later confirmations follow a loss (resubscribed). */
  let confirmed = false;
  /**
   * Subscribes every wanted channel and, once Redis confirmed them, tells the resubscription listeners (not
   * after the first confirmation). Done here, not left to the client: its sharded subscribers forget a
   * channel whose first SSUBSCRIBE failed (the cluster was unreachable at start), and they announce that they
   * are back before their SSUBSCRIBE is answered, so a catch-up read could come before it and miss an event.
   */
  const subscribeAll = async (): Promise<void> => {
    const channels = listeners.channels();
    if (channels.length === 0) return;
    try {
      await Promise.all(channels.map((channel) => subscriber.ssubscribe(channel)));
    } catch (err) {
      moduleLog.warn({ err }, 'Redis Cluster subscribe failed; tried again when the shards are back');
      return;
    }
    const again = confirmed;
    confirmed = true;
    if (!again) return;
    // The subscriptions' client saw the slot map change (a fail-over, a re-shard): the listeners now read what was
    // missed, through the command clients, which must know the new map first or they would read the wrong node.
    await Promise.all([raw, ...extra].map(refreshSlots));
    resubscribed.tell();
  };
  // The client made its sharded subscribers again (a shard lost, slots moved), or connected for the first time.
  subscriber.on('subscribersReady', () => void subscribeAll());
  subscriber.on('ready', () => {
    if (!confirmed) void subscribeAll();
  });
  subscriber.on('smessage', (channel: string, payload: string) => listeners.tell(channel, payload));

  return {
    topology: 'cluster',
    client,
    prefix,
    key: (...parts) => prefix + parts.join(':'),
    channel: (channelName) => `${prefix}${channelName}`,
    async subscribe(channelName, listener) {
      const channel = `${prefix}${channelName}`;
      if (listeners.add(channel, listener).first) {
        // Not waited for beyond the command time: a node starts while the cluster is away, and subscribeAll
        // subscribes it when the cluster is back.
        await subscriber.ssubscribe(channel).then(
          () => (confirmed = true),
          (err: unknown) => moduleLog.warn({ err, channel }, 'Redis Cluster subscribe failed; tried again when the shards are back'),
        );
      }
      return async () => {
        if (!listeners.remove(channel, listener)) return;
        await subscriber.sunsubscribe(channel).catch(() => undefined);
      };
    },
    async publish(channel, payload) {
      await client.spublish(channel, payload);
    },
    onResubscribed(listener) {
      return resubscribed.add(listener);
    },
    duplicate(role) {
      const cluster = open(role, false);
      extra.push(cluster);
      return bounded(cluster);
    },
    get ready() {
      return client.status === 'ready';
    },
    get down() {
      return everReady && client.status !== 'ready';
    },
    async close() {
      await Promise.all([raw, rawSubscriber, ...extra].map((c) => withDeadline(c.quit()).catch(() => c.disconnect())));
    },
  };
}
