import { randomUUID } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { TabAddress } from '../protocol/address.js';
import type { TabEvent } from '../protocol/frames.js';
import type { RedisConnection } from '../redis/connection.js';
import type { RedisClusterConnection } from '../redis/cluster-connection.js';
import {
  AnnouncementFailed,
  epochAt,
  NONE_AWAITING,
  PUBLISH_KEY_PATTERN,
  resumePoint,
  type Announcement,
  type AnnouncementListener,
  type Broker,
  type BrokerBounds,
  type DeliveryFallback,
  type HoldOutcome,
  type PublishOutcome,
  type StreamRead,
} from './broker.js';
import { Listeners } from '../listeners.js';
import { announcementBody, fallbacksOf, parseAnnouncement, parseEntry } from './redis-broker-entries.js';
import { defineBrokerCommands, type BrokerCommands, type BrokerTopology, type Reply } from './redis-broker-scripts.js';
import { LivenessView } from './liveness-view.js';
import { EVENTS_CHANNEL_PREFIX, eventsChannel, tabKeys, type TabKeys } from './redis-broker-keys.js';

/** Hold scripts sent at once by `refresh`; Redis runs one slice (~18 µs a script) before it turns to other clients' commands. */
const REFRESH_SLICE = 100;

/** A connection the broker's scripts run on: to one Redis, or to a Redis Cluster. */
type ScriptConnection = (Redis | Cluster) & BrokerCommands;

/**
 * How long a Redis Cluster keeps a dead node in the nodes' set: a node its callers' views do not know counts as
 * alive there, so it stays until no tab can name it any more. A tab's keys live `keepAliveMs` (10 minutes by
 * default) unless a live holder holds it again, and that re-hold prunes the dead holders it knows of
 * (redis-broker-lua.ts `pruneDead`): half an hour is well past both.
 */
const CLUSTER_FORGET_DEAD_MS = 30 * 60 * 1000;

export interface RedisBrokerOptions {
  /** This node's name in the tabs' presence (the hub's `node`): the broker hears the announcements addressed to it. */
  node: string;
  /** A second command connection for the periodic presence refresh (see `refresh`). */
  refreshConnection?: Redis | Cluster;
  /** Receives unreadable announcements and listeners' exceptions. */
  log: Pick<Logger, 'error' | 'warn'>;
}

/**
 * The broker of a cluster, in Redis (docs/redis.md "Event streams"; semantics: docs/events.md "Event
 * streams"): every change is one Lua script of redis-broker-scripts.ts, whose comment gives the keys. The
 * append script announces each event on the channel of each node that holds its tab (`eventsChannel`), and
 * each node's broker listens on its own through its connection's subscriber: at-most-once (pub/sub keeps nothing for a subscriber that is away; `onResume`
 * says when it is back), in append order per tab (Redis runs one script at a time and forwards messages in
 * the order they were published).
 */
export class RedisBroker implements Broker {
  private readonly redis: ScriptConnection;
  private readonly topology: BrokerTopology;
  /** On a Redis Cluster: the nodes' set as this node's last heartbeat read it (the scripts cannot). */
  private readonly liveness: LivenessView;
  /**
   * On a Redis Cluster: the nodes this broker has held tabs for, each after one heartbeat of it. There a
   * node unknown to the nodes' set counts as alive, so a node must be in the set before its first hold,
   * or a node that died before its first heartbeat would count as a holder until its tabs' keys expire.
   */
  private readonly introduced = new Map<string, Promise<unknown>>();
  /** Lifetime of the keys of a tab nobody holds (after its last event or drop). */
  private readonly ttl: number;
  private readonly nodes: string;
  private readonly generation: string;
  private readonly prefix: string;
  /** Where the script announces to a holder: the prefixed channel name before the node's name. */
  private readonly channelPrefix: string;
  private readonly refreshConnection: ScriptConnection | undefined;
  private readonly log: Pick<Logger, 'error' | 'warn'>;
  private readonly listeners: Listeners<Announcement>;
  private unsubscribe: (() => Promise<void>) | undefined;

  private constructor(
    private readonly connection: RedisConnection | RedisClusterConnection,
    private readonly bounds: BrokerBounds,
    options: RedisBrokerOptions,
  ) {
    this.prefix = connection.prefix;
    this.channelPrefix = connection.channel(EVENTS_CHANNEL_PREFIX);
    this.topology = connection.topology;
    this.log = options.log;
    this.listeners = new Listeners('broker listener', options.log);
    const { refreshConnection } = options;
    for (const c of refreshConnection ? [connection.client, refreshConnection] : [connection.client]) defineBrokerCommands(c, this.topology);
    this.redis = connection.client as ScriptConnection;
    this.refreshConnection = refreshConnection as ScriptConnection | undefined;
    this.ttl = bounds.idleStreamMs + bounds.presenceTtlMs;
    // On a cluster the set and the generation share a slot of their own (one script touches both).
    this.nodes = this.topology === 'single' ? `${this.prefix}nodes` : `${this.prefix}{nodes}`;
    this.generation = this.topology === 'single' ? `${this.prefix}generation` : `${this.prefix}{nodes}:generation`;
    this.liveness = new LivenessView(bounds.presenceTtlMs);
  }

  /**
   * A node's broker on `connection` (its keys and channels under the connection's prefix), subscribed to its
   * node's events channel before it is returned (or, while Redis is down, as soon as it is back:
   * connection.subscribe), so it hears every event of a tab from the moment the node holds it.
   */
  static async open(connection: RedisConnection | RedisClusterConnection, bounds: BrokerBounds, options: RedisBrokerOptions): Promise<RedisBroker> {
    const broker = new RedisBroker(connection, bounds, options);
    broker.unsubscribe = await connection.subscribe(eventsChannel(options.node), (payload) => broker.receive(payload));
    return broker;
  }

  async publish(to: TabAddress, event: TabEvent, now: number, fallback?: DeliveryFallback, key = ''): Promise<PublishOutcome> {
    if (key !== '' && !PUBLISH_KEY_PATTERN.test(key)) throw new Error(`publish key ${JSON.stringify(key)} is not ${PUBLISH_KEY_PATTERN}`);
    const body = JSON.stringify(fallback ? { type: event.type, data: event.data, fallback } : { type: event.type, data: event.data });
    const cluster = this.topology === 'cluster';
    const announcement = announcementBody(to, event, fallback !== undefined);
    const reply = await this.redis.twPublish(
      ...this.keys(to), ...this.nodesKey(),
      now, epochAt(now), this.bounds.limit, now - this.bounds.maxAgeMs, this.ttl, fallback ? 1 : 0, `${fallback ? 1 : 0}${key}:${body}`,
      this.channelPrefix, cluster ? '' : announcement, key, ...this.deadNodes(now),
    );
    const answer = Number(reply[0]);
    if (answer === 0) return { frame: undefined, unsent: [], dropped: { overflow: 0, expired: 0 } };
    const id = Number(reply[1]) + Number(reply[2]);
    const outcome: PublishOutcome = {
      frame: { type: event.type, data: event.data, id },
      unsent: fallbacksOf(reply.slice(6)),
      dropped: { overflow: Number(reply[3]), expired: Number(reply[4]) },
      ...(answer === 2 ? { duplicate: true } : {}),
    };
    if (cluster) {
      const failure = await this.announce(String(reply[5]), `${id}:${announcement}`, fallback !== undefined);
      if (failure !== undefined) throw new AnnouncementFailed(outcome, { cause: failure });
    }
    return outcome;
  }

  subscribe(listener: AnnouncementListener): () => void {
    return this.listeners.add(listener);
  }

  onResume(listener: () => void): () => void {
    return this.connection.onResubscribed(listener);
  }

  async read(to: TabAddress, afterId: number | undefined, now: number): Promise<StreamRead> {
    const [m, ev, p, k, kt] = this.keys(to);
    const reply = await this.redis.twRead(m, ev, p, k, kt, now, this.bounds.limit, now - this.bounds.maxAgeMs);
    if (reply.length <= 1) {
      const gone = { frames: [], last: 0, epoch: 0, lost: afterId !== undefined, unsent: [], expired: 0, awaiting: NONE_AWAITING };
      return reply[0] === 'x' ? { ...gone, letGo: true } : gone;
    }
    const epoch = Number(reply[0]);
    const last = epoch + Number(reply[1]);
    const sent = epoch + Number(reply[2]);
    const nUnsent = Number(reply[4]);
    const unsent = fallbacksOf(reply.slice(5, 5 + nUnsent));
    const entries = reply.slice(5 + nUnsent).map((raw) => parseEntry(String(raw), epoch));
    const first = entries[0]?.id;
    const { cursor, lost } = afterId === undefined ? { cursor: sent, lost: false } : resumePoint(afterId, epoch, first, last);
    const after = entries.filter((e) => e.id > cursor);
    const awaiting = after.some((e) => e.fallback) ? after.filter((e) => e.fallback).map((e) => e.id) : NONE_AWAITING;
    return { frames: after.map((e) => e.frame), last, epoch, lost, unsent, expired: Number(reply[3]), awaiting };
  }

  async markSent(to: TabAddress, id: number): Promise<void> {
    await this.redis.twMarkSent(this.keys(to)[0], id);
  }

  async confirm(to: TabAddress, written: { ids: readonly number[] } | { through: number }): Promise<number> {
    const [m, ev] = this.keys(to);
    if ('through' in written) return Number(await this.redis.twConfirm(m, ev, Math.min(written.through, Number.MAX_SAFE_INTEGER)));
    if (written.ids.length === 0) return 0;
    return Number(await this.redis.twConfirm(m, ev, '', ...written.ids));
  }

  async withdraw(to: TabAddress, ids: readonly number[]): Promise<DeliveryFallback[]> {
    if (ids.length === 0) return [];
    const [m, ev] = this.keys(to);
    return fallbacksOf(await this.redis.twWithdraw(m, ev, ...ids));
  }

  async hold(to: TabAddress, node: string, connectedUntil: number, now: number): Promise<HoldOutcome> {
    await this.introduce(node, now);
    const reply = await this.redis.twHold(...this.holdArgs(to, node, connectedUntil, now, false));
    return { created: Number(reply[0]) === 1, remade: Number(reply[0]) === 2, epoch: Number(reply[1]) };
  }

  async heartbeat(node: string, now: number): Promise<string> {
    const cluster = this.topology === 'cluster';
    const reply = await this.redis.twHeartbeat(
      this.nodes, this.generation, now, node, now + this.bounds.presenceTtlMs, randomUUID(),
      cluster ? now - CLUSTER_FORGET_DEAD_MS : now, cluster ? 1 : 0,
    );
    if (cluster) this.liveness.update(reply.slice(1), now);
    return String(reply[0]);
  }

  /**
   * Holds many tabs (the node's rolling re-hold, or all of them after its heartbeat lapsed). It goes over
   * its own connection when one was given, in slices with a pause between them, so the events a node
   * publishes meanwhile neither queue behind thousands of scripts on the command connection nor wait
   * long for Redis's one thread.
   */
  async refresh(tabs: readonly { to: TabAddress; connectedUntil: number }[], node: string, now: number): Promise<TabAddress[]> {
    await this.introduce(node, now);
    const lost: TabAddress[] = [];
    const redis = this.refreshConnection ?? this.redis;
    for (let i = 0; i < tabs.length; i += REFRESH_SLICE) {
      if (i > 0) await new Promise((resolve) => setImmediate(resolve));
      const slice = tabs.slice(i, i + REFRESH_SLICE);
      const replies = await this.holdAll(redis, slice.map(({ to, connectedUntil }) => this.holdArgs(to, node, connectedUntil, now, true)));
      replies.forEach((reply, n) => {
        // 1: made now; 2: made again by an append since the last hold.
        if (reply && Number(reply[0]) !== 0) lost.push(slice[n]!.to);
      });
    }
    return lost;
  }

  async drop(to: TabAddress, node: string, now: number): Promise<{ holders: number; unsent: DeliveryFallback[] }> {
    const [m, ev, p] = this.keys(to);
    const reply = await this.redis.twDrop(m, ev, p, ...this.nodesKey(), now, node, this.ttl, ...this.deadNodes(now));
    return { holders: Number(reply[0]), unsent: fallbacksOf(reply.slice(1)) };
  }

  async presence(to: TabAddress, now: number): Promise<{ held: boolean; connected: boolean }> {
    const reply = await this.redis.twPresence(this.keys(to)[2], ...this.nodesKey(), now, ...this.deadNodes(now));
    return { held: Number(reply[0]) > 0, connected: Number(reply[1]) === 1 };
  }

  sweep(): { unsent: DeliveryFallback[]; expired: number } {
    // Redis expires the keys by itself; streams are trimmed whenever they are written or read.
    return { unsent: [], expired: 0 };
  }

  async close(): Promise<void> {
    // The connection belongs to the caller: only this broker's subscription ends.
    this.listeners.clear();
    await this.unsubscribe?.();
  }

  private receive(payload: string): void {
    let announcement: Announcement;
    try {
      announcement = parseAnnouncement(payload);
    } catch (err) {
      this.log.warn({ err }, 'unreadable event announcement dropped');
      return;
    }
    this.listeners.tell(announcement);
  }

  private holdArgs(to: TabAddress, node: string, connectedUntil: number, now: number, keepLater: boolean): (string | number)[] {
    const [m, ev, p] = this.keys(to);
    const until = Math.floor(Math.min(connectedUntil, Number.MAX_SAFE_INTEGER));
    return [m, ev, p, ...this.nodesKey(), now, epochAt(now), node, until, now + this.bounds.presenceTtlMs, Math.max(this.ttl, this.bounds.keepAliveMs ?? 0), keepLater ? 1 : 0, ...this.deadNodes(now)];
  }

  /**
   * Many holds at once: on one Redis one pipeline; on a cluster each its own command (a pipeline's keys
   * must share a slot there), sent together so the client writes them to each shard in few writes. On a
   * cluster a hold that failed (its shard is away) is undefined and the others count: the roll holds it again
   * within its roll time, and one stalled shard does not keep the node's other tabs from being held and read.
   * Only when every hold failed does it fail.
   */
  private async holdAll(redis: ScriptConnection, all: (string | number)[][]): Promise<(Reply | undefined)[]> {
    if (this.topology === 'cluster') {
      const settled = await Promise.allSettled(all.map((args) => redis.twHold(...args)));
      const failed = settled.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed.length > 0 && failed.length === settled.length) throw failed[0]!.reason;
      if (failed.length > 0) this.log.warn({ err: failed[0]!.reason, failed: failed.length, of: settled.length }, 'some tabs were not held again (their shard is away)');
      return settled.map((r) => (r.status === 'fulfilled' ? r.value : undefined));
    }
    const pipeline = redis.pipeline() as unknown as BrokerCommands & { exec(): Promise<[Error | null, Reply][] | null> };
    for (const args of all) void pipeline.twHold(...args);
    return ((await pipeline.exec()) ?? []).map(([err, reply]) => {
      if (err) throw err;
      return reply;
    });
  }

  /** On a cluster, the first time `node` holds a tab here: its heartbeat first (see `introduced`). */
  private async introduce(node: string, now: number): Promise<void> {
    if (this.topology === 'single') return;
    let first = this.introduced.get(node);
    if (!first) {
      first = this.heartbeat(node, now);
      this.introduced.set(node, first);
      // Tried again at the next hold. The hold goes on meanwhile: the shard of the nodes' set being away must
      // not stop every Register of the node (a holder the set does not know counts as alive).
      first.catch(() => this.introduced.delete(node));
    }
    await first.catch((err: unknown) => this.log.warn({ err }, 'this node could not enter the nodes\' set before a hold'));
  }

  /** The nodes' set as a script's last key, on one Redis; on a cluster the scripts take `deadNodes` instead. */
  private nodesKey(): string[] {
    return this.topology === 'single' ? [this.nodes] : [];
  }

  /** On a cluster: the nodes this node knows dead, as the scripts' last argument (redis-broker-lua.ts). */
  private deadNodes(now: number): string[] {
    return this.topology === 'single' ? [] : [this.liveness.dead(now).join(' ')];
  }

  /**
   * On a cluster: tells the holders the script named (sharded pub/sub, each on its node's channel). Answers the
   * failure of an event without a fallback, which fails the publish (AnnouncementFailed). One with a fallback is
   * not failed (the hub would store it while the stream keeps it): it waits in the stream for its tab's next read.
   */
  private async announce(told: string, payload: string, hasFallback: boolean): Promise<unknown> {
    if (told === '') return undefined;
    const connection = this.connection as RedisClusterConnection;
    const results = await Promise.allSettled(told.split(' ').map((holder) => connection.publish(this.channelPrefix + holder, payload)));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (!failed) return undefined;
    if (!hasFallback) return failed.reason;
    this.log.warn({ err: failed.reason }, 'an event announcement failed; its tab reads it with its next read');
    return undefined;
  }

  private keys(to: TabAddress): TabKeys {
    return tabKeys(this.prefix, to);
  }
}
