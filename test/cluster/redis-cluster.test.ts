import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchSignInfo, postDecision } from '../../src/cli/signer.js';
import { AnnouncementFailed } from '../../src/broker/broker.js';
import { RedisBroker } from '../../src/broker/redis-broker.js';
import { tabKeys } from '../../src/broker/redis-broker-keys.js';
import { connectRedisCluster } from '../../src/redis/cluster-connection.js';
import { privateKeyFromPem } from '../../src/identity/keys.js';
import type { TabAddress } from '../../src/protocol/address.js';
import type { QuickLoginResult } from '../../src/protocol/events.js';
import type { EventFrame } from '../../src/protocol/frames.js';
import { announcedAt } from '../helpers/announced-at.js';
import { postgresDatabase } from '../helpers/backends.js';
import { inHoldWindow } from '../helpers/hold-window.js';
import { post, registered } from '../helpers/http.js';
import { startRedis, testPrefix, type RedisServer } from '../helpers/redis.js';
import { startRedisCluster, type RedisClusterServer } from '../helpers/redis-cluster.js';
import { makeIdentity, startService, type TestService } from '../helpers/service.js';
import { TestTab } from '../helpers/tab.js';
import { until } from '../helpers/until.js';

/**
 * The event streams, the presence and the announcements on a real Redis Cluster of three primaries
 * (docs/redis.md "Redis Cluster"), the rest on one Redis, three nodes on one PostgreSQL database, in this
 * process.
 */
let redis: RedisServer;
let shards: RedisClusterServer;
let prefix: string;
let nodes: [TestService, TestService, TestService];
/** A plain connection to each shard, for `CLUSTER` questions and key checks. */
let direct: Redis[];
/** slot -> index of the shard that owns it. */
let owner: number[];
let databaseUrl: string;

beforeAll(async () => {
  redis = await startRedis();
  shards = await startRedisCluster(3);
  prefix = testPrefix('rcluster');
  // The test stops the shards once: these connections then fail until they are back, which is expected here.
  direct = shards.urls.map((url) => new Redis(url).on('error', () => undefined));
  // As docs/redis.md advises: a primary that fails leaves the other shards serving.
  for (const shard of direct) await shard.call('CONFIG', 'SET', 'cluster-require-full-coverage', 'no');
  owner = await slotOwners();
  databaseUrl = await postgresDatabase();
  const started: TestService[] = [];
  for (let i = 0; i < 3; i++) {
    started.push(await startService({ redisUrl: redis.url, redisClusterUrls: shards.urls, redisKeyPrefix: prefix, instanceId: 'generation-1' }, { databaseUrl }));
  }
  nodes = started as [TestService, TestService, TestService];
});
afterAll(async () => {
  for (const node of nodes ?? []) await node.close();
  for (const c of direct ?? []) c.disconnect();
  await shards?.stop();
  await redis?.stop();
});

async function slotOwners(): Promise<number[]> {
  const ports = shards.urls.map((url) => Number(new URL(url).port));
  const table = (await direct[0]!.call('CLUSTER', 'SLOTS')) as [number, number, [string, number, ...unknown[]], ...unknown[]][];
  const owners = new Array<number>(16384).fill(-1);
  for (const [from, to, [, port]] of table) for (let slot = from; slot <= to; slot++) owners[slot] = ports.indexOf(port);
  return owners;
}

/** The shard that owns `key` (or a sharded channel's name). */
const shardOf = async (key: string): Promise<number> => owner[Number(await direct[0]!.call('CLUSTER', 'KEYSLOT', key))]!;

/** Redis's id of shard i (`CLUSTER MYID`), as `CLUSTER SETSLOT` names a shard. */
const nodeIdOf = async (i: number): Promise<string> => String(await direct[i]!.call('CLUSTER', 'MYID'));
const portOf = (i: number): number => Number(new URL(shards.urls[i]!).port);
/** How many commands shard i refused with TRYAGAIN so far (`INFO errorstats`). */
const tryAgains = async (i: number): Promise<number> => Number(/errorstat_TRYAGAIN:count=(\d+)/.exec(String(await direct[i]!.call('INFO', 'errorstats')))?.[1] ?? 0);
/** Moves `keys` from shard `from` to shard `to` (`MIGRATE`, as `redis-cli --cluster reshard` does). */
const migrateKeys = (from: number, to: number, keys: readonly string[]) => direct[from]!.call('MIGRATE', '127.0.0.1', portOf(to), '', 0, 5_000, 'KEYS', ...keys);
const keysInSlot = async (i: number, slot: number): Promise<string[]> => (await direct[i]!.call('CLUSTER', 'GETKEYSINSLOT', slot, 100)) as string[];
const nodeId = (node: TestService): string => (node.app.tabwire.hub as unknown as { settings: { node: string } }).settings.node;
const addressOf = async (node: TestService, tab: TestTab): Promise<TabAddress> => ({ tabId: tab.tabId, session: (await node.store.tabs.sessionOf(tab.tabId))! });
const metaKey = (to: TabAddress): string => tabKeys(prefix, to)[0];
const n = (frame: EventFrame): string => (frame.data as { n: string }).n;

/** A node's announcements so far, from its /metrics: for tabs it holds and for tabs it does not. */
async function announcements(node: TestService): Promise<{ held: number; notHeld: number }> {
  const text = await (await fetch(`${node.baseUrl}/metrics`)).text();
  const value = (tab: string) => Number(new RegExp(`^tabwire_event_announcements_total\\{tab="${tab}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
  return { held: value('held'), notHeld: value('not_held') };
}

describe('streams and presence on a Redis Cluster', () => {
  it('tab on node 1, QR request on node 2, signature on node 3: SignatureReceived reaches the tab once, and the tab lives on the cluster only', async () => {
    const [one, two, three] = nodes;
    const ada = await makeIdentity(one, { FIRST: 'Ada' });
    const tab = await TestTab.open(one.wsUrl);
    await registered(one, tab.tabId);
    const qr = await post(two, '/QuickLogin', { mode: 'text', purpose: 'Across shards', serviceId: '', tab: tab.tabId }, { cookie: tab.cookie });
    expect(qr.status).toBe(200);
    const signUrl = three.baseUrl + new URL(qr.body.signUrl as string).pathname;
    const info = await fetchSignInfo(signUrl);
    expect((await postDecision(signUrl, info, ada.identity.id, privateKeyFromPem(ada.privateKeyPem), 'approve')).state).toBe('approved');
    expect(((await tab.next('SignatureReceived')).data as QuickLoginResult).Id).toBe(ada.identity.id);
    const address = await addressOf(one, tab);
    await two.app.tabwire.hub.deliver(address, { type: 'Marker', data: null });
    await tab.next('Marker');
    expect(tab.events.map((e) => e.type)).toEqual(['SignatureReceived', 'Marker']);
    // Subscriptions only on the subscriber connections: a command connection in subscriber mode refuses every
    // other command (ioredis's auto-pipelining would put SSUBSCRIBE on one).
    let subscribed = 0;
    for (const shard of direct) {
      for (const line of String(await shard.call('CLIENT', 'LIST')).split('\n')) {
        const count = (field: string) => Number(new RegExp(`\\b${field}=(\\d+)`).exec(line)?.[1] ?? 0);
        // The command and presence connections are named by tabwire; the sharded subscribers by the client.
        if (/name=tabwire:(commands|presence)\b/.test(line)) expect(count('sub') + count('psub') + count('ssub'), line).toBe(0);
        subscribed += count('ssub');
      }
    }
    expect(subscribed).toBeGreaterThanOrEqual(3); // each node's channel
    // The tab's stream is on the shard its slot names; the one Redis has no per-tab key and no nodes' set.
    expect(await direct[await shardOf(metaKey(address))]!.exists(metaKey(address))).toBe(1);
    const single = new Redis(redis.url);
    try {
      expect(await single.keys(`${prefix}t:*`)).toEqual([]);
      expect(await single.exists(`${prefix}nodes`)).toBe(0);
    } finally {
      single.disconnect();
    }
    tab.close();
  });

  it('tabs spread over the shards; events from two other nodes reach each tab in order, and only its node is told', async () => {
    const [one, two, three] = nodes;
    const tabs = await Promise.all(Array.from({ length: 12 }, () => TestTab.open(one.wsUrl)));
    await Promise.all(tabs.map((tab) => registered(one, tab.tabId)));
    const addresses = await Promise.all(tabs.map((tab) => addressOf(one, tab)));
    const used = new Set(await Promise.all(addresses.map((a) => shardOf(metaKey(a)))));
    expect(used.size).toBeGreaterThanOrEqual(2);

    const before = await Promise.all(nodes.map(announcements));
    for (const address of addresses) {
      await two.app.tabwire.hub.deliver(address, { type: 'Routed', data: { n: 'b' } });
      await three.app.tabwire.hub.deliver(address, { type: 'Routed', data: { n: 'c' } });
    }
    for (const tab of tabs) expect((await tab.received(2)).map(n)).toEqual(['b', 'c']);
    await until(async () => (await announcements(one)).held - before[0]!.held >= 24, 'node 1 told of all 24 events');
    const after = await Promise.all(nodes.map(announcements));
    expect(after[0]!.held - before[0]!.held).toBe(24);
    // Nodes 2 and 3 hold none of these tabs: they heard none of their events.
    for (const k of [1, 2]) expect(after[k]).toEqual(before[k]);
    for (const tab of tabs) tab.close();
  });

  it('a shard stalled while an event is appended, then while it is announced: the tab gets each event once, in order, and the other shards go on', async () => {
    const [one, two] = nodes;
    const channelShard = await shardOf(`${prefix}events:${nodeId(one)}`);
    // Tab X on a shard that is not node 1's channel's; tab Y on a third shard (or at least not X's).
    const opened: { tab: TestTab; address: TabAddress; shard: number }[] = [];
    while (!opened.some((o) => o.shard !== channelShard) || new Set(opened.map((o) => o.shard)).size < 2) {
      const tab = await TestTab.open(one.wsUrl);
      await registered(one, tab.tabId);
      const address = await addressOf(one, tab);
      opened.push({ tab, address, shard: await shardOf(metaKey(address)) });
      expect(opened.length).toBeLessThan(60);
    }
    const x = opened.find((o) => o.shard !== channelShard)!;
    const y = opened.find((o) => o.shard !== x.shard)!;
    const deliver = (to: TabAddress, label: string) => two.app.tabwire.hub.deliver(to, { type: 'Routed', data: { n: label } });
    /** The labels of the tab's events once it has `count` of them. */
    const routed = async (tab: TestTab, count: number): Promise<string[]> => {
      await until(() => tab.events.filter((e) => e.type === 'Routed').length >= count, `${count} events at the tab`);
      return tab.events.filter((e) => e.type === 'Routed').map(n);
    };

    // 1. X's shard stalls: the append of x1 cannot run; it is refused after the command timeout and held by the
    // hub for another try. Y's events go on meanwhile, also once the others took X's shard for failed.
    shards.pause(x.shard);
    expect(await deliver(x.address, 'x1')).toBe(false);
    // CLUSTER NODES flags: 'fail' once the majority agreed ('fail?' is one node's suspicion).
    await until(async () => /,fail /.test(String(await direct[y.shard]!.call('CLUSTER', 'NODES'))), 'the other shards to flag the stalled one');
    expect(await deliver(y.address, 'y1')).toBe(true);
    expect(await routed(y.tab, 1)).toEqual(['y1']);
    shards.resume(x.shard);
    expect(await routed(x.tab, 1)).toEqual(['x1']);

    // 2. Node 1's channel's shard stalls: x2 is appended, its announcement cannot go out. The nodes stay ready
    // (every node is alike) and say the cluster is degraded.
    shards.pause(channelShard);
    await until(async () => (await (await fetch(`${one.baseUrl}/readyz`)).json()).redisCluster === 'degraded', 'readiness to say degraded');
    const x2 = deliver(x.address, 'x2');
    expect(await x2).toBe(false);
    shards.resume(channelShard);
    expect(await routed(x.tab, 2)).toEqual(['x1', 'x2']);
    await until(async () => (await (await fetch(`${one.baseUrl}/readyz`)).json()).redisCluster === 'up', 'readiness to say up again');

    // Nothing came twice: a marker sent now is the next event, and the ids run without a gap.
    await deliver(x.address, 'marker');
    expect(await routed(x.tab, 3)).toEqual(['x1', 'x2', 'marker']);
    const ids = x.tab.events.filter((e) => e.type === 'Routed').map((e) => e.id);
    expect(ids).toEqual([ids[0]!, ids[0]! + 1, ids[0]! + 2]);
    for (const o of opened) o.tab.close();
  });

  it('a tab that moves to another node keeps every event, also those published between its hold there and its read', async () => {
    const [one, two, three] = nodes;
    const tab = await TestTab.open(one.wsUrl);
    await registered(one, tab.tabId);
    const address = await addressOf(one, tab);
    const deliver = (node: TestService, label: string) => node.app.tabwire.hub.deliver(address, { type: 'Routed', data: { n: label } });
    await deliver(three, 'a1');
    const first = await tab.next('Routed');
    tab.close();
    await until(async () => !(await one.app.tabwire.hub.isConnected(address)), 'node 1 to let the connection go');
    await deliver(three, 'away');

    // Back on node 2. Between node 2's hold of the tab and its read of the stream, node 3 publishes twice.
    const window = inHoldWindow(two, address.tabId, async () => {
      await deliver(three, 'window1');
      await deliver(three, 'window2');
    });
    const moved = await TestTab.open(two.wsUrl, { cookie: tab.cookie, register: false });
    moved.send({ cmd: 'Register', tabId: tab.tabId, location: 'http://127.0.0.1/page', lastEventId: first.id });
    await moved.received(3);
    expect(window.end()).toBe(true);
    await deliver(one, 'after');
    const events = await moved.received(4);
    expect(events.map(n)).toEqual(['away', 'window1', 'window2', 'after']);
    expect(events.map((f) => f.id)).toEqual(events.map((_, k) => first.id + 1 + k));
    moved.close();
  });

  it('a tab\'s slot moving to another shard, stopped halfway while a login\'s result is published: the page gets the result once, and later events in order', async () => {
    const [one, two, three] = nodes;
    const ada = await makeIdentity(one, { FIRST: 'Ada' });
    const tab = await TestTab.open(one.wsUrl);
    await registered(one, tab.tabId);
    const address = await addressOf(one, tab);
    await two.app.tabwire.hub.deliver(address, { type: 'Routed', data: { n: 'before' } });
    const before = await tab.next('Routed');

    // A live re-shard, as adding a primary brings (redis.io "Scaling with Redis Cluster"), of the tab's slot,
    // held halfway: the tab's meta key has moved to the target, its stream and presence have not. A script over
    // those keys is then refused at the source with TRYAGAIN (some keys there, some not) until the move ends.
    const slot = Number(await direct[0]!.call('CLUSTER', 'KEYSLOT', metaKey(address)));
    const from = owner[slot]!;
    const to = (from + 1) % 3;
    const [fromId, toId] = [await nodeIdOf(from), await nodeIdOf(to)];
    await direct[to]!.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', fromId);
    await direct[from]!.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', toId);
    await migrateKeys(from, to, [metaKey(address)]);
    const refusedBefore = await tryAgains(from);

    const qr = await post(two, '/QuickLogin', { mode: 'text', purpose: 'Mid-move', serviceId: '', tab: tab.tabId }, { cookie: tab.cookie });
    expect(qr.status).toBe(200);
    const signUrl = three.baseUrl + new URL(qr.body.signUrl as string).pathname;
    const info = await fetchSignInfo(signUrl);
    const decided = postDecision(signUrl, info, ada.identity.id, privateKeyFromPem(ada.privateKeyPem), 'approve');
    await until(async () => (await tryAgains(from)) > refusedBefore, 'the result\'s append refused (TRYAGAIN) while the slot is split');
    // The signing app's answer while the slot is still split: its decision is taken whatever Redis says.
    expect((await decided).state).toBe('approved');

    // The move ends: the other keys follow, and every primary learns the slot's new owner.
    for (let keys = await keysInSlot(from, slot); keys.length > 0; keys = await keysInSlot(from, slot)) await migrateKeys(from, to, keys);
    for (const i of [to, from, 3 - from - to]) await direct[i]!.call('CLUSTER', 'SETSLOT', slot, 'NODE', toId);
    owner = await slotOwners();
    expect(owner[slot]).toBe(to);

    const result = await tab.next('SignatureReceived');
    expect((result.data as QuickLoginResult).Properties).toMatchObject({ FIRST: 'Ada' });
    // Once the result is marked published nothing publishes it again (the result outbox sends only unmarked
    // ones), so a copy would come before the marker.
    await until(async () => (await announcedAt({ databaseUrl }, info.code)) !== null, 'the result marked published');
    await two.app.tabwire.hub.deliver(address, { type: 'Routed', data: { n: 'after' } });
    const events = await tab.received(3);
    // Exactly once each, in order, with the stream's ids going on from before the move.
    expect(events.map((e) => e.type)).toEqual(['Routed', 'SignatureReceived', 'Routed']);
    expect(events.map((e) => e.id)).toEqual([before.id, before.id + 1, before.id + 2]);
    expect(await direct[to]!.exists(metaKey(address))).toBe(1);
    tab.close();
  });

  it('a node whose sharded subscription was cut reads its tabs\' streams once it is subscribed again: nothing published meanwhile is lost', async () => {
    const [one, two] = nodes;
    const channelShard = await shardOf(`${prefix}events:${nodeId(one)}`);
    const tab = await TestTab.open(one.wsUrl);
    await registered(one, tab.tabId);
    const address = await addressOf(one, tab);
    const deliver = (label: string) => two.app.tabwire.hub.deliver(address, { type: 'Routed', data: { n: label } });
    await deliver('before');
    await until(() => tab.events.some((e) => e.type === 'Routed'), 'the first event');

    // Cut every sharded subscriber connection on the shard of node 1's channel, and publish before it is back.
    const cut = Number(await direct[channelShard]!.call('CLIENT', 'KILL', 'TYPE', 'pubsub'));
    expect(cut).toBeGreaterThanOrEqual(1);
    expect(await deliver('meanwhile')).toBe(true);
    await until(() => tab.events.filter((e) => e.type === 'Routed').length >= 2, 'the event published while the subscription was cut');
    await deliver('after');
    await until(() => tab.events.filter((e) => e.type === 'Routed').length >= 3, 'the event after the resubscription');
    const events = tab.events.filter((e) => e.type === 'Routed');
    expect(events.map(n)).toEqual(['before', 'meanwhile', 'after']);
    expect(events.map((e) => e.id)).toEqual([events[0]!.id, events[0]!.id + 1, events[0]!.id + 2]);
    tab.close();
  });

  it('a node started while the Redis Cluster is down subscribes once it is back, and its tabs get their events', async () => {
    const [one] = nodes;
    await shards.stopShards();
    let late: TestService | undefined;
    try {
      late = await startService({ redisUrl: redis.url, redisClusterUrls: shards.urls, redisKeyPrefix: prefix, instanceId: 'generation-1' }, { databaseUrl });
      // Unreachable: the node answers, and says so, instead of hanging.
      expect((await fetch(`${late.baseUrl}/readyz`)).status).toBe(503);
    } finally {
      await shards.startShards();
    }
    const node = late;
    try {
      // The shards came back empty: the other nodes' presence is made again by their heartbeats.
      await until(async () => (await (await fetch(`${node.baseUrl}/readyz`)).json()).redisCluster === 'up', 'the new node to reach every primary');
      const tab = await TestTab.open(node.wsUrl);
      await registered(node, tab.tabId);
      const address = await addressOf(node, tab);
      await one.app.tabwire.hub.deliver(address, { type: 'Routed', data: { n: 'from one' } });
      await until(() => tab.events.some((e) => e.type === 'Routed'), 'the event at the tab of the node started while the cluster was down');
      expect(tab.events.filter((e) => e.type === 'Routed').map(n)).toEqual(['from one']);
      tab.close();
    } finally {
      await node.close();
    }
  });

  it('an append whose announcement failed hands back what it pushed out unsent, and its retry announces it once', async () => {
    const bounds = { limit: 3, maxAgeMs: 60_000, presenceTtlMs: 30_000, idleStreamMs: 60_000 };
    const brokerPrefix = testPrefix('announce');
    const silent = pino({ level: 'silent' });
    const connections = [0, 1].map(() => connectRedisCluster(shards.urls, silent, { prefix: brokerPrefix }));
    try {
      const [holder, publisher] = await Promise.all(connections.map((c, k) => RedisBroker.open(c, bounds, { node: `node-${k + 1}`, log: silent })));
      const heard: number[] = [];
      holder!.subscribe((a) => heard.push(a.frame.id));
      // A tab whose keys are not on the shard of node-1's channel, which is stalled below.
      const channelShard = await shardOf(`${brokerPrefix}events:node-1`);
      let to: TabAddress = { tabId: 'tab-00000', session: 'c'.repeat(64) };
      for (let k = 1; (await shardOf(tabKeys(brokerPrefix, to)[0])) === channelShard; k++) to = { ...to, tabId: `tab-${String(k).padStart(5, '0')}` };
      const now = Date.now();
      await holder!.hold(to, 'node-1', now + 1e9, now);
      const fallback = (k: number) => ({ kind: 'agent-message' as const, accountId: 'acct', from: 'x@y', to: 'u@agents', type: 'chat', content: `<m n="${k}"/>`, createdAt: 0 });
      for (let k = 1; k <= 3; k++) await publisher!.publish(to, { type: 'M', data: k }, now, fallback(k), `m${k}`);
      await until(() => heard.length === 3, 'the three messages announced');
      // node-1's channel's shard stalls; a fourth event pushes the oldest message out unsent.
      shards.pause(channelShard);
      let failure: unknown;
      try {
        await publisher!.publish(to, { type: 'E', data: 4 }, now, undefined, 'e4');
      } catch (err) {
        failure = err;
      } finally {
        shards.resume(channelShard);
      }
      expect(failure).toBeInstanceOf(AnnouncementFailed);
      expect((failure as AnnouncementFailed).outcome.unsent.map((f) => f.content)).toEqual(['<m n="1"/>']);
      const id = (failure as AnnouncementFailed).outcome.frame!.id;
      // The hub's retry under the same key: a duplicate, announced again.
      const again = await publisher!.publish(to, { type: 'E', data: 4 }, now, undefined, 'e4');
      expect(again).toMatchObject({ duplicate: true, unsent: [] });
      expect(again.frame!.id).toBe(id);
      await until(() => heard.includes(id), 'the retried announcement');
    } finally {
      await Promise.all(connections.map((c) => c.close()));
    }
  });
});
