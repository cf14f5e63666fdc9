import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Cluster, Redis, type ClusterOptions } from 'ioredis';
import { startRedisCluster, type RedisClusterServer } from '../helpers/redis-cluster.js';
import { until } from '../helpers/until.js';

/**
 * What ioredis's `Cluster` client does against a real 3-primary Redis Cluster (Redis 7.0): where hash tags
 * land, scripts and CROSSSLOT, sharded pub/sub (also from Lua), pipelines, and a stalled shard (SIGSTOP).
 * Each fact is asserted, so a client or server upgrade that changes one fails here.
 */
let rc: RedisClusterServer;
let cluster: Cluster;
const opened: (Cluster | Redis)[] = [];
/** Slot ranges and the port of the primary serving each (CLUSTER SLOTS). */
let ranges: { from: number; to: number; port: number }[];
/** Hash tags `{t0}`… grouped by the shard (index into rc.seeds) that serves them. */
const tagsOf: string[][] = [];
const run = randomBytes(3).toString('hex');

function client(options: ClusterOptions = {}): Cluster {
  const c = new Cluster(rc.seeds, { ...options, redisOptions: { commandTimeout: 2_000, ...options.redisOptions } });
  c.on('error', () => {}); // reported per command; a stalled shard would otherwise log unhandled errors
  opened.push(c);
  return c;
}

async function ready(c: Cluster): Promise<void> {
  // 'connecting' → 'connect' → 'ready' (after CLUSTER INFO reports a state other than fail).
  await until(() => c.status === 'ready', 'cluster client ready');
}

async function slotOf(key: string): Promise<number> {
  return Number(await cluster.cluster('KEYSLOT', key));
}

async function shardOf(key: string): Promise<number> {
  const slot = await slotOf(key);
  const range = ranges.find((r) => slot >= r.from && slot <= r.to);
  if (!range) throw new Error(`slot ${slot} unassigned`);
  return rc.seeds.findIndex((s) => s.port === range.port);
}

const tag = (shard: number, n = 0): string => {
  const t = tagsOf[shard]?.[n];
  if (!t) throw new Error(`no tag #${n} on shard ${shard}`);
  return t;
};

/** A direct (non-cluster) connection to shard i, for what a node itself answers. */
function direct(i: number): Redis {
  const r = new Redis({ host: '127.0.0.1', port: rc.seeds[i]!.port, commandTimeout: 2_000, maxRetriesPerRequest: 0 });
  r.on('error', () => {});
  opened.push(r);
  return r;
}

const info = async (r: Redis, field: string): Promise<string | undefined> =>
  String(await r.call('CLUSTER', 'INFO'))
    .split('\r\n')
    .find((l) => l.startsWith(`${field}:`))
    ?.split(':')[1];

/** Whether node `r` flags the node on `port` as failed (CLUSTER NODES flags `fail`, not just `fail?`). */
const seesFailed = async (r: Redis, port: number): Promise<boolean> =>
  String(await r.call('CLUSTER', 'NODES'))
    .split('\n')
    .some((line) => line.includes(`127.0.0.1:${port}@`) && /(^|,)fail(,|$)/.test(line.split(' ')[2] ?? ''));

const outcome = <T>(p: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: string }> =>
  p.then(
    (value) => ({ ok: true as const, value }),
    (err: Error) => ({ ok: false as const, error: err.message }),
  );

beforeAll(async () => {
  rc = await startRedisCluster(3);
  cluster = client();
  await ready(cluster);
  ranges = (await cluster.cluster('SLOTS')).map(([from, to, primary]) => ({ from, to, port: primary![1] }));
  for (let i = 0; i < 3; i++) tagsOf.push([]);
  for (let n = 0; tagsOf.some((t) => t.length < 3); n++) tagsOf[await shardOf(`{t${n}}`)]!.push(`{t${n}}`);
});

afterAll(async () => {
  for (let i = 0; i < (rc?.seeds.length ?? 0); i++) rc.resume(i);
  for (const c of opened) c.disconnect();
  await rc?.stop();
});

describe('Redis Cluster with ioredis', () => {
  it('keys of different hash tags land on different shards', async () => {
    const masters = cluster.nodes('master');
    expect(masters.map((m) => m.options.port).sort()).toEqual(rc.seeds.map((s) => s.port).sort());
    const owners = new Set<number>();
    for (let n = 0; n < 12; n++) {
      const key = `{h${n}}:${run}`;
      await cluster.set(key, 'v');
      // Only the primary that serves the slot holds the key; the others answer MOVED.
      const holders = await Promise.all(masters.map(async (m) => Number((await outcome(m.exists(key))).ok)));
      expect(holders.reduce((a, b) => a + b, 0), key).toBe(1);
      const holder = masters[holders.indexOf(1)]!;
      expect(holder.options.port).toBe(rc.seeds[await shardOf(key)]!.port);
      owners.add(holder.options.port!);
    }
    expect(owners.size).toBeGreaterThanOrEqual(2);
  });

  it('a defined Lua command runs on keys of one hash tag and fails with CROSSSLOT across tags', async () => {
    const pairSet = `pairSet${run}`;
    cluster.defineCommand(pairSet, {
      numberOfKeys: 2,
      lua: "redis.call('SET', KEYS[1], ARGV[1]); redis.call('SET', KEYS[2], ARGV[2]); return redis.call('MGET', KEYS[1], KEYS[2])",
    });
    const call = (cluster as unknown as Record<string, (...a: string[]) => Promise<unknown>>)[pairSet]!.bind(cluster);
    expect(await call(`{a}:x:${run}`, `{a}:y:${run}`, '1', '2')).toEqual(['1', '2']);
    const cross = await outcome(call(`{a}:x2:${run}`, `{b}:y2:${run}`, '1', '2'));
    expect(cross.ok).toBe(false);
    expect(!cross.ok && cross.error).toMatch(/^CROSSSLOT /);
    // Refused before it ran: neither key written.
    expect(await cluster.exists(`{a}:x2:${run}`)).toBe(0);
    expect(await cluster.exists(`{b}:y2:${run}`)).toBe(0);
  });

  it('sharded pub/sub: SSUBSCRIBE gets an SPUBLISH of its channel as `smessage`, not of another', async () => {
    const sub = client({ shardedSubscribers: true });
    const other = client({ shardedSubscribers: true });
    await Promise.all([ready(sub), ready(other)]);
    const got: [string, string][] = [];
    const otherGot: [string, string][] = [];
    sub.on('smessage', (channel: string, message: string) => got.push([channel, message]));
    other.on('smessage', (channel: string, message: string) => otherGot.push([channel, message]));
    await sub.ssubscribe('{n1}events');
    await other.ssubscribe('{n1}other'); // the same slot and shard, another channel
    await other.ssubscribe(`${tag(await shardOf('{n1}') === 0 ? 1 : 0)}events`); // another shard

    expect(await cluster.spublish('{n1}events', 'x')).toBe(1); // receivers on the serving shard
    await until(() => got.length === 1, 'the sharded message');
    expect(got).toEqual([['{n1}events', 'x']]);
    // Published after 'x' to the same shard: `other` (one connection per shard) would have had 'x' first.
    await cluster.spublish('{n1}other', 'marker');
    await until(() => otherGot.length > 0, 'the marker');
    expect(otherGot).toEqual([['{n1}other', 'marker']]);

    // SPUBLISH from a script: allowed when the channel's slot is served by the node the script runs on.
    const lua = "return redis.call('SPUBLISH', ARGV[1], ARGV[2])";
    expect(await cluster.eval(lua, 1, `{n1}:k:${run}`, '{n1}events', 'from-lua')).toBe(1);
    await until(() => got.length === 2, 'the message published by the script');
    expect(got[1]).toEqual(['{n1}events', 'from-lua']);
    // Declared key of another slot on the same shard: a plain EVAL may cross slots on its node.
    const n1Shard = await shardOf('{n1}');
    const sameShard = tag(n1Shard); // a `{tN}` tag: never the slot of `{n1}`
    expect(await slotOf(sameShard)).not.toBe(await slotOf('{n1}'));
    expect(await cluster.eval(lua, 1, `${sameShard}:k:${run}`, '{n1}events', 'other-slot')).toBe(1);
    await until(() => got.length === 3, 'the message published across slots on one node');
    // …but not a script with a shebang (Redis 7 "script flags": cross-slot access needs allow-cross-slot-keys).
    const strict = await outcome(cluster.eval(`#!lua\n${lua}`, 1, `${sameShard}:k:${run}`, '{n1}events', 'refused'));
    expect(!strict.ok && strict.error).toMatch(/Script attempted to access keys that do not hash to the same slot/);
    // A channel served by another shard: refused whatever the flags.
    const away = tag((n1Shard + 1) % 3);
    const remote = await outcome(cluster.eval(lua, 1, `${away}:k:${run}`, '{n1}events', 'refused'));
    expect(!remote.ok && remote.error).toMatch(/Script attempted to access a non local key in a cluster node/);
    expect(got.map(([, m]) => m)).toEqual(['x', 'from-lua', 'other-slot']);
    console.info(`sharded pub/sub: shebang script across slots → ${!strict.ok && strict.error}; other shard → ${!remote.ok && remote.error}`);
  });

  it('pipelines: refused when keys are served by different shards; allowed across slots of one shard; auto-pipelining spreads', async () => {
    const [a, b] = [tag(0), tag(1)];
    const split = await outcome(cluster.pipeline().set(`${a}p:${run}`, '1').set(`${b}p:${run}`, '2').exec());
    expect(!split.ok && split.error).toBe('All keys in the pipeline should belong to the same slots allocation group');
    expect(await cluster.exists(`${a}p:${run}`)).toBe(0);
    // Two tags of shard 0, different slots: one node serves both, so one pipeline carries both.
    const [c0, c1] = [tag(0, 0), tag(0, 1)];
    expect(await slotOf(c0)).not.toBe(await slotOf(c1));
    expect(await cluster.pipeline().set(`${c0}p:${run}`, '1').set(`${c1}p:${run}`, '2').exec()).toEqual([[null, 'OK'], [null, 'OK']]);

    const auto = client({ enableAutoPipelining: true });
    await ready(auto);
    const keys = tagsOf.flat().map((t) => `${t}auto:${run}`);
    expect(await Promise.all(keys.map((k) => auto.set(k, k)))).toEqual(keys.map(() => 'OK'));
    expect(await Promise.all(keys.map((k) => auto.get(k)))).toEqual(keys);
    expect(new Set(await Promise.all(keys.map(shardOf))).size).toBe(3);
  });
});

describe('a stalled shard (SIGSTOP … SIGCONT)', () => {
  const key = (shard: number) => `${tag(shard)}stall:${run}`;
  let all: Redis[];
  beforeAll(async () => {
    all = [0, 1, 2].map(direct);
    // Connected before any pause: a handshake caught by SIGSTOP would fail the connection, not the test's command.
    await Promise.all(all.map((r) => r.ping()));
  });
  afterEach(() => rc.resume(0)); // also when an assertion failed mid-stall
  const allOk = async (rs: Redis[]) => (await Promise.all(rs.map((r) => info(r, 'cluster_state')))).every((s) => s === 'ok');

  it('with full slot coverage required (the default), the healthy shards refuse too once the stalled one is failed', async () => {
    const [, n1, n2] = all;
    rc.pause(0);
    // The stalled shard's command waits for the client's command timeout.
    expect(await outcome(cluster.set(key(0), 'during'))).toEqual({ ok: false, error: 'Command timed out' });
    // Within cluster-node-timeout (2 s) plus gossip, the two healthy primaries agree shard 0 has failed.
    await until(async () => (await info(n1!, 'cluster_state')) === 'fail' && (await info(n2!, 'cluster_state')) === 'fail', 'cluster_state:fail on both healthy shards');
    const refused = await outcome(n2!.get(key(2)));
    expect(!refused.ok && refused.error).toMatch(/^CLUSTERDOWN /);
    // The cluster client retries CLUSTERDOWN (retryDelayOnClusterDown) until its command timeout.
    const viaClient = await outcome(cluster.get(key(1)));
    expect(viaClient.ok).toBe(false);
    const status = cluster.status;
    rc.resume(0);
    await until(() => allOk(all), 'cluster_state:ok on every shard after SIGCONT');
    // The timed-out SET was still in the socket: the shard ran it once it resumed.
    expect(await cluster.get(key(0))).toBe('during');
    expect(await cluster.set(key(1), 'after')).toBe('OK');
    console.info(`stall (full coverage): client status meanwhile ${status}; healthy shard via client → ${!viaClient.ok && viaClient.error}`);
  });

  it('with cluster-require-full-coverage no, the other shards keep serving throughout', async () => {
    for (const r of all) expect(await r.call('CONFIG', 'SET', 'cluster-require-full-coverage', 'no')).toBe('OK');
    rc.pause(0);
    const waiting = outcome(cluster.set(key(0), 'during-2'));
    // The failure is agreed (the point where the default refused), and the healthy shards still serve.
    await until(async () => (await seesFailed(all[1]!, rc.seeds[0]!.port)) && (await seesFailed(all[2]!, rc.seeds[0]!.port)), 'shard 0 flagged fail');
    expect(await info(all[1]!, 'cluster_state')).toBe('ok');
    expect(await cluster.set(key(1), 'meanwhile')).toBe('OK');
    expect(await cluster.set(key(2), 'meanwhile')).toBe('OK');
    expect(await cluster.get(key(1))).toBe('meanwhile');
    expect(await waiting).toEqual({ ok: false, error: 'Command timed out' });
    rc.resume(0);
    await until(async () => !(await seesFailed(all[1]!, rc.seeds[0]!.port)) && !(await seesFailed(all[2]!, rc.seeds[0]!.port)), 'the fail flag cleared');
    await until(() => allOk(all), 'cluster_state:ok everywhere');
    expect(await cluster.get(key(0))).toBe('during-2');
    expect(await cluster.set(key(0), 'after')).toBe('OK');
    for (const r of all) await r.call('CONFIG', 'SET', 'cluster-require-full-coverage', 'yes');
  });
});

describe('a restarted shard (SIGTERM, started again with its nodes.conf)', () => {
  it('the sharded subscriber subscribes its channels again by itself', async () => {
    const sub = client({ shardedSubscribers: true });
    await ready(sub);
    const seen: string[] = [];
    for (const event of ['-node', '+node', '-subscriber', '+subscriber', 'subscribersReady', 'error']) sub.on(event, () => seen.push(event));
    const got: string[] = [];
    sub.on('smessage', (channel: string, message: string) => got.push(`${channel} ${message}`));
    const [onRestarted, onOther] = [`${tag(0)}resub:${run}`, `${tag(1)}resub:${run}`];
    await sub.ssubscribe(onRestarted);
    await sub.ssubscribe(onOther);
    expect(await cluster.spublish(onRestarted, 'before')).toBe(1);

    await rc.restart(0);
    // SPUBLISH answers the number of subscribers on the shard: 1 once ioredis has sent SSUBSCRIBE again.
    const counts: number[] = [];
    await until(async () => {
      const n = await cluster.spublish(onRestarted, 'probe').then(Number, () => -1);
      counts.push(n);
      return n === 1;
    }, 'the channel of the restarted shard subscribed again');
    expect(await cluster.spublish(onRestarted, 'after')).toBe(1);
    expect(await cluster.spublish(onOther, 'after')).toBe(1);
    await until(() => got.includes(`${onRestarted} after`) && got.includes(`${onOther} after`), 'messages on both shards after the restart');
    expect(got.filter((m) => m.endsWith(' after'))).toHaveLength(2); // no channel subscribed twice over
    console.info(`restart: subscriber events ${[...new Set(seen)].join(', ')}; SPUBLISH counts until back: ${counts.filter((n) => n !== 1).length} × (0 or error)`);
  });
});
