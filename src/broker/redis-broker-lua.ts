import { TRIMMED_KEYS_PER_LIMIT } from './trimmed-keys.js';

/**
 * The Lua functions the broker's scripts share (redis-broker-scripts.ts, whose comment gives the keys), put
 * before each script that uses them. Written for few inner commands (each is CPU of Redis's one thread):
 * the trim reads heads in slices and removes what it dropped with one LTRIM, one HDEL and one RPUSH;
 * `holders` asks the nodes' liveness once (`aliveUntil`, from the topology's prelude); `extend` lengthens a
 * lifetime in one PEXPIRE.
 */
export const LIB = `
local function chunked(cmd, key, values)
  -- Lua's unpack takes a few thousand values at most; the reply of the last call (RPUSH: the length).
  local reply
  for i = 1, #values, 1000 do reply = redis.call(cmd, key, unpack(values, i, math.min(i + 999, #values))) end
  return reply
end
local function holders(p, now)
  -- Also returns the live entries (node, connected time, …), what HGETALL would answer after the pruning.
  local all = redis.call('HGETALL', p)
  local live, conn, kept, dead = 0, false, {}, {}
  if #all == 0 then return live, conn, kept end
  local names = {}
  for i = 1, #all, 2 do table.insert(names, all[i]) end
  local alive = aliveUntil(names)
  for j, node in ipairs(names) do
    if tonumber(alive[j] or '0') <= now then table.insert(dead, node)
    else
      live = live + 1
      table.insert(kept, node)
      table.insert(kept, all[2 * j])
      if tonumber(all[2 * j]) > now then conn = true end
    end
  end
  if #dead > 0 then redis.call('HDEL', p, unpack(dead)) end
  return live, conn, kept
end
local function walk(key, n, bound, all, drop)
  -- Visits list key (n entries) from its head while drop(entry, left) says so (left: this one and those after
  -- it); returns how many it dropped, for one LTRIM. Heads come in slices (those past the count bound at
  -- once, then 1, 2, 4 …), or from all when the caller read the whole list.
  local dropped, slice, i, size = 0, all or {}, 0, 1
  while dropped < n do
    i = i + 1
    if i > #slice then
      slice = redis.call('LRANGE', key, dropped, dropped + math.max(n - dropped - bound, 0) + size - 1)
      i, size = 1, size * 2
    end
    if not drop(slice[i], n - dropped) then break end
    dropped = dropped + 1
  end
  return dropped
end
local function trim(ev, n, all, sent, limit, cutoff, k, kt)
  local out, overflow, expired = {}, 0, 0
  local forget, young = {}, {}
  local popped = walk(ev, n, limit, all, function(head, left)
    local off, at, fb, key = string.match(head, '^(%d+):(%d+):(%d)([%w_%-]*):')
    local over = left > limit
    if tonumber(at) >= cutoff then
      if not over then return false end
      -- A written XMPP message awaiting its confirmation is kept past the count bound (not the age bound):
      -- its node confirms or withdraws it within the confirmation deadline.
      if fb == '1' and tonumber(off) <= sent then return false end
    end
    if key ~= '' then
      if tonumber(at) >= cutoff then table.insert(young, key .. ':' .. at) else table.insert(forget, key) end
    end
    -- A fallback still on a written entry: never confirmed nor withdrawn (its node is gone), so it is stored.
    if fb == '1' then table.insert(out, head)
    elseif tonumber(off) > sent then
      if over then overflow = overflow + 1 else expired = expired + 1 end
    end
    return true
  end)
  if popped > 0 then redis.call('LTRIM', ev, popped, -1) end
  local m = #young > 0 and chunked('RPUSH', kt, young) or redis.call('LLEN', kt)
  local cap = limit * ${TRIMMED_KEYS_PER_LIMIT}
  local gone = walk(kt, m, cap, nil, function(head, left)
    local hk, hat = string.match(head, '^([%w_%-]+):(%d+)$')
    if left <= cap and tonumber(hat) >= cutoff then return false end
    table.insert(forget, hk)
    return true
  end)
  if gone > 0 then redis.call('LTRIM', kt, gone, -1) end
  if #forget > 0 then chunked('HDEL', k, forget) end
  return out, overflow, expired, popped, m - gone, #young > 0
end
local function epochFrom(asked)
  -- The epoch of a stream made now: the caller's (its clock's ms x 1000), but never below Redis's own clock. A
  -- script can run long after its caller read the time (seen after a fail-over to a replica), and a stream
  -- made with that old time would number its events below ids its pages already have.
  local t = redis.call('TIME')
  local floor = (tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)) * 1000
  if floor > tonumber(asked) then return string.format('%.0f', floor) end
  return asked
end
local function keep(ttl)
  for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], ttl) end
end
local function extend(key, ttl, made)
  -- At least ttl from now: a key made by this script has no lifetime yet; every other key of a tab got one
  -- in the script that made it, so GT (Redis 7.0) lengthens it only: PTTL and a PEXPIRE in one command.
  if made then redis.call('PEXPIRE', key, ttl) else redis.call('PEXPIRE', key, ttl, 'GT') end
end
`;

/**
 * How a script learns which nodes are alive and tells a holder of a new event, on one Redis: the nodes'
 * sorted set is the script's last key (ZMSCORE; a node new to Redis enters it at its first hold), and the
 * announcement is a PUBLISH on the holder's channel, in the same step as the append.
 */
export const SINGLE_PRELUDE = `
local function aliveUntil(names) return redis.call('ZMSCORE', KEYS[#KEYS], unpack(names)) end
local function seen(node, untilMs) redis.call('ZADD', KEYS[#KEYS], 'NX', untilMs, node) end
local function tell(channelPrefix, node, payload) redis.call('PUBLISH', channelPrefix .. node, payload) return nil end
local function pruneDead(p) end
local function lineage(gone) return {} end
`;

/**
 * The same on a Redis Cluster, where a script may touch only its tab's hash slot: the calling node passes the
 * nodes it knows dead (its last heartbeat's view of the sorted set, which lives in a slot of its own) as the
 * last argument, space-separated; any other node counts as alive. The script cannot publish to another slot's
 * channel, so `tell` only names the holder, and the node publishes after the script (docs/redis.md "Redis
 * Cluster").
 */
export const CLUSTER_PRELUDE = `
local function aliveUntil(names)
  local dead, out = {}, {}
  for name in string.gmatch(ARGV[#ARGV], '%S+') do dead[name] = true end
  for j, name in ipairs(names) do out[j] = dead[name] and 0 or math.huge end
  return out
end
local function seen(node, untilMs) end
local function tell(channelPrefix, node, payload) return node end
-- A hold prunes the holders the caller knows dead: a tab its live holders keep holding would otherwise keep a
-- dead node's entry until the set forgot that node, and from then on count it alive.
local function pruneDead(p)
  if ARGV[#ARGV] == '' then return end
  local dead = {}
  for name in string.gmatch(ARGV[#ARGV], '%S+') do table.insert(dead, name) end
  redis.call('HDEL', p, unpack(dead))
end
-- A replica promoted to primary keeps the replication id of the primary it took over from as master_replid2,
-- and may lack that primary's last writes (replication is asynchronous). A tab whose meta key (KEYS[1]) was
-- last written under that id is therefore treated as lost: the keys in gone (the meta key among them) are
-- deleted, and the script goes on as on a shard that came back empty (a new epoch; docs/redis.md "Replicas
-- and fail-over"). The meta key is left holding only x, with its lifetime: whichever script makes the stream
-- again keeps it, and the stream's first hold reports it made again, so its holder derives results again.
-- Returns the fields that stamp the meta key with this primary's id, for the script's HSET. A key moved here
-- by a re-shard carries another primary's id, not master_replid2, and is kept.
local function lineage(gone)
  local info = redis.call('INFO', 'replication')
  if redis.call('HGET', KEYS[1], 'r') == string.match(info, 'master_replid2:(%x+)') then
    local ttl = redis.call('PTTL', KEYS[1])
    redis.call('DEL', unpack(gone))
    redis.call('HSET', KEYS[1], 'x', 1)
    if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
  end
  return {'r', string.match(info, 'master_replid:(%x+)')}
end
`;
