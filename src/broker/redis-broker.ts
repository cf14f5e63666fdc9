import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { DeliveryFallback } from '../bus/bus.js';
import type { TabAddress } from '../hub/address.js';
import type { EventFrame, TabEvent } from '../protocol/frames.js';
import { epochAt, resumePoint, type Broker, type BrokerBounds, type PublishOutcome, type StreamRead } from './broker.js';
import { encodeBusMessage } from '../bus/redis-bus.js';

/**
 * The broker of a cluster, in Redis (docs/redis.md "Event streams"; semantics: docs/events.md "Event streams"). Per tab address three keys,
 * in one hash slot (the `{…}` tag):
 * - `…:m` hash: `e` epoch, `l` newest offset, `s` sent mark (offset), `t` last touch;
 * - `…:ev` list of entries `offset:at:fallbackFlag:json` (json: `{type, data, fallback?}`), oldest first;
 * - `…:p` hash: node -> `connectedUntil` (ms; a node with a live connection writes a time far ahead).
 * And one key for all tabs, `…nodes`: a sorted set of node -> alive until (ms), the nodes' heartbeat.
 * A tab's holder counts only while its node is alive, so a node keeps all its tabs with one command
 * every few seconds instead of one script per tab (docs/benchmarks.md "Cluster": re-stamping 19,000
 * tabs every 10 s kept Redis busy for 0.6 s each time, and events waited behind it).
 * Every change is one Lua script, so the presence check of a fallback event and its append, the
 * bounds and the sent mark never interleave with another node's. Ids are epoch + offset, computed
 * here: Lua's numbers print large integers in exponent form, so only small offsets cross the script.
 * A held tab's keys live `keepAliveMs` and are re-held by their nodes well within it (a dead node's
 * tabs go by themselves); a tab nobody holds keeps them `idleStreamMs + presenceTtlMs` after its last
 * event or drop, for its session's return.
 */
const LIB = `
local function holders(p, nodes, now)
  local all = redis.call('HGETALL', p)
  local live, conn = 0, false
  for i = 1, #all, 2 do
    local alive = tonumber(redis.call('ZSCORE', nodes, all[i]) or '0')
    if alive <= now then redis.call('HDEL', p, all[i])
    else
      live = live + 1
      if tonumber(all[i + 1]) > now then conn = true end
    end
  end
  return live, conn
end
local function trim(ev, sent, limit, cutoff)
  local out, overflow, expired = {}, 0, 0
  local n = redis.call('LLEN', ev)
  while n > 0 do
    local head = redis.call('LINDEX', ev, 0)
    local off, at, fb = string.match(head, '^(%d+):(%d+):(%d)')
    local over = n > limit
    if not over and tonumber(at) >= cutoff then break end
    redis.call('LPOP', ev)
    n = n - 1
    if tonumber(off) > sent then
      if fb == '1' then table.insert(out, head) elseif over then overflow = overflow + 1 else expired = expired + 1 end
    end
  end
  return out, overflow, expired
end
local function create(m, epoch)
  if redis.call('HSETNX', m, 'e', epoch) == 1 then
    redis.call('HSET', m, 'l', 0, 's', 0)
    return 1
  end
  return 0
end
local function keep(ttl)
  for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], ttl) end
end
local function extend(ttl)
  for i = 1, 3 do
    if redis.call('PTTL', KEYS[i]) < tonumber(ttl) then redis.call('PEXPIRE', KEYS[i], ttl) end
  end
end
`;

/**
 * KEYS m ev p nodes; ARGV now epoch limit cutoff ttl requireConnected entryTail channel head tail.
 * With a channel, the bus message announcing the event is published here too: `head` id `tail`, the id
 * printed with '%.0f' (exact below 2^53; ids are about 1.8e15) because Lua prints large numbers in
 * exponent form. One round trip instead of two on every event's path (docs/redis.md "Event streams").
 */
const PUBLISH = `${LIB}
local now = tonumber(ARGV[1])
if ARGV[6] == '1' then
  local live, conn = holders(KEYS[3], KEYS[4], now)
  if not conn then return {0} end
end
create(KEYS[1], ARGV[2])
local off = redis.call('HINCRBY', KEYS[1], 'l', 1)
redis.call('HSET', KEYS[1], 't', ARGV[1])
redis.call('RPUSH', KEYS[2], off .. ':' .. ARGV[1] .. ':' .. ARGV[7])
local out, overflow, expired = trim(KEYS[2], tonumber(redis.call('HGET', KEYS[1], 's')), tonumber(ARGV[3]), tonumber(ARGV[4]))
-- The event list lives as long as the rest of the tab's state (a held tab's: keepAliveMs).
extend(math.max(tonumber(ARGV[5]), redis.call('PTTL', KEYS[1])))
local epoch = redis.call('HGET', KEYS[1], 'e')
if ARGV[8] ~= '' then
  redis.call('PUBLISH', ARGV[8], ARGV[9] .. string.format('%.0f', tonumber(epoch) + off) .. ARGV[10])
end
local result = {1, epoch, off, overflow, expired}
for _, e in ipairs(out) do table.insert(result, e) end
return result`;

/** KEYS m ev p; ARGV now limit cutoff */
const READ = `${LIB}
if redis.call('EXISTS', KEYS[1]) == 0 then return {} end
local out, overflow, expired = trim(KEYS[2], tonumber(redis.call('HGET', KEYS[1], 's')), tonumber(ARGV[2]), tonumber(ARGV[3]))
local meta = redis.call('HMGET', KEYS[1], 'e', 'l', 's')
local result = {meta[1], meta[2], meta[3], expired + overflow, #out}
for _, e in ipairs(out) do table.insert(result, e) end
for _, e in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do table.insert(result, e) end
return result`;

/** KEYS m; ARGV id */
const MARK_SENT = `
local meta = redis.call('HMGET', KEYS[1], 'e', 'l', 's')
if not meta[1] then return 0 end
local off = tonumber(ARGV[1]) - tonumber(meta[1])
if off > tonumber(meta[3]) and off <= tonumber(meta[2]) then redis.call('HSET', KEYS[1], 's', off) end
return 1`;

/** KEYS m ev p nodes; ARGV now epoch node connectedUntil aliveUntil ttl */
const HOLD = `${LIB}
local created = create(KEYS[1], ARGV[2])
redis.call('HSET', KEYS[1], 't', ARGV[1])
redis.call('HSET', KEYS[3], ARGV[3], ARGV[4])
-- A node new to Redis counts as alive from its first hold; after that only its heartbeat extends it.
redis.call('ZADD', KEYS[4], 'NX', ARGV[5], ARGV[3])
extend(ARGV[6])
return {created, redis.call('HGET', KEYS[1], 'e')}`;

/** KEYS m ev p nodes; ARGV now node ttl */
const DROP = `${LIB}
redis.call('HDEL', KEYS[3], ARGV[2])
local live = holders(KEYS[3], KEYS[4], tonumber(ARGV[1]))
if live > 0 or redis.call('EXISTS', KEYS[1]) == 0 then return {live} end
-- Nobody holds the tab: its stream waits for its session's return, then goes.
keep(ARGV[3])
local sent = tonumber(redis.call('HGET', KEYS[1], 's'))
local result = {0}
for _, e in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do
  local off, fb = string.match(e, '^(%d+):%d+:(%d)')
  if fb == '1' and tonumber(off) > sent then
    table.insert(result, e)
    redis.call('LREM', KEYS[2], 1, e)
  end
end
return result`;

/** KEYS p nodes; ARGV now */
const PRESENCE = `${LIB}
local live, conn = holders(KEYS[1], KEYS[2], tonumber(ARGV[1]))
return {live, conn and 1 or 0}`;

/**
 * KEYS nodes generation; ARGV now node aliveUntil newGeneration. Extends the node's life and returns
 * Redis's generation: a marker made again whenever Redis lost its data, so each node learns that it must
 * hold its tabs again. Nodes dead for good leave the set here, so it stays as small as the cluster.
 */
const HEARTBEAT = `
local generation = redis.call('GET', KEYS[2])
if not generation then
  generation = ARGV[4]
  redis.call('SET', KEYS[2], generation)
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
redis.call('ZADD', KEYS[1], 'GT', ARGV[3], ARGV[2])
return generation`;

type Reply = (string | number)[];

/** Hold scripts sent at once by `refresh`; Redis runs one slice (~18 µs a script) before it turns to other clients' commands. */
const REFRESH_SLICE = 100;

interface BrokerCommands {
  twPublish(m: string, ev: string, p: string, nodes: string, ...args: (string | number)[]): Promise<Reply>;
  twRead(m: string, ev: string, p: string, ...args: (string | number)[]): Promise<Reply>;
  twMarkSent(m: string, id: number): Promise<number>;
  twHold(m: string, ev: string, p: string, nodes: string, ...args: (string | number)[]): Promise<Reply>;
  twDrop(m: string, ev: string, p: string, nodes: string, ...args: (string | number)[]): Promise<Reply>;
  twPresence(p: string, nodes: string, now: number): Promise<Reply>;
  twHeartbeat(nodes: string, generation: string, now: number, node: string, aliveUntil: number, newGeneration: string): Promise<string>;
}

interface Parsed {
  id: number;
  at: number;
  frame: EventFrame;
  fallback: DeliveryFallback | undefined;
}

/** `offset:at:flag:json` with the stream's epoch -> the entry. */
function parseEntry(raw: string, epoch: number): Parsed {
  const a = raw.indexOf(':');
  const b = raw.indexOf(':', a + 1);
  const c = raw.indexOf(':', b + 1);
  const body = JSON.parse(raw.slice(c + 1)) as { type: string; data: unknown; fallback?: DeliveryFallback };
  const id = epoch + Number(raw.slice(0, a));
  return { id, at: Number(raw.slice(a + 1, b)), frame: { type: body.type, data: body.data, id }, fallback: body.fallback };
}

/**
 * The bus message announcing an event, encoded as RedisBus encodes it, split around the place of its id,
 * which only the script knows. The id is the message's last value: JSON keeps keys in the order they
 * were written, `frame` last in the message and `id` last in the frame.
 */
function announcementAround(to: TabAddress, event: TabEvent): [string, string] {
  const text = encodeBusMessage({ kind: 'event', to, frame: { type: event.type, data: event.data, id: 0 } });
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
    for (const connection of refreshConnection ? [redis, refreshConnection] : [redis]) {
      connection.defineCommand('twPublish', { numberOfKeys: 4, lua: PUBLISH });
      connection.defineCommand('twRead', { numberOfKeys: 3, lua: READ });
      connection.defineCommand('twMarkSent', { numberOfKeys: 1, lua: MARK_SENT });
      connection.defineCommand('twHold', { numberOfKeys: 4, lua: HOLD });
      connection.defineCommand('twDrop', { numberOfKeys: 4, lua: DROP });
      connection.defineCommand('twPresence', { numberOfKeys: 2, lua: PRESENCE });
      connection.defineCommand('twHeartbeat', { numberOfKeys: 2, lua: HEARTBEAT });
    }
    this.redis = redis as Redis & BrokerCommands;
    this.ttl = bounds.idleStreamMs + bounds.presenceTtlMs;
    this.nodes = `${this.prefix}nodes`;
  }

  async publish(to: TabAddress, event: TabEvent, now: number, fallback?: DeliveryFallback): Promise<PublishOutcome> {
    const body = JSON.stringify(fallback ? { type: event.type, data: event.data, fallback } : { type: event.type, data: event.data });
    const [m, ev, p] = this.keys(to);
    const [head, tail] = this.announceChannel === '' ? ['', ''] : announcementAround(to, event);
    const reply = await this.redis.twPublish(
      m, ev, p, this.nodes,
      now, epochAt(now), this.bounds.limit, now - this.bounds.maxAgeMs, this.ttl, fallback ? 1 : 0, `${fallback ? 1 : 0}:${body}`,
      this.announceChannel, head, tail,
    );
    if (Number(reply[0]) === 0) return { frame: undefined, unsent: [], dropped: { overflow: 0, expired: 0 }, announced: false };
    const id = Number(reply[1]) + Number(reply[2]);
    return {
      announced: this.announceChannel !== '',
      frame: { type: event.type, data: event.data, id },
      unsent: fallbacksOf(reply.slice(5)),
      dropped: { overflow: Number(reply[3]), expired: Number(reply[4]) },
    };
  }

  async read(to: TabAddress, afterId: number | undefined, now: number): Promise<StreamRead> {
    const [m, ev, p] = this.keys(to);
    const reply = await this.redis.twRead(m, ev, p, now, this.bounds.limit, now - this.bounds.maxAgeMs);
    if (reply.length === 0) return { frames: [], last: 0, epoch: 0, lost: afterId !== undefined, unsent: [], expired: 0 };
    const epoch = Number(reply[0]);
    const last = epoch + Number(reply[1]);
    const sent = epoch + Number(reply[2]);
    const nUnsent = Number(reply[4]);
    const unsent = fallbacksOf(reply.slice(5, 5 + nUnsent));
    const entries = reply.slice(5 + nUnsent).map((raw) => parseEntry(String(raw), epoch));
    const first = entries[0]?.id;
    const { cursor, lost } = afterId === undefined ? { cursor: sent, lost: false } : resumePoint(afterId, epoch, first, last);
    return { frames: entries.filter((e) => e.id > cursor).map((e) => e.frame), last, epoch, lost, unsent, expired: Number(reply[3]) };
  }

  async markSent(to: TabAddress, id: number): Promise<void> {
    await this.redis.twMarkSent(this.keys(to)[0], id);
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

  private keys(to: TabAddress): [string, string, string] {
    const base = `${this.prefix}t:{${to.session}:${to.tabId}}`;
    return [`${base}:m`, `${base}:ev`, `${base}:p`];
  }
}
