import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { DeliveryFallback } from '../bus/bus.js';
import type { TabAddress } from '../protocol/address.js';
import type { EventFrame, TabEvent } from '../protocol/frames.js';
import { epochAt, NONE_AWAITING, PUBLISH_KEY_PATTERN, resumePoint, type Broker, type BrokerBounds, type PublishOutcome, type StreamRead } from './broker.js';
import { encodeBusMessage } from '../bus/redis-bus.js';
import { defineBrokerCommands, type BrokerCommands, type Reply } from './redis-broker-scripts.js';

/** Hold scripts sent at once by `refresh`; Redis runs one slice (~18 µs a script) before it turns to other clients' commands. */
const REFRESH_SLICE = 100;

interface Parsed {
  id: number;
  at: number;
  frame: EventFrame;
  fallback: DeliveryFallback | undefined;
}

/**
 * `offset:at:flag[publishKey]:json` with the stream's epoch -> the entry; the flag (one digit, the publish key
 * follows it) says whether its fallback still counts (a confirmed one does not).
 */
function parseEntry(raw: string, epoch: number): Parsed {
  const a = raw.indexOf(':');
  const b = raw.indexOf(':', a + 1);
  const c = raw.indexOf(':', b + 1);
  const body = JSON.parse(raw.slice(c + 1)) as { type: string; data: unknown; fallback?: DeliveryFallback };
  const id = epoch + Number(raw.slice(0, a));
  const fallback = raw.charAt(b + 1) === '1' ? body.fallback : undefined;
  return { id, at: Number(raw.slice(a + 1, b)), frame: { type: body.type, data: body.data, id }, fallback };
}

/**
 * The bus message announcing an event, encoded as RedisBus encodes it, split around the place of its id,
 * which only the script knows. The id is the message's last value: JSON keeps keys in the order they
 * were written, `frame` last in the message and `id` last in the frame.
 */
function announcementAround(to: TabAddress, event: TabEvent, awaiting: boolean): [string, string] {
  const frame = { type: event.type, data: event.data, id: 0 };
  const text = encodeBusMessage(awaiting ? { kind: 'event', to, awaiting: true, frame } : { kind: 'event', to, frame });
  const tail = '}}';
  return [text.slice(0, -('0'.length + tail.length)), tail];
}

const fallbacksOf = (raws: readonly (string | number)[]): DeliveryFallback[] =>
  raws.map((raw) => parseEntry(String(raw), 0).fallback).filter((f): f is DeliveryFallback => f !== undefined);

export interface RedisBrokerOptions {
  /** Put before every key; separates deployments sharing one Redis. Default `tabwire:`. */
  prefix?: string;
  /** A second command connection for the periodic presence refresh (see `refresh`). */
  refreshConnection?: Redis;
  /**
   * The bus channel (prefixed) of a RedisBus on the same Redis: each event is then announced on it by
   * the script that appends it, and `publish` says so (`announced`), so the hub does not publish again.
   */
  announceChannel?: string;
}

/**
 * The broker of a cluster, in Redis (docs/redis.md "Event streams"; semantics: docs/events.md "Event
 * streams"): every change is one Lua script of redis-broker-scripts.ts, whose comment gives the keys.
 */
export class RedisBroker implements Broker {
  private readonly redis: Redis & BrokerCommands;
  /** Lifetime of the keys of a tab nobody holds (after its last event or drop). */
  private readonly ttl: number;
  private readonly nodes: string;
  private readonly prefix: string;
  private readonly refreshConnection: Redis | undefined;
  private readonly announceChannel: string;

  /** `redis`: a command connection (not a subscriber). */
  constructor(redis: Redis, private readonly bounds: BrokerBounds, options: RedisBrokerOptions = {}) {
    this.prefix = options.prefix ?? 'tabwire:';
    this.refreshConnection = options.refreshConnection;
    this.announceChannel = options.announceChannel ?? '';
    const { refreshConnection } = this;
    for (const connection of refreshConnection ? [redis, refreshConnection] : [redis]) defineBrokerCommands(connection);
    this.redis = redis as Redis & BrokerCommands;
    this.ttl = bounds.idleStreamMs + bounds.presenceTtlMs;
    this.nodes = `${this.prefix}nodes`;
  }

  async publish(to: TabAddress, event: TabEvent, now: number, fallback?: DeliveryFallback, key = ''): Promise<PublishOutcome> {
    if (key !== '' && !PUBLISH_KEY_PATTERN.test(key)) throw new Error(`publish key ${JSON.stringify(key)} is not ${PUBLISH_KEY_PATTERN}`);
    const body = JSON.stringify(fallback ? { type: event.type, data: event.data, fallback } : { type: event.type, data: event.data });
    const [m, ev, p, k] = this.keys(to);
    const [head, tail] = this.announceChannel === '' ? ['', ''] : announcementAround(to, event, fallback !== undefined);
    const reply = await this.redis.twPublish(
      m, ev, p, this.nodes, k,
      now, epochAt(now), this.bounds.limit, now - this.bounds.maxAgeMs, this.ttl, fallback ? 1 : 0, `${fallback ? 1 : 0}${key}:${body}`,
      this.announceChannel, head, tail, key,
    );
    const answer = Number(reply[0]);
    if (answer === 0) return { frame: undefined, unsent: [], dropped: { overflow: 0, expired: 0 }, announced: false };
    const id = Number(reply[1]) + Number(reply[2]);
    return {
      announced: this.announceChannel !== '',
      frame: { type: event.type, data: event.data, id },
      unsent: fallbacksOf(reply.slice(5)),
      dropped: { overflow: Number(reply[3]), expired: Number(reply[4]) },
      ...(answer === 2 ? { duplicate: true } : {}),
    };
  }

  async read(to: TabAddress, afterId: number | undefined, now: number): Promise<StreamRead> {
    const [m, ev, p, k] = this.keys(to);
    const reply = await this.redis.twRead(m, ev, p, k, now, this.bounds.limit, now - this.bounds.maxAgeMs);
    if (reply.length === 0) return { frames: [], last: 0, epoch: 0, lost: afterId !== undefined, unsent: [], expired: 0, awaiting: NONE_AWAITING };
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

  async hold(to: TabAddress, node: string, connectedUntil: number, now: number): Promise<{ created: boolean; epoch: number }> {
    const reply = await this.redis.twHold(...this.holdArgs(to, node, connectedUntil, now));
    return { created: Number(reply[0]) === 1, epoch: Number(reply[1]) };
  }

  async heartbeat(node: string, now: number): Promise<string> {
    return this.redis.twHeartbeat(this.nodes, `${this.prefix}generation`, now, node, now + this.bounds.presenceTtlMs, randomUUID());
  }

  /**
   * Holds many tabs (the node's rolling re-hold, or all of them after its heartbeat lapsed). It goes over
   * its own connection when one was given, in slices with a pause between them, so the events a node
   * publishes meanwhile neither queue behind thousands of scripts on the command connection nor wait
   * long for Redis's one thread.
   */
  async refresh(tabs: readonly { to: TabAddress; connectedUntil: number }[], node: string, now: number): Promise<TabAddress[]> {
    const lost: TabAddress[] = [];
    const redis = (this.refreshConnection ?? this.redis) as Redis & BrokerCommands;
    for (let i = 0; i < tabs.length; i += REFRESH_SLICE) {
      if (i > 0) await new Promise((resolve) => setImmediate(resolve));
      const slice = tabs.slice(i, i + REFRESH_SLICE);
      const pipeline = redis.pipeline() as unknown as BrokerCommands & { exec(): Promise<[Error | null, Reply][] | null> };
      for (const { to, connectedUntil } of slice) void pipeline.twHold(...this.holdArgs(to, node, connectedUntil, now));
      const results = (await pipeline.exec()) ?? [];
      results.forEach(([err, reply], n) => {
        if (err) throw err;
        if (Number(reply[0]) === 1) lost.push(slice[n]!.to);
      });
    }
    return lost;
  }

  async drop(to: TabAddress, node: string, now: number): Promise<{ holders: number; unsent: DeliveryFallback[] }> {
    const [m, ev, p] = this.keys(to);
    const reply = await this.redis.twDrop(m, ev, p, this.nodes, now, node, this.ttl);
    return { holders: Number(reply[0]), unsent: fallbacksOf(reply.slice(1)) };
  }

  async presence(to: TabAddress, now: number): Promise<{ held: boolean; connected: boolean }> {
    const reply = await this.redis.twPresence(this.keys(to)[2], this.nodes, now);
    return { held: Number(reply[0]) > 0, connected: Number(reply[1]) === 1 };
  }

  sweep(): { unsent: DeliveryFallback[]; expired: number } {
    // Redis expires the keys by itself; streams are trimmed whenever they are written or read.
    return { unsent: [], expired: 0 };
  }

  async close(): Promise<void> {
    // The connection belongs to the caller.
  }

  private holdArgs(to: TabAddress, node: string, connectedUntil: number, now: number): [string, string, string, string, ...(string | number)[]] {
    const [m, ev, p] = this.keys(to);
    const until = Math.floor(Math.min(connectedUntil, Number.MAX_SAFE_INTEGER));
    return [m, ev, p, this.nodes, now, epochAt(now), node, until, now + this.bounds.presenceTtlMs, Math.max(this.ttl, this.bounds.keepAliveMs ?? 0)];
  }

  private keys(to: TabAddress): [string, string, string, string] {
    const base = `${this.prefix}t:{${to.session}:${to.tabId}}`;
    return [`${base}:m`, `${base}:ev`, `${base}:p`, `${base}:k`];
  }
}
