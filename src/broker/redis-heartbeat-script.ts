/**
 * The nodes' heartbeat, one script for all of a node's tabs (redis-broker-scripts.ts has the per-tab scripts).
 * KEYS nodes generation; ARGV now node aliveUntil newGeneration forgetBefore withView. Extends the node's life and
 * returns Redis's generation: a marker made again whenever Redis lost its data, so each node learns that it must
 * hold its tabs again. Nodes whose life ended before `forgetBefore` leave the set here, so it stays as small as
 * the cluster: on one Redis at once (a node the set does not know counts as dead there); on a Redis Cluster a day
 * later, because a node unknown to a caller's view counts as alive there. `withView` '1': the reply also
 * carries the set, node then alive-until, for the caller's view (a Redis Cluster's scripts cannot read it).
 */
export const HEARTBEAT = `
local generation = redis.call('GET', KEYS[2])
if not generation then
  generation = ARGV[4]
  redis.call('SET', KEYS[2], generation)
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[5])
redis.call('ZADD', KEYS[1], 'GT', ARGV[3], ARGV[2])
local reply = {generation}
if ARGV[6] == '1' then
  for _, v in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')) do table.insert(reply, v) end
end
return reply`;
