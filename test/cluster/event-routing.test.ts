import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TabAddress } from '../../src/protocol/address.js';
import type { EventFrame } from '../../src/protocol/frames.js';
import { postgresDatabase } from '../helpers/backends.js';
import { inHoldWindow } from '../helpers/hold-window.js';
import { registered } from '../helpers/http.js';
import { startRedis, testPrefix, type RedisServer } from '../helpers/redis.js';
import { startService, type TestService } from '../helpers/service.js';
import { TestTab } from '../helpers/tab.js';
import { until } from '../helpers/until.js';

/**
 * Events only to the node that has the tab (docs/redis.md "Event streams"): three nodes on one Redis and one
 * PostgreSQL database, in this process. What each node was told is counted twice: by its own metric
 * (`tabwire_event_announcements_total`) and by a plain Redis client listening on every node's channel.
 */
let redis: RedisServer;
let prefix: string;
let nodes: [TestService, TestService, TestService];
let wire: Redis;
/** Every announcement on any node's channel, in arrival order. */
const heard: { channel: string; payload: string }[] = [];

beforeAll(async () => {
  redis = await startRedis();
  prefix = testPrefix('routing');
  const databaseUrl = await postgresDatabase();
  const started: TestService[] = [];
  for (let i = 0; i < 3; i++) started.push(await startService({ redisUrl: redis.url, redisKeyPrefix: prefix, instanceId: 'generation-1' }, { databaseUrl }));
  nodes = started as [TestService, TestService, TestService];
  wire = new Redis(redis.url);
  await wire.psubscribe(`${prefix}events:*`);
  wire.on('pmessage', (_pattern: string, channel: string, payload: string) => heard.push({ channel, payload }));
});
afterAll(async () => {
  wire?.disconnect();
  for (const node of nodes ?? []) await node.close();
  await redis?.stop();
});

/** A node's announcements so far, from its /metrics: for tabs it holds and for tabs it does not. */
async function announcements(node: TestService): Promise<{ held: number; notHeld: number }> {
  const text = await (await fetch(`${node.baseUrl}/metrics`)).text();
  const value = (tab: string) => Number(new RegExp(`^tabwire_event_announcements_total\\{tab="${tab}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
  return { held: value('held'), notHeld: value('not_held') };
}

const all = () => Promise.all(nodes.map(announcements));

/** The wire announcements of `tabId`'s events: `<id>:<json>` whose JSON names the tab. */
const ofTab = (tabId: string) => heard.filter((h) => h.payload.includes(`"tabId":"${tabId}"`));

const n = (frame: EventFrame): string => (frame.data as { n: string }).n;

describe('events only to the node that holds the tab', () => {
  it('three nodes: events from B and C reach the tab on A, and only A is told; moved to B, it gets every event once, in order', async () => {
    const [one, two, three] = nodes;
    const tab = await TestTab.open(one.wsUrl);
    await registered(one, tab.tabId);
    const address: TabAddress = { tabId: tab.tabId, session: (await one.store.tabs.sessionOf(tab.tabId))! };
    const deliver = (node: TestService, label: string) => node.app.tabwire.hub.deliver(address, { type: 'Routed', data: { n: label } });

    // 1. The tab's WebSocket on A; events published on B and C.
    const before = await all();
    for (let i = 1; i <= 5; i++) {
      await deliver(two, `b${i}`);
      await deliver(three, `c${i}`);
    }
    const first = await tab.received(10);
    expect(first.map(n)).toEqual(['b1', 'c1', 'b2', 'c2', 'b3', 'c3', 'b4', 'c4', 'b5', 'c5']);
    const base = first[0]!.id;
    expect(first.map((f) => f.id)).toEqual(first.map((_, k) => base + k));
    // One listener on every channel hears them in publish order: once it has the last, it has every one before.
    const has = (label: string) => () => ofTab(tab.tabId).some((h) => h.payload.includes(`"n":"${label}"`));
    await until(has('c5'), 'the last announcement on the wire');
    expect(ofTab(tab.tabId)).toHaveLength(10);
    const afterFirst = await all();
    expect(afterFirst[0]!.held - before[0]!.held).toBe(10);
    for (const k of [1, 2]) {
      expect(afterFirst[k]!.held - before[k]!.held).toBe(0);
      expect(afterFirst[k]!.notHeld - before[k]!.notHeld).toBe(0);
    }
    const channelOfA = ofTab(tab.tabId)[0]!.channel;
    expect(new Set(ofTab(tab.tabId).map((h) => h.channel))).toEqual(new Set([channelOfA]));

    // 2. The page leaves A: A no longer counts it connected, and events meanwhile wait in the stream.
    tab.close();
    await until(async () => !(await one.app.tabwire.hub.isConnected(address)), 'A to let the connection go');
    await deliver(three, 'away1');
    await deliver(two, 'away2');

    // 3. It comes back on B. Between B's hold of the tab and B's read of the stream, C publishes two events.
    const window = inHoldWindow(two, address.tabId, async () => {
      await deliver(three, 'window1');
      await deliver(three, 'window2');
    });
    const moved = await TestTab.open(two.wsUrl, { cookie: tab.cookie, register: false });
    moved.send({ cmd: 'Register', tabId: tab.tabId, location: 'http://127.0.0.1/page', lastEventId: first.at(-1)!.id });
    await moved.received(4);
    expect(window.end()).toBe(true);
    await deliver(one, 'after1');
    await deliver(three, 'after2');
    await deliver(two, 'after3');
    const second = await moved.received(7);
    expect(second.map(n)).toEqual(['away1', 'away2', 'window1', 'window2', 'after1', 'after2', 'after3']);
    expect(second.map((f) => f.id)).toEqual(second.map((_, k) => base + 10 + k));
    expect(moved.events.filter((f) => f.type === 'EventsLost')).toEqual([]);

    // Told: B for the events from its hold on (the two in the window and the three after), A and C for none.
    await until(has('after3'), 'the last announcement after the move on the wire');
    expect(ofTab(tab.tabId)).toHaveLength(15);
    const afterMove = await all();
    expect(afterMove[1]!.held - afterFirst[1]!.held).toBe(5);
    expect(afterMove[0]!.held + afterMove[0]!.notHeld - (afterFirst[0]!.held + afterFirst[0]!.notHeld)).toBe(0);
    expect(afterMove[2]!.held + afterMove[2]!.notHeld - (afterFirst[2]!.held + afterFirst[2]!.notHeld)).toBe(0);
    const moves = ofTab(tab.tabId).slice(10);
    expect(moves.every((h) => h.channel === moves[0]!.channel && h.channel !== channelOfA)).toBe(true);
    // Nobody was told the two events published while no node had the tab connected.
    expect(moves.map((h) => JSON.parse(h.payload.slice(h.payload.indexOf(':') + 1)).data.n)).toEqual(['window1', 'window2', 'after1', 'after2', 'after3']);
    moved.close();
  });
});
