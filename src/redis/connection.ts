import { Redis, type Cluster, type RedisOptions } from 'ioredis';
import type { Logger } from 'pino';
import { Listeners } from '../listeners.js';
import { ChannelListeners, type ChannelListener } from './channel-listeners.js';
import { checkVersionOnReady } from './version.js';

/**
 * How long a command may wait for its answer, including time spent in the offline queue while the
 * connection is down. Past it the caller gets an error; it never hangs a request (docs/redis.md "Outage").
 */
export const REDIS_COMMAND_TIMEOUT_MS = 2_000;
/** Reconnect delays: 100 ms doubling to 1 s, plus up to 20 % jitter so N nodes do not reconnect in step. */
const RECONNECT_BASE_MS = 100;
const RECONNECT_CAP_MS = 1_000;

export interface RedisConnectOptions {
  /**
   * Put before every key and channel name, so several deployments (or test files) can share one Redis
   * (docs/configuration.md `redisKeyPrefix`). Default `tabwire:`.
   */
  prefix?: string;
  /** Shown by `CLIENT LIST` as `<name>:commands` / `<name>:pubsub`, so an operator sees who is connected. */
  name?: string;
}

/** A listener of one pub/sub channel; payloads are strings as published. */
export type { ChannelListener } from './channel-listeners.js';

/**
 * What every way to Redis offers (one Redis here, a Redis Cluster in cluster-connection.ts): the key prefix,
 * pub/sub on the node's channels, readiness. Every module builds its keys with `key(...)` and its channels with
 * `channel(...)`, never by hand.
 */
export interface PrefixedRedis {
  readonly prefix: string;
  /** `prefix` + parts joined by ':'. */
  key(...parts: string[]): string;
  /** A channel name; channels are prefixed like keys (ioredis' own `keyPrefix` would not prefix them). */
  channel(name: string): string;
  /**
   * Subscribes `listener` to a channel (unprefixed name). Resolves once Redis confirmed, or, when Redis is not
   * reachable within REDIS_COMMAND_TIMEOUT_MS, without error: the channel is then subscribed when the
   * connection comes up. After every reconnect all channels are subscribed again; messages published while the
   * subscriber was disconnected are not received (pub/sub is at-most-once). Resolves to a function that
   * removes the listener.
   */
  subscribe(name: string, listener: ChannelListener): Promise<() => Promise<void>>;
  /**
   * Calls `listener` each time the subscription was made again after a loss, once Redis confirmed it: what
   * was published while it was away was missed. Returns a function that removes it.
   */
  onResubscribed(listener: () => void): () => void;
  /** True while the command connection is established (readiness). */
  readonly ready: boolean;
  /**
   * True from the loss of an established command connection until it is back: callers that have a
   * local fallback use it at once instead of waiting for the command timeout. False before the first
   * connection (commands then wait in the offline queue, as at any start).
   */
  readonly down: boolean;
  /** Closes every connection made here; pending commands are rejected. */
  close(): Promise<void>;
}

/**
 * One node's way to one Redis: a command connection, a separate subscriber connection (a connection in
 * subscriber mode can run no other command; RESP2 `SUBSCRIBE`), and the key prefix.
 */
export interface RedisConnection extends PrefixedRedis {
  /** One Redis (a Redis Cluster's connection is cluster-connection.ts). */
  readonly topology: 'single';
  /** For commands and Lua scripts. Never put in subscriber mode and never used for blocking reads. */
  readonly client: Redis;
  /**
   * Another connection with the same settings, for what may not share the command connection: blocking
   * reads (`XREAD BLOCK`, `BLPOP`) must pass `{ commandTimeout: undefined }` so the client-side timeout
   * does not cut them off. Closed by `close()`.
   */
  duplicate(role: string, overrides?: Partial<RedisOptions>): Redis;
}

/**
 * The connection settings, chosen so that a Redis outage costs a bounded wait, never a hung request:
 * - reconnect forever (`retryStrategy` never gives up) with capped backoff and jitter;
 * - `enableOfflineQueue: true`: a command issued while the connection is down is queued and sent
 *   when it is back, so a blip shorter than the timeout is invisible;
 * - `commandTimeout`: whatever happens, the caller has an answer or an error within
 *   REDIS_COMMAND_TIMEOUT_MS (a timed-out command may still be sent and run after the reconnect, as
 *   any request whose answer was lost may have run);
 * - `maxRetriesPerRequest: 1`: the offline queue is flushed (its commands rejected) every second failed
 *   reconnect attempt, so a long outage does not pile up commands in memory;
 * - TCP keep-alive, so a peer that vanished without closing is noticed;
 * - `READONLY` replies (a replica promoted away under Sentinel) force a reconnect.
 */
export function redisOptions(connectionName: string): RedisOptions {
  return {
    connectionName,
    lazyConnect: false,
    enableOfflineQueue: true,
    maxRetriesPerRequest: 1,
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
    connectTimeout: 5_000,
    keepAlive: 10_000,
    // The subscriber connection re-subscribes itself (connectRedis), including channels never confirmed.
    autoResubscribe: false,
    retryStrategy: (times) => {
      const delay = Math.min(RECONNECT_BASE_MS * 2 ** (times - 1), RECONNECT_CAP_MS);
      return Math.round(delay * (1 + Math.random() * 0.2));
    },
    reconnectOnError: (err) => err.message.startsWith('READONLY'),
  };
}

/**
 * Opens the command connection to `url` (`redis://` or `rediss://` for TLS) at once and the subscriber
 * connection on first `subscribe`. Returns immediately: commands issued before the connection is up
 * wait in the offline queue (bounded as above). Connection trouble is logged once per outage.
 */
export function connectRedis(url: string, log: Logger, options: RedisConnectOptions = {}): RedisConnection {
  const prefix = options.prefix ?? 'tabwire:';
  const name = options.name ?? 'tabwire';
  const moduleLog = log.child({ module: 'redis' });
  const extra: Redis[] = [];
  const open = (role: string, overrides: Partial<RedisOptions> = {}): Redis => {
    const redis = new Redis(url, { ...redisOptions(`${name}:${role}`), ...overrides });
    watch(redis, role, moduleLog);
    return redis;
  };
  const client = open('commands');
  checkVersionOnReady(client, 'Redis', moduleLog);
  let everReady = false;
  client.on('ready', () => (everReady = true));

  let subscriber: Redis | undefined;
  const listeners = new ChannelListeners(moduleLog);
  const resubscribed = new Listeners<void>('resubscription listener', moduleLog);
  const subscriberConnection = (): Redis => {
    if (subscriber) return subscriber;
    // Re-subscription is done here, not by ioredis' autoResubscribe: that one only knows channels whose
    // SUBSCRIBE was answered, so a SUBSCRIBE sent while Redis was down would be forgotten.
    const connection = open('pubsub');
    let connectedBefore = false;
    connection.on('ready', () => {
      const again = connectedBefore;
      connectedBefore = true;
      const channels = listeners.channels();
      if (channels.length === 0) return;
      connection.subscribe(...channels).then(
        () => {
          if (again) resubscribed.tell();
        },
        (err: unknown) => moduleLog.warn({ err }, 'Redis re-subscribe failed'),
      );
    });
    connection.on('message', (channel: string, payload: string) => listeners.tell(channel, payload));
    subscriber = connection;
    return connection;
  };

  return {
    topology: 'single',
    client,
    prefix,
    key: (...parts) => prefix + parts.join(':'),
    channel: (channelName) => `${prefix}${channelName}`,
    async subscribe(channelName, listener) {
      const channel = `${prefix}${channelName}`;
      const connection = subscriberConnection();
      const { first } = listeners.add(channel, listener);
      // Subscribed now when the connection is up (or comes up within the bound), else on its next 'ready'.
      if (first && (await readyWithin(connection, REDIS_COMMAND_TIMEOUT_MS))) {
        await connection.subscribe(channel).catch((err: unknown) => moduleLog.warn({ err, channel }, 'Redis subscribe failed; retried on reconnect'));
      }
      return async () => {
        if (!listeners.remove(channel, listener)) return;
        if (connection.status === 'ready') await connection.unsubscribe(channel).catch(() => undefined);
      };
    },
    onResubscribed(listener) {
      return resubscribed.add(listener);
    },
    duplicate(role, overrides) {
      const connection = open(role, overrides);
      extra.push(connection);
      return connection;
    },
    get ready() {
      return client.status === 'ready';
    },
    get down() {
      return everReady && client.status !== 'ready';
    },
    async close() {
      const all = [client, ...(subscriber ? [subscriber] : []), ...extra];
      await Promise.all(all.map((c) => c.quit().catch(() => c.disconnect())));
    },
  };
}

/** Whether `redis` is ready now or becomes so within `ms`. */
function readyWithin(redis: Redis, ms: number): Promise<boolean> {
  if (redis.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(timer);
      redis.off('ready', onReady);
      resolve(ok);
    };
    const onReady = () => done(true);
    const timer = setTimeout(() => done(false), ms);
    redis.on('ready', onReady);
  });
}

/** What `watch` listens to: a connection to one Redis, or a Redis Cluster client. */
type ConnectionEvents = Pick<Redis | Cluster, 'on'>;

/**
 * Logs the first sign of an outage and the recovery, not every reconnect attempt. `what` names the server
 * in the messages ("Redis", "Redis Cluster"); a cluster client also reports a shard's trouble as 'node error'.
 */
export function watch(connection: ConnectionEvents, role: string, log: Logger, what = 'Redis'): void {
  let down = false;
  const lost = (detail: string) => {
    if (down) return;
    down = true;
    log.warn({ role, error: detail }, `${what} connection lost; reconnecting`);
  };
  for (const event of ['error', 'node error']) connection.on(event, (err: Error) => lost(err.message));
  connection.on('reconnecting', () => lost('connection closed'));
  connection.on('ready', () => {
    if (!down) return;
    down = false;
    log.info({ role }, `${what} connection back`);
  });
}
