import type { Redis } from 'ioredis';
import { CLUSTER_PRELUDE, LIB, SINGLE_PRELUDE } from './redis-broker-lua.js';
import { HEARTBEAT } from './redis-heartbeat-script.js';

/**
 * The Redis broker's scripts (redis-broker.ts; docs/redis.md "Event streams"). Per tab address three keys,
 * in one hash slot (the `{…}` tag):
 * - `…:m` hash: `e` epoch, `l` newest offset, `s` sent mark (offset), `t` last touch; on a Redis Cluster `r`, the
 *   replication id of the primary that last wrote it, and `x` from a fail-over's check that let the tab's
 *   stream go until the stream's next hold (redis-broker-lua.ts `lineage`);
 * - `…:ev` list of entries `offset:at:fallbackFlag[publishKey]:json` (json: `{type, data, fallback?}`), oldest
 *   first; the publish key follows the flag digit, so parsers that read `offset:at:flag` and the json after the
 *   third ':' (those of earlier versions too, during a rolling upgrade) are not disturbed by it;
 * - `…:p` hash: node -> `connectedUntil` (ms; a node with a live connection writes a time far ahead);
 * - `…:k` hash: publish key -> `epoch:offset` of the entry published with it, while that entry is in `…:ev`
 *   or could still be retried, so a retried publish answers the entry instead of appending a copy;
 * - `…:kt` list: `publishKey:at` of entries trimmed for the count bound while younger than the age bound, oldest
 *   first. A retry comes within the age bound (the hub's retries and the result outbox give up there), so
 *   their keys stay in `…:k` until then: a copy held by another node that lands after the stream moved
 *   `limit` entries on is still answered as the entry it repeats. At most `TRIMMED_KEYS_PER_LIMIT` × limit of
 *   them are kept per tab (a bound on memory; a tab that gets more events than that within the age bound
 *   loses the guarantee for the oldest).
 * And one key for all tabs, `…nodes`: a sorted set of node -> alive until (ms), the nodes' heartbeat. On one
 * Redis it is the last key of each script that asks liveness; on a Redis Cluster it lives in a slot of its own,
 * and the calling node passes what it knows of it (redis-broker-lua.ts, the topologies' preludes).
 * A tab's holder counts only while its node is alive, so a node keeps all its tabs with one command
 * every few seconds instead of one script per tab (docs/benchmarks.md#cluster-round-trips: re-stamping 19,000
 * tabs every 10 s kept Redis busy for 0.6 s each time, and events waited behind it).
 * Every change is one Lua script, so the presence check of a fallback event and its append, the
 * bounds and the sent mark never interleave with another node's. Ids are epoch + offset, computed
 * here: Lua's numbers print large integers in exponent form, so only small offsets cross the script.
 * A held tab's keys live `keepAliveMs` and are re-held by their nodes well within it (a dead node's
 * tabs go by themselves); a tab nobody holds keeps them `idleStreamMs + presenceTtlMs` after its last
 * event or drop, for its session's return. Every key gets its lifetime in the script that makes it, so the
 * scripts lengthen one with `PEXPIRE … GT` (Redis 7.0) in one command, not PTTL then PEXPIRE: Redis runs
 * one script at a time, and each inner command is its CPU (docs/benchmarks.md "Broker scripts").
 */
/**
 * KEYS m ev p k kt [nodes]; ARGV now epoch limit cutoff ttl requireConnected entryTail channelPrefix announcement key [dead].
 * The script that appends the event announces it as `<id>:<announcement>` (redis-broker.ts reads it back) on
 * the channel of each node that has the tab connected (`channelPrefix` + node: one PUBLISH per entry of `p`
 * whose connected time is ahead), in the same step as the append: one round trip instead of two on every
 * event's path, and no other node hears it (docs/redis.md "Event streams"). A node writes its entry, connected,
 * before it reads the stream for a new connection (`twHold`), so an event is either in what it reads or
 * announced to it. Entries of nodes that died are announced to until `holders` prunes them: a PUBLISH nobody
 * listens to costs Redis next to nothing, and a node whose heartbeat is late but that lives on keeps hearing
 * its tabs. The id is printed with '%.0f' (exact below 2^53; ids are about
 * 1.8e15) because Lua prints large numbers in exponent form. An XMPP event that finds no connected node: the
 * script neither appends nor announces it.
 * A `key` already in `k` for this epoch answers that entry (reply[1] = 2) and appends nothing: a publish
 * whose answer timed out may have run, and its retry must not run again (docs/redis.md "Outages").
 * Each inner command costs Redis's one thread (docs/benchmarks.md "Broker scripts"): the meta fields are read
 * once, the offset and touch written in one HSET, RPUSH's answer is the list's length.
 */
const PUBLISH = (prelude: string): string => `${prelude}${LIB}
local now = tonumber(ARGV[1])
-- Returns the holders told, space-separated, when the node is to tell them (a Redis Cluster), else ''.
local function announce(entries, epoch, off)
  local payload = string.format('%.0f', tonumber(epoch) + tonumber(off)) .. ':' .. ARGV[9]
  local told = {}
  for i = 1, #entries, 2 do
    if tonumber(entries[i + 1]) > now then
      local name = tell(ARGV[8], entries[i], payload)
      if name then table.insert(told, name) end
    end
  end
  return table.concat(told, ' ')
end
local stamp = lineage({KEYS[1], KEYS[2], KEYS[4], KEYS[5]})
local meta = redis.call('HMGET', KEYS[1], 'e', 'l', 's')
local epoch = meta[1]
if ARGV[10] ~= '' and epoch then
  local earlier = redis.call('HGET', KEYS[4], ARGV[10])
  if earlier then
    local e, off = string.match(earlier, '^(%d+):(%d+)$')
    if e == epoch then
      -- Told again: the first run's announcement may have been missed, and a writer skips an id it wrote.
      return {2, epoch, off, 0, 0, announce(redis.call('HGETALL', KEYS[3]), epoch, off)}
    end
  end
end
local entries
if ARGV[6] == '1' then
  local live, conn, kept = holders(KEYS[3], now)
  if not conn then return {0} end
  entries = kept
end
local made = not epoch
local off, sent
if made then
  -- A fail-over's x (lineage) stays: the stream's next hold reports it made again.
  epoch, off, sent = epochFrom(ARGV[2]), 1, 0
  redis.call('HSET', KEYS[1], 'e', epoch, 'l', off, 's', sent, 't', ARGV[1], unpack(stamp))
else
  off, sent = tonumber(meta[2]) + 1, tonumber(meta[3])
  redis.call('HSET', KEYS[1], 'l', off, 't', ARGV[1], unpack(stamp))
end
local entry = off .. ':' .. ARGV[1] .. ':' .. ARGV[7]
local n = redis.call('RPUSH', KEYS[2], entry)
if ARGV[10] ~= '' then redis.call('HSET', KEYS[4], ARGV[10], epoch .. ':' .. off) end
local out, overflow, expired, popped, trimmed = trim(KEYS[2], n, n == 1 and {entry} or nil, sent, tonumber(ARGV[3]), tonumber(ARGV[4]), KEYS[4], KEYS[5])
-- The event list lives as long as the rest of the tab's state (a held tab's: keepAliveMs); the keys of
-- its entries as long (a retry comes within the age bound, which is shorter).
local ttl = tonumber(ARGV[5])
if made then redis.call('PEXPIRE', KEYS[1], ttl)
else
  local left = redis.call('PTTL', KEYS[1])
  if left < ttl then redis.call('PEXPIRE', KEYS[1], ttl) else ttl = left end
end
extend(KEYS[2], ttl, n == 1)
extend(KEYS[3], ttl, false)
redis.call('PEXPIRE', KEYS[4], ttl)
if trimmed > 0 then redis.call('PEXPIRE', KEYS[5], ttl) end
local result = {1, epoch, off, overflow, expired, announce(entries or redis.call('HGETALL', KEYS[3]), epoch, off)}
for _, e in ipairs(out) do table.insert(result, e) end
return result`;

/** KEYS m ev p k kt; ARGV now limit cutoff */
const READ = (prelude: string): string => `${prelude}${LIB}
lineage({KEYS[1], KEYS[2], KEYS[4], KEYS[5]})
local meta = redis.call('HMGET', KEYS[1], 'e', 'l', 's', 'x')
-- No stream; 'x' when the check let it go (lineage) and nothing made it again.
if not meta[1] then return meta[4] and {'x'} or {} end
local all = redis.call('LRANGE', KEYS[2], 0, -1)
local out, overflow, expired, popped, trimmed, kept = trim(KEYS[2], #all, all, tonumber(meta[3]), tonumber(ARGV[2]), tonumber(ARGV[3]), KEYS[4], KEYS[5])
if kept and trimmed > 0 then
  -- The keys' list lives as long as the keys' hash; with that gone (expired), as long as the stream, so it never
  -- stays without a lifetime.
  local ttl = redis.call('PTTL', KEYS[4])
  if ttl <= 0 then ttl = redis.call('PTTL', KEYS[1]) end
  if ttl > 0 then redis.call('PEXPIRE', KEYS[5], ttl) end
end
local result = {meta[1], meta[2], meta[3], expired + overflow, #out}
for _, e in ipairs(out) do table.insert(result, e) end
for i = popped + 1, #all do table.insert(result, all[i]) end
return result`;

/** KEYS m; ARGV id */
const MARK_SENT = `
local meta = redis.call('HMGET', KEYS[1], 'e', 'l', 's')
if not meta[1] then return 0 end
local off = tonumber(ARGV[1]) - tonumber(meta[1])
if off > tonumber(meta[3]) and off <= tonumber(meta[2]) then redis.call('HSET', KEYS[1], 's', off) end
return 1`;

/**
 * KEYS m ev; ARGV through ids… (ids as epoch + offset; `through` '' when ids are given). Clears the fallback
 * flag of the entries named (or written up to `through`, the sent mark at most) that still carry one.
 */
const CONFIRM = `
local meta = redis.call('HMGET', KEYS[1], 'e', 's')
if not meta[1] then return 0 end
local epoch, sent = tonumber(meta[1]), tonumber(meta[2])
local through, named = -1, {}
if ARGV[1] ~= '' then through = math.min(tonumber(ARGV[1]) - epoch, sent)
else for i = 2, #ARGV do named[tonumber(ARGV[i]) - epoch] = true end end
local n = 0
for i, e in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do
  local off, at, fb = string.match(e, '^(%d+):(%d+):(%d)')
  if fb == '1' and (tonumber(off) <= through or named[tonumber(off)]) then
    redis.call('LSET', KEYS[2], i - 1, off .. ':' .. at .. ':0' .. string.sub(e, #off + #at + 4))
    n = n + 1
  end
end
return n`;

/** KEYS m ev; ARGV ids… (epoch + offset). Removes the named entries that still carry a fallback; returns them. */
const WITHDRAW = `
local epoch = redis.call('HGET', KEYS[1], 'e')
if not epoch then return {} end
local named = {}
for i = 1, #ARGV do named[tonumber(ARGV[i]) - tonumber(epoch)] = true end
local out = {}
for _, e in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do
  local off, fb = string.match(e, '^(%d+):%d+:(%d)')
  if fb == '1' and named[tonumber(off)] then table.insert(out, e) end
end
for _, e in ipairs(out) do redis.call('LREM', KEYS[2], 1, e) end
return out`;

/**
 * KEYS m ev p [nodes]; ARGV now epoch node connectedUntil aliveUntil ttl keepLater [dead]. `keepLater` '1' (the
 * periodic re-hold): a later connected time already there stays. The re-hold reads a tab's connected time
 * before its pipeline runs, on a connection of its own, so it may land after the `twHold` of a connection
 * that attached meanwhile; lowering that entry would stop the tab's announcements to its node (only the
 * node's own detach, on its command connection in order with its attaches, lowers it). Answers {made, epoch}:
 * made 1 when this hold made the stream, 2 when an append made it again after a fail-over's check let it go
 * (lineage), else 0.
 */
const HOLD = (prelude: string): string => `${prelude}${LIB}
local stamp = lineage({KEYS[1], KEYS[2]})
local meta = redis.call('HMGET', KEYS[1], 'e', 'x')
local epoch, created, made = meta[1], 0, false
if epoch then
  redis.call('HSET', KEYS[1], 't', ARGV[1], unpack(stamp))
  -- The first hold of a stream that a fail-over's check let go and an append made again (lineage): 2.
  if meta[2] then
    created = 2
    redis.call('HDEL', KEYS[1], 'x')
  end
else
  epoch, created, made = epochFrom(ARGV[2]), 1, true
  redis.call('HSET', KEYS[1], 'e', epoch, 'l', 0, 's', 0, 't', ARGV[1], unpack(stamp))
  if meta[2] then redis.call('HDEL', KEYS[1], 'x') end
end
-- Whether this node's entry is new in p, which may then be new too (and have no lifetime yet).
local fresh
if ARGV[7] == '1' then
  local current = redis.call('HGET', KEYS[3], ARGV[3])
  if not (current and tonumber(current) >= tonumber(ARGV[4])) then redis.call('HSET', KEYS[3], ARGV[3], ARGV[4]) end
  fresh = not current
else fresh = redis.call('HSET', KEYS[3], ARGV[3], ARGV[4]) == 1 end
-- A node new to Redis counts as alive from its first hold; after that only its heartbeat extends it.
seen(ARGV[3], ARGV[5])
pruneDead(KEYS[3])
extend(KEYS[1], ARGV[6], made)
extend(KEYS[2], ARGV[6], false)
if not (fresh and redis.call('PEXPIRE', KEYS[3], ARGV[6], 'NX') == 1) then extend(KEYS[3], ARGV[6], false) end
return {created, epoch}`;

/** KEYS m ev p [nodes]; ARGV now node ttl [dead] */
const DROP = (prelude: string): string => `${prelude}${LIB}
redis.call('HDEL', KEYS[3], ARGV[2])
local live = holders(KEYS[3], tonumber(ARGV[1]))
if live > 0 then return {live} end
local sent = redis.call('HGET', KEYS[1], 's')
if not sent then return {live} end
-- Nobody holds the tab: its stream waits for its session's return, then goes.
keep(ARGV[3])
sent = tonumber(sent)
local result = {0}
for _, e in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do
  local off, fb = string.match(e, '^(%d+):%d+:(%d)')
  if fb == '1' and tonumber(off) > sent then
    table.insert(result, e)
    redis.call('LREM', KEYS[2], 1, e)
  end
end
return result`;

/** KEYS p [nodes]; ARGV now [dead] */
const PRESENCE = (prelude: string): string => `${prelude}${LIB}
local live, conn = holders(KEYS[1], tonumber(ARGV[1]))
return {live, conn and 1 or 0}`;

/** What a script answers: Lua tables arrive as arrays of strings and integers. */
export type Reply = (string | number)[];

/**
 * One Redis, or a Redis Cluster (docs/redis.md "Redis Cluster"). On a cluster the scripts that ask liveness
 * take no nodes key and one more argument (the dead nodes), and the append script names the holders instead
 * of publishing to them.
 */
export type BrokerTopology = 'single' | 'cluster';

/**
 * The scripts as commands of a connection (ioredis sends each once and then runs it by its digest). Keys
 * and arguments as the scripts' comments give them; `[nodes]` and `[dead]` as the topology has them.
 */
export interface BrokerCommands {
  twPublish(...keysAndArgs: (string | number)[]): Promise<Reply>;
  twRead(m: string, ev: string, p: string, k: string, kt: string, ...args: (string | number)[]): Promise<Reply>;
  twMarkSent(m: string, id: number): Promise<number>;
  twConfirm(m: string, ev: string, through: number | '', ...ids: number[]): Promise<number>;
  twWithdraw(m: string, ev: string, ...ids: number[]): Promise<Reply>;
  twHold(...keysAndArgs: (string | number)[]): Promise<Reply>;
  twDrop(...keysAndArgs: (string | number)[]): Promise<Reply>;
  twPresence(...keysAndArgs: (string | number)[]): Promise<Reply>;
  twHeartbeat(nodes: string, generation: string, now: number, node: string, aliveUntil: number, newGeneration: string, forgetBefore: number, withView: 0 | 1): Promise<Reply>;
}

/** What `defineCommand` needs: a connection to one Redis or to a Redis Cluster. */
interface DefinesCommands {
  defineCommand(name: string, definition: { numberOfKeys: number; lua: string }): void;
}

/** Adds the scripts to a command connection as `tw…` commands. */
export function defineBrokerCommands(connection: DefinesCommands, topology: BrokerTopology): void {
  const prelude = topology === 'single' ? SINGLE_PRELUDE : CLUSTER_PRELUDE;
  const nodesKey = topology === 'single' ? 1 : 0;
  connection.defineCommand('twPublish', { numberOfKeys: 5 + nodesKey, lua: PUBLISH(prelude) });
  connection.defineCommand('twRead', { numberOfKeys: 5, lua: READ(prelude) });
  connection.defineCommand('twMarkSent', { numberOfKeys: 1, lua: MARK_SENT });
  connection.defineCommand('twConfirm', { numberOfKeys: 2, lua: CONFIRM });
  connection.defineCommand('twWithdraw', { numberOfKeys: 2, lua: WITHDRAW });
  connection.defineCommand('twHold', { numberOfKeys: 3 + nodesKey, lua: HOLD(prelude) });
  connection.defineCommand('twDrop', { numberOfKeys: 3 + nodesKey, lua: DROP(prelude) });
  connection.defineCommand('twPresence', { numberOfKeys: 1 + nodesKey, lua: PRESENCE(prelude) });
  connection.defineCommand('twHeartbeat', { numberOfKeys: 2, lua: HEARTBEAT });
}
