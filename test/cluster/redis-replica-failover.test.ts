import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { Announcement } from '../../src/broker/broker.js';
import { tabKeys } from '../../src/broker/redis-broker-keys.js';
import type { TabAddress } from '../../src/protocol/address.js';
import type { EventFrame } from '../../src/protocol/frames.js';
import { postgresDatabase } from '../helpers/backends.js';
import { purposeOf, settleCode } from '../helpers/cluster-flows.js';
import { registered } from '../helpers/http.js';
import { startRedis, testPrefix, type RedisServer } from '../helpers/redis.js';
import { startRedisCluster, type RedisClusterServer } from '../helpers/redis-cluster.js';
import { startService, type TestService } from '../helpers/service.js';
import { TestTab } from '../helpers/tab.js';
import { until } from '../helpers/until.js';

/**
 * The streams on a Redis Cluster whose primaries have replicas, and a primary that dies with its last append
 * not yet on its replica, which then takes over (docs/redis.md "Replicas and fail-over"). The promoted
 * replica's copy of the tab's stream lacks that append: were it kept, the tab's counter would step back and
 * its next event take the id of an event the page already has, and the node that holds the tab would drop it
 * as a copy. A stream last written under the primary the replica took over from is treated as lost instead:
 * it starts again with a new epoch, so the page is told `EventsLost` and gets every later event.
 */
let redis: RedisServer;
let shards: RedisClusterServer;
let prefix: string;
let nodes: [TestService, TestService];
/** A plain connection to every node of the cluster (primaries, then replicas), as `shards.nodeUrls`. */
let direct: Redis[];

beforeAll(async () => {
  redis = await startRedis();
  shards = await startRedisCluster(3, { replicas: 1 });
  prefix = testPrefix('rfailover');
  // The test kills a primary: these connections to it then fail, which is expected here.
  direct = shards.nodeUrls.map((url) => new Redis(url, { maxRetriesPerRequest: 1 }).on('error', () => undefined));
  for (const node of direct) await node.call('CONFIG', 'SET', 'cluster-require-full-coverage', 'no');
  const databaseUrl = await postgresDatabase();
  const started: TestService[] = [];
  for (let i = 0; i < 2; i++) started.push(await startService({ redisUrl: redis.url, redisClusterUrls: shards.urls, redisKeyPrefix: prefix, instanceId: 'generation-1' }, { databaseUrl }));
  nodes = started as [TestService, TestService];
}, 120_000);
afterAll(async () => {
  for (const node of nodes ?? []) await node.close();
  for (const c of direct ?? []) c.disconnect();
  await shards?.stop();
  await redis?.stop();
});

interface ClusterNode {
  /** Index in `shards.nodeUrls` and `direct`. */
  index: number;
  id: string;
  masterId: string | undefined;
  slots: [number, number][];
}

/** The tab's shard: its primary and that primary's replica. */
interface Shard {
  primary: ClusterNode;
  replica: ClusterNode;
}

/** `fn` on the first node that answers (a test of this file kills a primary, which stays down). */
async function onAnyNode<T>(fn: (node: Redis) => Promise<T>): Promise<T> {
  let failure: unknown;
  for (const node of direct) {
    try {
      return await fn(node);
    } catch (err) {
      failure = err;
    }
  }
  throw failure;
}

/** `CLUSTER NODES` as a live node sees it, each node matched to its index by port. */
async function clusterNodes(): Promise<ClusterNode[]> {
  const ports = shards.nodeUrls.map((url) => Number(new URL(url).port));
  return String(await onAnyNode((node) => node.call('CLUSTER', 'NODES')))
    .trim()
    .split('\n')
    .map((line) => {
      const [id, address, flags, master, , , , , ...ranges] = line.split(' ');
      const port = Number(/:(\d+)@/.exec(address!)![1]);
      return {
        index: ports.indexOf(port),
        id: id!,
        masterId: flags!.includes('slave') ? master : undefined,
        slots: ranges.filter((r) => !r.startsWith('[')).map((r) => r.split('-').map(Number) as [number, number]).map(([a, b]) => [a, b ?? a] as [number, number]),
      };
    });
}

/** A field of `INFO replication` on node i. */
const replicationField = async (i: number, field: string): Promise<string | undefined> =>
  new RegExp(`^${field}:(\\S+)`, 'm').exec(String(await direct[i]!.call('INFO', 'replication')))?.[1];

const n = (frame: EventFrame): string => (frame.data as { n: string }).n;

/** A tab's stream key. */
const streamKeyOf = (address: TabAddress): string => tabKeys(prefix, address)[1];

/**
 * A tab registered on `service` whose shard's primary has a replica, with that shard: a fail-over earlier in
 * this file leaves its shard with no replica, so a tab that lands there is closed and another one opened.
 */
async function tabWithReplica(service: TestService): Promise<{ tab: TestTab; address: TabAddress; shard: Shard }> {
  for (let attempt = 0; attempt < 30; attempt++) {
    const tab = await TestTab.open(service.wsUrl);
    await registered(service, tab.tabId);
    const address: TabAddress = { tabId: tab.tabId, session: (await service.store.tabs.sessionOf(tab.tabId))! };
    const slot = Number(await onAnyNode((node) => node.call('CLUSTER', 'KEYSLOT', streamKeyOf(address))));
    const all = await clusterNodes();
    const primary = all.find((node) => node.masterId === undefined && node.slots.some(([a, b]) => a <= slot && slot <= b))!;
    const replica = all.find((node) => node.masterId === primary.id);
    if (replica) return { tab, address, shard: { primary, replica } };
    tab.close();
  }
  throw new Error('no tab landed on a shard with a replica');
}

/** Delivers a plain event to the tab from `service`, offered again while the cluster clients find a new primary. */
async function deliver(service: TestService, address: TabAddress, label: string): Promise<void> {
  await until(async () => service.app.tabwire.hub.deliver(address, { type: 'Routed', data: { n: label } }).then(() => true, () => false), `${label} published`);
}

/**
 * The instant: `during` runs while the primary's link to its replica is down (a network blip: the replica is
 * stopped and its link cut, so nothing written meanwhile is even in its socket's buffer when it resumes); then
 * the primary is killed and the replica takes over (`CLUSTER FAILOVER TAKEOVER`). First the replica catches up,
 * so it has everything written before.
 */
async function failOverLosing(shard: Shard, during: () => Promise<void>): Promise<void> {
  const { primary, replica } = shard;
  await until(async () => (await replicationField(replica.index, 'slave_repl_offset')) === (await replicationField(primary.index, 'master_repl_offset')), 'the replica caught up');
  shards.pause(replica.index);
  await direct[primary.index]!.call('CLIENT', 'KILL', 'TYPE', 'replica');
  await during();
  await shards.kill(primary.index);
  shards.resume(replica.index);
  await direct[replica.index]!.call('CLUSTER', 'FAILOVER', 'TAKEOVER');
  await until(async () => (await replicationField(replica.index, 'role')) === 'master', 'the replica promoted');
}

describe('the streams on a Redis Cluster with replicas', () => {
  it('a primary dies before its replica has its last append, the replica takes over: the tab\'s stream starts again with a new epoch, its page is told EventsLost and gets every later event', async () => {
    const [one, two] = nodes;
    const { tab, address, shard } = await tabWithReplica(one);
    onTestFinished(() => tab.close());
    await deliver(two, address, 'a1');
    await tab.received(1);
    let second: EventFrame | undefined;
    await failOverLosing(shard, async () => {
      // a2 is appended, acknowledged and written to the page: only the primary has it.
      await deliver(two, address, 'a2');
      const [first, a2] = await tab.received(2);
      expect([first, a2].map((f) => n(f!))).toEqual(['a1', 'a2']);
      second = a2;
    });

    await deliver(two, address, 'b');
    await deliver(two, address, 'c');
    // Whichever came first after the take-over (the holder's read on its resubscription, or b's append)
    // found the stream last written under the dead primary and made it again.
    const frames = await tab.received(5);
    const described = JSON.stringify(frames);
    expect(frames.map((f) => f.type), described).toEqual(['Routed', 'Routed', 'EventsLost', 'Routed', 'Routed']);
    expect([frames[3]!, frames[4]!].map(n), described).toEqual(['b', 'c']);
    const lost = frames[2]!.data as { after: number; epoch: number };
    expect(lost.after, described).toBe(second!.id);
    // The new epoch is later than every id of the old one, and b is its first event.
    expect(lost.epoch, described).toBeGreaterThan(second!.id);
    expect(frames[3]!.id, described).toBe(lost.epoch + 1);
    expect(frames[4]!.id, described).toBe(lost.epoch + 2);
    const stream = await direct[shard.replica.index]!.lrange(streamKeyOf(address), 0, -1);
    expect(stream.map((entry) => /"n":"(\w+)"/.exec(entry)?.[1])).toEqual(['b', 'c']);
  }, 120_000);

  it('a login settled while its page is away, its result appended on a primary that dies before its replica has it: the page coming back gets the result once, derived again from its settlement', async () => {
    const [one, two] = nodes;
    // Pages of other tests may still be closing: this page is gone once the count is back to that.
    const others = one.app.tabwire.hub.snapshot().connected;
    const { tab, address, shard } = await tabWithReplica(one);
    await deliver(two, address, 'a1');
    await tab.received(1);
    tab.close();
    await until(() => one.app.tabwire.hub.snapshot().connected <= others, 'the page gone from its node');
    await failOverLosing(shard, async () => {
      await settleCode({ qrBase: two.baseUrl, signBase: two.baseUrl, page: tab, purpose: 'while away', decision: 'approve' });
      // The result waits in the primary's copy of the stream; the replica never gets it.
      await until(async () => (await direct[shard.primary.index]!.lrange(streamKeyOf(address), 0, -1)).some((e) => e.includes('while away')), 'the result appended');
    });

    const back = await TestTab.open(one.wsUrl, { cookie: tab.cookie, tabId: tab.tabId });
    onTestFinished(() => back.close());
    const result = await back.next('SignatureReceived');
    expect(purposeOf(result)).toBe('while away');
    // Nothing else of it follows: a marker published after the result comes next, and the result came once.
    await deliver(two, address, 'marker');
    await until(() => back.events.some((e) => e.type === 'Routed'), 'the marker');
    expect(back.events.filter((e) => e.type === 'SignatureReceived').map(purposeOf)).toEqual(['while away']);
  }, 120_000);

  it('a quiet page: a login\'s result appended on a primary that dies before its replica has it, and before the page\'s node read it: the page is told EventsLost and gets the result, derived again, without waiting for its tab\'s re-hold', async () => {
    const [one, two] = nodes;
    const { tab, address, shard } = await tabWithReplica(one);
    onTestFinished(() => tab.close());
    await deliver(two, address, 'a1');
    const [a1] = await tab.received(1);
    // Node 1 re-holds no tab on its own during this test: its rolling re-hold (every tab within 150 s) would
    // find the stream let go in the end, and the page would get the result then.
    const hub = one.app.tabwire.hub;
    const roll = hub.roll.bind(hub);
    hub.roll = async () => undefined;
    onTestFinished(() => {
      hub.roll = roll;
    });
    // The instant: the result appended and announced on the primary, which dies with the announcement still
    // in its buffer for node 1 (dropped here), and before its replica has the append.
    const hears = hub as unknown as { onAnnouncement(announcement: Announcement): void };
    const hear = hears.onAnnouncement.bind(hub);
    let deaf = true;
    let dropped = 0;
    hears.onAnnouncement = (announcement) => {
      if (deaf && announcement.to.tabId === address.tabId) dropped++;
      else hear(announcement);
    };
    onTestFinished(() => {
      hears.onAnnouncement = hear;
    });
    await failOverLosing(shard, async () => {
      await settleCode({ qrBase: two.baseUrl, signBase: two.baseUrl, page: tab, purpose: 'while quiet', decision: 'approve' });
      await until(async () => (await direct[shard.primary.index]!.lrange(streamKeyOf(address), 0, -1)).some((e) => e.includes('while quiet')), 'the result appended');
      await until(() => dropped > 0, 'the result announced');
    });
    deaf = false;

    const result = await tab.next('SignatureReceived');
    expect(purposeOf(result)).toBe('while quiet');
    const described = JSON.stringify(tab.events);
    const lostAt = tab.events.findIndex((e) => e.type === 'EventsLost');
    expect(lostAt, described).toBeGreaterThan(0);
    expect(lostAt, described).toBeLessThan(tab.events.indexOf(result));
    expect((tab.events[lostAt]!.data as { after: number }).after, described).toBe(a1!.id);
    // Once: a marker published after it comes next, and the result came once.
    await deliver(two, address, 'marker');
    await until(() => tab.events.some((e) => e.type === 'Routed' && n(e) === 'marker'), 'the marker');
    expect(tab.events.filter((e) => e.type === 'SignatureReceived').map(purposeOf)).toEqual(['while quiet']);
  }, 120_000);
});
