import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Announcement, Broker, BrokerBounds } from '../../src/broker/broker.js';
import { MemoryBroker } from '../../src/broker/memory-broker.js';
import { RedisBroker } from '../../src/broker/redis-broker.js';
import { eventsChannel, tabKeys } from '../../src/broker/redis-broker-keys.js';
import type { DeliveryFallback } from '../../src/broker/broker.js';
import type { TabAddress } from '../../src/protocol/address.js';
import type { RedisConnection } from '../../src/redis/connection.js';
import { startRedis, testConnection, testPrefix, type RedisServer } from '../helpers/redis.js';
import { startRedisCluster, type RedisClusterServer } from '../helpers/redis-cluster.js';
import { connectRedisCluster, type RedisClusterConnection } from '../../src/redis/cluster-connection.js';
import { stateBackends, type Node } from '../helpers/state-backends.js';
import { until } from '../helpers/until.js';

/**
 * One contract, two brokers (docs/events.md "Event streams"): the memory broker of one node and the
 * Redis broker of a cluster must behave alike, so hub code never depends on which one it has.
 */
const bounds: BrokerBounds = { limit: 3, maxAgeMs: 60_000, presenceTtlMs: 30_000, idleStreamMs: 60_000 };
// Far ahead of any real clock: a stream is never numbered below Redis's own clock (redis-broker-lua.ts `epochFrom`).
const T0 = 4_000_000_000_000;
const A: TabAddress = { tabId: 'tab-00001', session: 'a'.repeat(64) };
const B: TabAddress = { tabId: 'tab-00001', session: 'b'.repeat(64) };
const fb = (n: number): DeliveryFallback => ({ kind: 'agent-message', accountId: 'acct', from: 'x@y', to: 'u@agents', type: 'chat', content: `<m n="${n}"/>`, createdAt: 0 });
const ev = (n: number) => ({ type: 'E', data: { n } });

const silent = pino({ level: 'silent' });
let redis: RedisServer;
/** A Redis Cluster of three primaries: the broker's third backend (docs/redis.md "Redis Cluster"). */
let shards: RedisClusterServer;
const connections: Redis[] = [];
const redisConnections: (RedisConnection | RedisClusterConnection)[] = [];

beforeAll(async () => {
  [redis, shards] = await Promise.all([startRedis(), startRedisCluster(3)]);
});
afterAll(async () => {
  for (const c of connections) c.disconnect();
  await Promise.all(redisConnections.map((c) => c.close()));
  await Promise.all([redis?.stop(), shards?.stop()]);
});

/** A node's Redis broker on this file's own server under `prefix` (nodes of one cluster share it). */
async function redisNode(prefix: string, options: BrokerBounds = bounds, node = 'node-1'): Promise<{ broker: RedisBroker; connection: RedisConnection }> {
  const connection = testConnection(redis.url, prefix);
  redisConnections.push(connection);
  return { broker: await RedisBroker.open(connection, options, { node, log: silent }), connection };
}

const backends = [
  ...stateBackends<Promise<Broker>, BrokerBounds>('broker', {
    memory: (options) => {
      const broker = new MemoryBroker(options, silent);
      return async () => broker;
    },
    redis: (connection, nodeId, options) => RedisBroker.open(connection, options, { node: nodeId, log: silent }),
  }),
  {
    name: 'redis cluster' as const,
    cluster: (options: BrokerBounds) => {
      const prefix = testPrefix('broker');
      return (nodeId: string) => {
        const connection = connectRedisCluster(shards.urls, silent, { prefix, name: 'tabwire-test' });
        redisConnections.push(connection);
        return RedisBroker.open(connection, options, { node: nodeId, log: silent });
      };
    },
  },
];

/** What `listen` heard, as the hub is told it: address, id, type, data and whether it awaits a confirmation. */
const heardAs = (a: Announcement) => ({ to: a.to, id: a.frame.id, type: a.frame.type, data: a.frame.data, awaiting: a.awaiting });

describe.each(backends)('broker contract: $name', (backend) => {
  /** The brokers of the nodes of the current cluster: each call is another node over the same streams. */
  let make: Node<Promise<Broker>>;
  /** Loses every stream, as a restarted broker does: what comes next is a fresh cluster. */
  const lose = () => {
    make = backend.cluster(bounds);
  };
  let broker: Broker;
  beforeEach(async () => {
    lose();
    broker = await make('node-1');
  });

  it('numbers a new stream from its epoch (creation ms × 1000) and reads after the sent mark', async () => {
    const first = await broker.publish(A, ev(1), T0);
    expect(first.frame).toEqual({ type: 'E', data: { n: 1 }, id: T0 * 1000 + 1 });
    await broker.publish(A, ev(2), T0 + 1);
    let read = await broker.read(A, undefined, T0 + 2);
    expect(read.frames.map((f) => f.id)).toEqual([T0 * 1000 + 1, T0 * 1000 + 2]);
    expect(read).toMatchObject({ epoch: T0 * 1000, last: T0 * 1000 + 2, lost: false });
    await broker.markSent(A, T0 * 1000 + 1);
    read = await broker.read(A, undefined, T0 + 2);
    expect(read.frames.map((f) => (f.data as { n: number }).n)).toEqual([2]);
    // A client that says what it saw gets what followed, whatever the mark says.
    read = await broker.read(A, T0 * 1000, T0 + 2);
    expect(read.frames).toHaveLength(2);
  });

  it('a publish repeated with its key appends nothing and answers the first one’s id (a retry after a timeout, a result republished)', async () => {
    const first = await broker.publish(A, ev(1), T0, undefined, 'key-1');
    const again = await broker.publish(A, ev(1), T0 + 5, undefined, 'key-1');
    expect(again.frame?.id).toBe(first.frame!.id);
    expect(again.duplicate).toBe(true);
    expect(first.duplicate).toBeFalsy();
    // Another key, or none, is another event; the same key on another address is another stream's.
    expect((await broker.publish(A, ev(2), T0 + 6, undefined, 'key-2')).frame?.id).toBe(first.frame!.id + 1);
    expect((await broker.publish(A, ev(3), T0 + 7)).frame?.id).toBe(first.frame!.id + 2);
    expect((await broker.publish(B, ev(1), T0 + 8, undefined, 'key-1')).duplicate).toBeFalsy();
    const read = await broker.read(A, T0 * 1000, T0 + 9);
    expect(read.frames.map((f) => (f.data as { n: number }).n)).toEqual([1, 2, 3]);
    // An XMPP event's key is kept too: its retry is answered even when nobody is connected any more.
    await broker.hold(A, 'node-a', T0 + 10_000, T0);
    const held = await broker.publish(A, ev(4), T0 + 10, fb(4), 'key-4');
    expect((await broker.publish(A, ev(4), T0 + 10_001, fb(4), 'key-4')).frame?.id).toBe(held.frame!.id);
  });

  it('a key whose event the count bound trimmed is still answered within the age bound (a late retry from another node), then free', async () => {
    const first = await broker.publish(A, ev(1), T0, undefined, 'old');
    for (let n = 2; n <= 8; n++) await broker.publish(A, ev(n), T0 + n);
    // Trimmed for the count (3) long ago in events, not in time: a copy that lands now is the same login.
    const late = await broker.publish(A, ev(1), T0 + 10, undefined, 'old');
    expect(late.duplicate).toBe(true);
    expect(late.frame?.id).toBe(first.frame!.id);
    expect((await broker.read(A, undefined, T0 + 11)).frames.map((f) => (f.data as { n: number }).n)).toEqual([6, 7, 8]);
    // Past the age bound a retry can no longer come: the key is forgotten, with the entries' own age trim.
    const later = T0 + bounds.maxAgeMs + 20;
    await broker.publish(A, ev(9), later);
    const after = await broker.publish(A, ev(1), later + 1, undefined, 'old');
    expect(after.duplicate).toBeFalsy();
    expect(after.frame!.id).toBeGreaterThan(late.frame!.id + 8);
  });

  it('keeps at most ten times the count bound of trimmed keys per tab, the newest', async () => {
    const kept = bounds.limit * 10;
    const total = kept + bounds.limit + 5;
    for (let n = 1; n <= total; n++) await broker.publish(A, ev(n), T0 + n, undefined, `k${n}`);
    // Entries 1 … total − limit were trimmed; only the newest `kept` of them keep their keys.
    const oldestKept = total - bounds.limit - kept + 1;
    expect((await broker.publish(A, ev(0), T0 + total + 1, undefined, `k${oldestKept}`)).duplicate).toBe(true);
    expect((await broker.publish(A, ev(0), T0 + total + 2, undefined, `k${oldestKept - 1}`)).duplicate).toBeFalsy();
  });

  it('a new epoch forgets every key', async () => {
    await broker.publish(A, ev(1), T0, undefined, 'old');
    lose();
    broker = await make('node-1');
    const fresh = await broker.publish(A, ev(1), T0 + 100, undefined, 'old');
    expect(fresh.duplicate).toBeFalsy();
    expect(fresh.frame?.id).toBe((T0 + 100) * 1000 + 1);
  });

  it('refuses a key that could break an entry apart', async () => {
    await expect(broker.publish(A, ev(1), T0, undefined, 'a:b')).rejects.toThrow(/publish key/);
  });

  it('streams are per address: another session holding the same tab id sees nothing', async () => {
    await broker.publish(A, ev(1), T0);
    const read = await broker.read(B, undefined, T0);
    expect(read.frames).toEqual([]);
    expect(read.epoch).toBe(0);
    // Never had a stream, so none was let go.
    expect(read.letGo).toBeUndefined();
  });

  it('keeps the newest `limit` events, counts the unsent ones pushed out, and tells a client resuming before them', async () => {
    let overflow = 0;
    for (let n = 1; n <= 5; n++) overflow += (await broker.publish(A, ev(n), T0)).dropped.overflow;
    expect(overflow).toBe(2);
    const read = await broker.read(A, T0 * 1000 + 1, T0);
    expect(read.frames.map((f) => (f.data as { n: number }).n)).toEqual([3, 4, 5]);
    expect(read.lost).toBe(true);
    expect((await broker.read(A, T0 * 1000 + 2, T0)).lost).toBe(false);
  });

  it('drops events past the age bound and tells a client that resumes before them', async () => {
    await broker.publish(A, ev(1), T0);
    await broker.publish(A, ev(2), T0 + 30_000);
    const read = await broker.read(A, T0 * 1000, T0 + 60_001);
    expect(read.frames.map((f) => (f.data as { n: number }).n)).toEqual([2]);
    expect(read.lost).toBe(true);
    expect(read.expired).toBe(1);
    // The newest id was seen: nothing was lost even though the stream is empty now.
    const later = await broker.read(A, T0 * 1000 + 2, T0 + 80_000);
    expect(later).toMatchObject({ frames: [], lost: false });
  });

  it('an event with a fallback is appended only while some node has the tab connected', async () => {
    expect((await broker.publish(A, ev(1), T0, fb(1))).frame).toBeUndefined();
    await broker.hold(A, 'node-1', T0 + 10_000, T0);
    expect((await broker.publish(A, ev(2), T0 + 1, fb(2))).frame?.data).toEqual({ n: 2 });
    // Connected until T0 + 10 s only (a long-poll's gap): later the fallback is the caller's to store.
    expect((await broker.publish(A, ev(3), T0 + 10_001, fb(3))).frame).toBeUndefined();
  });

  it('fallbacks pushed out unsent come back to be stored; events written and confirmed do not', async () => {
    await broker.hold(A, 'node-1', T0 + 1e9, T0);
    const first = await broker.publish(A, ev(1), T0, fb(1));
    await broker.markSent(A, first.frame!.id);
    expect(await broker.confirm(A, { ids: [first.frame!.id] })).toBe(1);
    const unsent: DeliveryFallback[] = [];
    for (let n = 2; n <= 6; n++) unsent.push(...(await broker.publish(A, ev(n), T0, fb(n))).unsent);
    expect(unsent.map((f) => f.content)).toEqual(['<m n="2"/>', '<m n="3"/>']);
  });

  it('a written message awaiting its confirmation outlasts the count bound, not the age bound (then it is handed back)', async () => {
    await broker.hold(A, 'node-1', T0 + 1e9, T0);
    const first = await broker.publish(A, ev(1), T0, fb(1));
    await broker.markSent(A, first.frame!.id);
    const unsent: DeliveryFallback[] = [];
    for (let n = 2; n <= 4; n++) unsent.push(...(await broker.publish(A, ev(n), T0, fb(n))).unsent);
    expect(unsent).toEqual([]);
    const read = await broker.read(A, T0 * 1000, T0);
    expect(read.frames.map((f) => (f.data as { n: number }).n)).toEqual([1, 2, 3, 4]);
    expect(read.awaiting).toEqual(read.frames.map((f) => f.id));
    // Confirmed, it is an ordinary written event: the next append trims it and the oldest unsent message.
    await broker.confirm(A, { ids: [first.frame!.id] });
    expect((await broker.publish(A, ev(5), T0, fb(5))).unsent.map((f) => f.content)).toEqual(['<m n="2"/>']);
    // Past the age bound nothing waits any more: written or not, an unconfirmed message comes back.
    await broker.heartbeat('node-1', T0 + 60_000);
    const aged = await broker.publish(A, ev(6), T0 + 60_001);
    expect(aged.unsent.map((f) => f.content)).toEqual(['<m n="3"/>', '<m n="4"/>', '<m n="5"/>']);
  });

  it('confirm and withdraw settle a written message once: whichever comes first wins', async () => {
    await broker.hold(A, 'node-1', T0 + 1e9, T0);
    const one = (await broker.publish(A, ev(1), T0, fb(1))).frame!.id;
    const two = (await broker.publish(A, ev(2), T0, fb(2))).frame!.id;
    await broker.markSent(A, two);
    expect(await broker.confirm(A, { ids: [one] })).toBe(1);
    expect(await broker.confirm(A, { ids: [one] })).toBe(0);
    expect((await broker.withdraw(A, [one, two])).map((f) => f.content)).toEqual(['<m n="2"/>']);
    expect(await broker.withdraw(A, [one, two])).toEqual([]);
    expect(await broker.confirm(A, { ids: [two] })).toBe(0);
    // Withdrawn, a message is never written again: a client resuming before it does not get it.
    const read = await broker.read(A, T0 * 1000, T0);
    expect(read.frames.map((f) => f.id)).toEqual([one]);
    expect(read.awaiting).toEqual([]);
    // Nor is it handed back again when the tab is let go.
    expect((await broker.drop(A, 'node-1', T0)).unsent).toEqual([]);
  });

  it('messages published with a key (as the hub publishes every event) await, confirm and withdraw alike (regression: the key hid the fallback)', async () => {
    await broker.hold(A, 'node-1', T0 + 1e9, T0);
    const one = (await broker.publish(A, ev(1), T0, fb(1), 'msg-key-1')).frame!.id;
    const two = (await broker.publish(A, ev(2), T0, fb(2), 'msg-key-2')).frame!.id;
    await broker.markSent(A, two);
    expect((await broker.read(A, T0 * 1000, T0)).awaiting).toEqual([one, two]);
    expect(await broker.confirm(A, { ids: [one] })).toBe(1);
    expect((await broker.withdraw(A, [one, two])).map((f) => f.content)).toEqual(['<m n="2"/>']);
    // Unsent ones come back to be stored when pushed out, key or not.
    const three = await broker.publish(A, ev(3), T0, fb(3), 'msg-key-3');
    expect(three.frame).toBeDefined();
    expect((await broker.drop(A, 'node-1', T0)).unsent.map((f) => f.content)).toEqual(['<m n="3"/>']);
  });

  it('a next poll confirms what was written to the tab (up to the sent mark), not what is still unsent', async () => {
    await broker.hold(A, 'node-1', T0 + 1e9, T0);
    const ids: number[] = [];
    for (let n = 1; n <= 3; n++) ids.push((await broker.publish(A, ev(n), T0, fb(n))).frame!.id);
    await broker.markSent(A, ids[1]!);
    expect((await broker.read(A, T0 * 1000, T0)).awaiting).toEqual(ids);
    expect(await broker.confirm(A, { through: Number.MAX_SAFE_INTEGER })).toBe(2);
    expect((await broker.read(A, T0 * 1000, T0)).awaiting).toEqual([ids[2]]);
    expect((await broker.withdraw(A, ids)).map((f) => f.content)).toEqual(['<m n="3"/>']);
    // A client's lastEventId confirms up to it.
    const four = (await broker.publish(A, ev(4), T0, fb(4))).frame!.id;
    const five = (await broker.publish(A, ev(5), T0, fb(5))).frame!.id;
    await broker.markSent(A, five);
    expect(await broker.confirm(A, { through: four })).toBe(1);
    expect((await broker.read(A, T0 * 1000, T0)).awaiting).toEqual([five]);
  });

  it('the last node to drop a tab gets its unsent fallbacks; while another holds it, nothing is handed back', async () => {
    const other = await make('node-2');
    await broker.hold(A, 'node-1', T0 + 1e9, T0);
    await other.hold(A, 'node-2', T0 + 1e9, T0);
    await broker.publish(A, ev(1), T0, fb(1));
    await broker.publish(A, ev(2), T0); // no fallback: waits for the session's return
    expect(await broker.drop(A, 'node-1', T0)).toEqual({ holders: 1, unsent: [] });
    expect(await broker.presence(A, T0)).toEqual({ held: true, connected: true });
    const last = await other.drop(A, 'node-2', T0);
    expect(last.holders).toBe(0);
    expect(last.unsent.map((f) => f.content)).toEqual(['<m n="1"/>']);
    expect(await broker.presence(A, T0)).toEqual({ held: false, connected: false });
    expect((await broker.read(A, undefined, T0)).frames.map((f) => (f.data as { n: number }).n)).toEqual([2]);
  });

  it("one heartbeat keeps every tab of a node; without it the node's tabs lapse (a node that died lets go by itself)", async () => {
    await broker.hold(A, 'node-1', T0 + 1e9, T0);
    await broker.hold(B, 'node-1', T0 + 1e9, T0);
    expect((await broker.presence(A, T0 + 29_999)).held).toBe(true);
    await broker.heartbeat('node-1', T0 + 20_000);
    expect(await broker.presence(A, T0 + 45_000)).toEqual({ held: true, connected: true });
    expect((await broker.presence(B, T0 + 49_999)).held).toBe(true);
    // Another node learns it with its own heartbeat (every third of the presence lifetime): on a Redis Cluster
    // the scripts cannot read the nodes' set, and a node's copy of it decides (docs/redis.md "Redis Cluster").
    await broker.heartbeat('node-2', T0 + 50_000);
    expect(await broker.presence(A, T0 + 50_000)).toEqual({ held: false, connected: false });
    expect((await broker.presence(B, T0 + 50_000)).held).toBe(false);
  });

  it("a node's tabs count while it lives, each with its own connected time", async () => {
    await broker.hold(A, 'node-1', T0 + 1_000, T0);
    await broker.hold(A, 'node-2', 0, T0);
    expect(await broker.presence(A, T0 + 999)).toEqual({ held: true, connected: true });
    expect(await broker.presence(A, T0 + 1_000)).toEqual({ held: true, connected: false });
    await broker.heartbeat('node-2', T0 + 25_000);
    expect(await broker.presence(A, T0 + 40_000)).toEqual({ held: true, connected: false });
    // node-1 never beat again; node-2 learns it with its next heartbeat (on a Redis Cluster its copy decides).
    await broker.heartbeat('node-2', T0 + 35_000);
    expect((await broker.drop(A, 'node-2', T0 + 40_000)).holders).toBe(0);
  });

  it("a dead node's entry does not outlive it in a tab that live nodes keep holding (it would count as connected for ever)", async () => {
    const other = await make('node-2');
    await broker.hold(A, 'node-1', T0 + 1e12, T0);
    await other.hold(A, 'node-2', 0, T0);
    // node-1 dies; node-2 beats on and holds the tab again, as its roll does.
    for (let t = T0 + 10_000; t <= T0 + 60_000; t += 10_000) {
      await other.heartbeat('node-2', t);
      await other.refresh([{ to: A, connectedUntil: 0 }], 'node-2', t);
    }
    // Long after: node-2 still beating, node-1 long gone (and forgotten by the nodes' set).
    await other.heartbeat('node-2', T0 + 3_600_000);
    expect(await other.presence(A, T0 + 3_600_000)).toEqual({ held: true, connected: false });
  });

  it('the heartbeat tells the broker generation, which changes when the broker lost its state', async () => {
    const first = await broker.heartbeat('node-1', T0);
    expect(await broker.heartbeat('node-1', T0 + 10_000)).toBe(first);
    expect(await (await make('node-2')).heartbeat('node-2', T0 + 10_000)).toBe(first);
    lose();
    broker = await make('node-1');
    expect(await broker.heartbeat('node-1', T0 + 20_000)).not.toBe(first);
  });

  it('a lost stream is made again with a higher epoch: a client resuming from the old one is told, a refresh reports it', async () => {
    await broker.hold(A, 'node-1', T0 + 1e9, T0);
    const old = (await broker.publish(A, ev(1), T0)).frame!;
    lose();
    broker = await make('node-1');
    expect(await broker.refresh([{ to: A, connectedUntil: T0 + 1e9 }], 'node-1', T0 + 5)).toEqual([A]);
    const next = (await broker.publish(A, ev(2), T0 + 6)).frame!;
    expect(next.id).toBeGreaterThan(old.id);
    const read = await broker.read(A, old.id, T0 + 7);
    expect(read.lost).toBe(true);
    expect(read.frames.map((f) => f.id)).toEqual([next.id]);
    expect((await broker.hold(A, 'node-1', T0 + 1e9, T0 + 8)).created).toBe(false);
  });

  it('a lost stream that an append made again: Redis holds it as neither created nor remade (results delivered before the loss are not sent twice); a restarted memory broker as remade, once (its node left out what it had written: wiring/events.ts)', async () => {
    await broker.hold(A, 'node-1', T0 + 1e9, T0);
    await broker.publish(A, ev(1), T0);
    lose();
    broker = await make('node-1');
    await broker.publish(A, ev(2), T0 + 5);
    const remade = backend.name === 'memory';
    expect(await broker.hold(A, 'node-1', T0 + 1e9, T0 + 6)).toMatchObject({ created: false, remade });
    expect(await broker.hold(A, 'node-1', T0 + 1e9, T0 + 7)).toMatchObject({ created: false, remade: false });
    expect(await broker.refresh([{ to: A, connectedUntil: T0 + 1e9 }], 'node-1', T0 + 8)).toEqual([]);
    const C: TabAddress = { tabId: 'tab-00003', session: A.session };
    expect(await broker.hold(C, 'node-1', T0 + 1e9, T0 + 10)).toMatchObject({ created: true, remade: false });
    // A stream a publish made and the rolling re-hold meets first is reported lost by it.
    await broker.publish(B, ev(3), T0 + 11);
    expect(await broker.refresh([{ to: B, connectedUntil: T0 + 1e9 }], 'node-1', T0 + 12)).toEqual(remade ? [B] : []);
  });

  it('the memory broker tells the keys of the events written to a connection (its node keeps those of results at a clean stop)', async () => {
    if (backend.name !== 'memory') return; // a Redis broker's streams outlive its node
    const memory = broker as MemoryBroker;
    await broker.hold(A, 'node-1', T0 + 1e9, T0);
    const one = (await broker.publish(A, ev(1), T0, undefined, 'rkey-one')).frame!;
    await broker.publish(A, ev(2), T0 + 1, undefined, 'rkey-two');
    await broker.publish(A, ev(3), T0 + 2);
    await broker.publish(B, ev(4), T0 + 3, undefined, 'rkey-other');
    const all = () => true;
    expect(memory.writtenKeys(T0, all)).toEqual([]);
    await broker.markSent(A, one.id);
    expect(memory.writtenKeys(T0, all)).toEqual([{ key: 'rkey-one', at: T0 }]);
    await broker.markSent(A, one.id + 2);
    expect(memory.writtenKeys(T0, all)).toEqual([{ key: 'rkey-one', at: T0 }, { key: 'rkey-two', at: T0 + 1 }]);
    // Published before `since`, or not accepted: left out.
    expect(memory.writtenKeys(T0 + 1, all)).toEqual([{ key: 'rkey-two', at: T0 + 1 }]);
    expect(memory.writtenKeys(T0, (key) => key.endsWith('two'))).toEqual([{ key: 'rkey-two', at: T0 + 1 }]);
  });

  it('a held tab keeps its state for keepAliveMs; once nobody holds it, for its idle time', async () => {
    if (backend.name !== 'redis') return; // only Redis expires state by itself
    const prefix = testPrefix('keep');
    const { broker: held, connection } = await redisNode(prefix, { ...bounds, keepAliveMs: 600_000 });
    const inspect = connection.client;
    await held.hold(A, 'node-1', T0 + 1e9, T0);
    await held.publish(A, ev(1), T0);
    const keys = await inspect.keys(`${prefix}t:*`);
    expect(keys).toHaveLength(3);
    for (const key of keys) expect(await inspect.pttl(key)).toBeGreaterThan(590_000);
    await held.drop(A, 'node-1', T0 + 1);
    expect(await inspect.exists(keys.find((k) => k.endsWith(':p'))!)).toBe(0); // nobody holds it
    for (const key of keys.filter((k) => !k.endsWith(':p'))) {
      const ttl = await inspect.pttl(key);
      expect(ttl).toBeGreaterThan(80_000);
      expect(ttl).toBeLessThanOrEqual(90_000);
    }
  });

  it('a stream nobody holds is kept for its session for the idle time, then goes', async () => {
    await broker.publish(A, ev(1), T0);
    expect((await broker.read(A, undefined, T0 + 59_000)).frames).toHaveLength(1);
    broker.sweep(T0 + 200_000);
    if (backend.name === 'memory') expect((await broker.read(A, undefined, T0 + 200_000)).epoch).toBe(0);
  });

  describe('announcements', () => {
    /**
     * Listens on `node` (named `name`) until the test ends, `heard` in arrival order; the node holds `tabs`
     * and B (`settled`'s marker), as a node with a connection of them does.
     */
    const listen = async (node: Broker, name: string, ...tabs: TabAddress[]) => {
      for (const tab of [B, ...tabs]) await node.hold(tab, name, T0 + 1e9, T0);
      const heard: Announcement[] = [];
      const off = node.subscribe((a) => heard.push(a));
      offs.push(off);
      return heard;
    };
    let offs: (() => void)[] = [];
    beforeEach(() => {
      offs.forEach((off) => off());
      offs = [];
    });
    /**
     * Publishes a marker event to B from `from` and waits until every list has heard it: a node's
     * announcements arrive in publish order, so anything published before it has arrived too, or never will.
     */
    const settled = async (from: Broker, ...lists: Announcement[][]) => {
      const marker = (await from.publish(B, { type: 'Marker', data: null }, T0 + 1_000)).frame!.id;
      await until(() => lists.every((l) => l.some((a) => a.frame.id === marker && a.frame.type === 'Marker')), 'the marker announced everywhere');
      for (const l of lists) l.splice(l.findIndex((a) => a.frame.type === 'Marker'), 1);
    };

    it('each publish is announced once to the listeners of every node that holds the tab, the publishing one included, with its id', async () => {
      const other = await make('node-2');
      const onOne = await listen(broker, 'node-1', A);
      const onOther = await listen(other, 'node-2', A);
      const plain = await broker.publish(A, { type: 'Quoted', data: { text: 'a "b" \u00e9:1' } }, T0);
      const bare = await other.publish(A, { type: 'Bare', data: undefined }, T0 + 1);
      const message = await broker.publish(A, ev(3), T0 + 2, fb(3), 'msg-1');
      await settled(broker, onOne, onOther);
      const expected = [
        { to: A, id: plain.frame!.id, type: 'Quoted', data: { text: 'a "b" \u00e9:1' }, awaiting: false },
        { to: A, id: bare.frame!.id, type: 'Bare', data: undefined, awaiting: false },
        // An XMPP message: a write of it awaits the client's confirmation (docs/xmpp.md "Delivered means confirmed").
        { to: A, id: message.frame!.id, type: 'E', data: { n: 3 }, awaiting: true },
      ];
      expect(onOne.map(heardAs)).toEqual(expected);
      expect(onOther.map(heardAs)).toEqual(expected);
      // The frame as a connection is written it: the fallback never travels with it.
      expect(Object.keys(onOther[2]!.frame).sort()).toEqual(['data', 'id', 'type']);
    });

    it('a node without the tab connected hears none of its events; once it holds it connected, it hears them; not after its connection left, nor after its drop', async () => {
      const other = await make('node-2');
      const onOther = await listen(other, 'node-2');
      const onOne = await listen(broker, 'node-1', A);
      await broker.publish(A, ev(1), T0);
      await settled(broker, onOne, onOther);
      // One node (memory) hears every event: it is the node that holds every tab.
      if (other !== broker) expect(onOther).toEqual([]);
      await other.hold(A, 'node-2', T0 + 1e9, T0);
      const second = await broker.publish(A, ev(2), T0);
      await settled(broker, onOne, onOther);
      expect(onOther.at(-1)?.frame.id).toBe(second.frame!.id);
      const heardBefore = onOther.length;
      await other.hold(A, 'node-2', T0, T0); // its connection left (connected until now: no longer)
      await broker.publish(A, ev(3), T0);
      await settled(broker, onOne, onOther);
      // The periodic re-hold never says it is connected again, nor takes a connected time back.
      await other.refresh([{ to: A, connectedUntil: 0 }], 'node-2', T0);
      await other.drop(A, 'node-2', T0);
      await broker.publish(A, ev(4), T0);
      await settled(broker, onOne, onOther);
      expect(onOne.map((a) => a.frame.data)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }]);
      if (other !== broker) expect(onOther).toHaveLength(heardBefore);
    });

    it('the periodic re-hold (refresh) never takes back a connected time; hold does', async () => {
      await broker.hold(A, 'node-1', T0 + 1e9, T0);
      await broker.refresh([{ to: A, connectedUntil: 0 }], 'node-1', T0);
      expect(await broker.presence(A, T0)).toEqual({ held: true, connected: true });
      await broker.hold(A, 'node-1', 0, T0);
      expect(await broker.presence(A, T0)).toEqual({ held: true, connected: false });
      await broker.refresh([{ to: A, connectedUntil: T0 + 1e9 }], 'node-1', T0);
      expect(await broker.presence(A, T0)).toEqual({ held: true, connected: true });
    });

    it('a duplicate publish (same key) is announced again with the first one\'s id; nothing is appended', async () => {
      const heard = await listen(broker, 'node-1', A);
      const first = await broker.publish(A, ev(1), T0, undefined, 'dup-key');
      const again = await broker.publish(A, ev(1), T0 + 5, undefined, 'dup-key');
      expect(again.duplicate).toBe(true);
      await settled(broker, heard);
      expect(heard.map((a) => a.frame.id)).toEqual([first.frame!.id, first.frame!.id]);
      expect((await broker.read(A, T0 * 1000, T0 + 6)).frames).toHaveLength(1);
    });

    it('an XMPP event that finds no connected node is neither appended nor announced', async () => {
      const heard = await listen(broker, 'node-1');
      expect((await broker.publish(A, ev(1), T0, fb(1))).frame).toBeUndefined();
      await broker.hold(A, 'node-1', T0 + 10, T0);
      expect((await broker.publish(A, ev(2), T0 + 10, fb(2))).frame).toBeUndefined(); // its long-poll gap is over
      await settled(broker, heard);
      expect(heard).toEqual([]);
    });

    it('a listener that throws affects neither the publisher nor another listener; a removed one hears nothing more', async () => {
      const other = await make('node-2');
      const throwing = other.subscribe(() => {
        throw new Error('listener bug');
      });
      offs.push(throwing);
      const kept = await listen(other, 'node-2', A);
      const removed: Announcement[] = [];
      const remove = other.subscribe((a) => removed.push(a));
      await expect(broker.publish(A, ev(1), T0)).resolves.toMatchObject({ frame: { data: { n: 1 } } });
      await settled(broker, kept, removed);
      remove();
      await broker.publish(A, ev(2), T0);
      await settled(broker, kept);
      expect(kept.map((a) => a.frame.data)).toEqual([{ n: 1 }, { n: 2 }]);
      expect(removed.map((a) => a.frame.data)).toEqual([{ n: 1 }]);
    });

    it('a closed broker tells its listeners nothing more', async () => {
      const other = await make('node-2');
      const closed = await make('node-3');
      const heard = await listen(other, 'node-2', A);
      await closed.hold(A, 'node-3', T0 + 1e9, T0);
      const gone: Announcement[] = [];
      closed.subscribe((a) => gone.push(a));
      if (closed !== other) await closed.close(); // on one node (memory) all nodes are one broker
      await broker.publish(A, ev(1), T0);
      await settled(broker, heard);
      expect(heard).toHaveLength(1);
      if (closed !== other) expect(gone).toEqual([]);
    });
  });
});

describe('redis broker across nodes', () => {
  it('two nodes publishing to one tab at once get distinct, gap-free ids', async () => {
    const prefix = testPrefix('race');
    const { broker: n1 } = await redisNode(prefix);
    const { broker: n2 } = await redisNode(prefix, { ...bounds, limit: 1000 });
    const outcomes = await Promise.all(Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? n1 : n2).publish(A, ev(i), T0)));
    const ids = outcomes.map((o) => o.frame!.id).sort((x, y) => x - y);
    expect(new Set(ids).size).toBe(200);
    expect(ids.at(-1)! - ids[0]!).toBe(199);
  });

  it('a stream a fail-over\'s check let go (its meta key left holding x) and an append made again is reported remade by its next hold or refresh, once', async () => {
    const prefix = testPrefix('remade');
    const { broker, connection } = await redisNode(prefix);
    const C: TabAddress = { tabId: 'tab-00003', session: A.session };
    for (const to of [A, B, C]) await broker.hold(to, 'node-1', T0 + 1e9, T0);
    await broker.publish(A, ev(1), T0 + 1);
    // What redis-broker-lua.ts `lineage` leaves of A's and B's streams on a promoted replica.
    for (const to of [A, B]) {
      const [m, ev, , k] = tabKeys(prefix, to);
      await connection.client.del(m, ev, k);
      await connection.client.hset(m, 'x', 1);
    }
    // A read meets it before anything made the stream again: none, and said to be let go (a holder then holds again).
    const read = await broker.read(A, 2, T0 + 2);
    expect(read).toMatchObject({ epoch: 0, frames: [], lost: true, letGo: true });
    const again = (await broker.publish(A, ev(2), T0 + 3)).frame!;
    await broker.publish(B, ev(3), T0 + 3);
    expect(await broker.hold(A, 'node-1', T0 + 1e9, T0 + 4)).toMatchObject({ created: false, remade: true, epoch: again.id - 1 });
    expect(await broker.hold(A, 'node-1', T0 + 1e9, T0 + 5)).toMatchObject({ created: false, remade: false });
    expect(await broker.refresh([{ to: B, connectedUntil: T0 + 1e9 }, { to: C, connectedUntil: T0 + 1e9 }], 'node-1', T0 + 6)).toEqual([B]);
    expect(await broker.refresh([{ to: B, connectedUntil: T0 + 1e9 }], 'node-1', T0 + 7)).toEqual([]);
  });

  it('a stream made by a script that carries an old time (a command sent again long after) is numbered from Redis\'s clock', async () => {
    const prefix = testPrefix('late');
    const { broker } = await redisNode(prefix);
    const longAgo = Date.now() - 60_000;
    const before = Date.now() * 1000;
    const held = await broker.hold(A, 'node-1', longAgo + 1e9, longAgo);
    expect(held.created).toBe(true);
    expect(held.epoch).toBeGreaterThanOrEqual(before - 5_000_000);
    const published = await broker.publish(B, ev(1), longAgo);
    expect(published.frame!.id).toBeGreaterThan(before - 5_000_000);
    // A caller's time ahead of Redis's is taken as it is (T0 is far ahead).
    expect((await broker.hold({ ...A, tabId: 'tab-00002' }, 'node-1', T0 + 1e9, T0)).epoch).toBe(T0 * 1000);
  });
});


describe('redis broker key lifetimes', () => {
  /** Each key of the prefix with its remaining lifetime (ms; -1: none). */
  const lifetimes = async (inspect: Redis, prefix: string): Promise<Map<string, number>> => {
    const out = new Map<string, number>();
    for (const key of await inspect.keys(`${prefix}t:*`)) out.set(key.slice(key.lastIndexOf(':') + 1), await inspect.pttl(key));
    return out;
  };

  it('every key a script makes gets a lifetime at once; a publish or hold only lengthens one (regression guard for PEXPIRE GT)', async () => {
    const prefix = testPrefix('lifetimes');
    const keepAliveMs = 600_000;
    const { broker, connection } = await redisNode(prefix, { ...bounds, keepAliveMs });
    const { broker: other } = await redisNode(prefix, { ...bounds, keepAliveMs }, 'node-2');
    const inspect = connection.client;
    const idle = bounds.idleStreamMs + bounds.presenceTtlMs;
    const expectAll = async (expected: Record<string, [number, number]>) => {
      const got = await lifetimes(inspect, prefix);
      expect([...got.keys()].sort()).toEqual(Object.keys(expected).sort());
      for (const [key, [low, high]] of Object.entries(expected)) {
        expect(got.get(key), key).toBeGreaterThan(low);
        expect(got.get(key), key).toBeLessThanOrEqual(high);
      }
    };
    // Made by a publish nobody holds: the idle lifetime, the key's hash and trimmed keys' list too.
    for (let n = 1; n <= bounds.limit + 2; n++) await broker.publish(A, ev(n), T0, undefined, `key-${n}`);
    await expectAll({ m: [idle - 10_000, idle], ev: [idle - 10_000, idle], k: [idle - 10_000, idle], kt: [idle - 10_000, idle] });
    // A hold makes `:p` on a stream that has a lifetime, and lengthens the stream's keys (not the publish keys').
    await broker.hold(A, 'node-1', T0 + 1e9, T0);
    await expectAll({ m: [keepAliveMs - 10_000, keepAliveMs], ev: [keepAliveMs - 10_000, keepAliveMs], p: [keepAliveMs - 10_000, keepAliveMs], k: [idle - 10_000, idle], kt: [idle - 10_000, idle] });
    // Past the age bound a read empties the list (Redis deletes it); the next publish makes it again, with the
    // stream's lifetime, and gives its keys that lifetime; a publish never shortens the held tab's keys.
    await broker.read(A, undefined, T0 + bounds.maxAgeMs + 1);
    expect((await lifetimes(inspect, prefix)).has('ev')).toBe(false);
    await broker.publish(A, ev(9), T0 + bounds.maxAgeMs + 2, undefined, 'key-9');
    await expectAll({ m: [keepAliveMs - 10_000, keepAliveMs], ev: [keepAliveMs - 10_000, keepAliveMs], p: [keepAliveMs - 10_000, keepAliveMs], k: [keepAliveMs - 10_000, keepAliveMs] });
    // Dropped by its last holder, the tab shrinks to the idle lifetime; a hold then makes `:p` anew and lengthens the rest.
    await broker.drop(A, 'node-1', T0 + bounds.maxAgeMs + 3);
    await expectAll({ m: [idle - 10_000, idle], ev: [idle - 10_000, idle], k: [keepAliveMs - 10_000, keepAliveMs] });
    await other.hold(A, 'node-2', 0, T0 + bounds.maxAgeMs + 4);
    await expectAll({ m: [keepAliveMs - 10_000, keepAliveMs], ev: [keepAliveMs - 10_000, keepAliveMs], p: [keepAliveMs - 10_000, keepAliveMs], k: [keepAliveMs - 10_000, keepAliveMs] });
    // A hold whose lifetime is shorter than the keys' (a node of another configuration) shortens nothing.
    const { broker: short } = await redisNode(prefix, { ...bounds, keepAliveMs: 0 }, 'node-3');
    await short.hold(A, 'node-3', 0, T0 + bounds.maxAgeMs + 5);
    await expectAll({ m: [keepAliveMs - 10_000, keepAliveMs], ev: [keepAliveMs - 10_000, keepAliveMs], p: [keepAliveMs - 10_000, keepAliveMs], k: [keepAliveMs - 10_000, keepAliveMs] });
    // A stream made by a hold (after Redis lost it) gets the hold's lifetime, `:p` with it.
    await inspect.del(...(await inspect.keys(`${prefix}t:*`)));
    await short.hold(A, 'node-3', 0, T0 + bounds.maxAgeMs + 6);
    await expectAll({ m: [idle - 10_000, idle], p: [idle - 10_000, idle] });
  });

  it('a read that trims keyed entries after their keys\' hash expired still gives the trimmed keys\' list a lifetime', async () => {
    const prefix = testPrefix('kt-lifetime');
    const { broker, connection } = await redisNode(prefix, bounds);
    const inspect = connection.client;
    for (let n = 1; n <= bounds.limit; n++) await broker.publish(A, ev(n), T0, undefined, `key-${n}`);
    const keys = await inspect.keys(`${prefix}t:*`);
    const named = (suffix: string) => keys.find((k) => k.endsWith(`:${suffix}`))!;
    // The publish keys' hash has expired (a retry window longer than the tab's lifetime), and the list holds one
    // entry more than the count bound (an awaited message kept past it, since confirmed): the read trims a keyed,
    // still young entry and keeps its key in `:kt`.
    await inspect.del(named('k'));
    await inspect.rpush(named('ev'), `${bounds.limit + 1}:${T0}:0:${JSON.stringify(ev(bounds.limit + 1))}`);
    await inspect.hset(named('m'), 'l', bounds.limit + 1);
    await broker.read(A, undefined, T0 + 1);
    const kt = (await inspect.keys(`${prefix}t:*`)).find((k) => k.endsWith(':kt'));
    expect(kt).toBeDefined();
    const ttl = await inspect.pttl(kt!);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(bounds.idleStreamMs + bounds.presenceTtlMs);
  });
});

describe('redis broker announcements on the wire', () => {
  it('are `<id>:<json>` on the prefixed channel of each node holding the tab, once each, the id digit for digit at real clock values', async () => {
    const prefix = testPrefix('wire');
    const { broker } = await redisNode(prefix);
    const subscriber = new Redis(redis.url);
    connections.push(subscriber);
    const heard: { channel: string; payload: string }[] = [];
    await subscriber.psubscribe(`${prefix}events:*`);
    subscriber.on('pmessage', (_pattern: string, channel: string, payload: string) => heard.push({ channel, payload }));
    const now = Date.now();
    await broker.hold(A, 'node-1', Number.MAX_SAFE_INTEGER, now);
    await broker.hold(A, 'node-2', now + 5_000, now); // a long-poll within its gap: told
    await broker.hold(A, 'node-4', 0, now); // held without a connection (its page left): not told
    await broker.hold(B, 'node-3', Number.MAX_SAFE_INTEGER, now); // another tab's node: not told
    const { frame } = await broker.publish(A, ev(1), now);
    const marker = await broker.publish(B, ev(2), now);
    // Published last, on one connection: once node-3 has B's event, the other channels have had A's.
    await until(() => heard.some((h) => h.channel.endsWith('node-3')), 'the announcements');
    expect(frame!.id).toBeGreaterThan(1e15);
    const payload = `${frame!.id}:${JSON.stringify({ to: A, type: 'E', data: { n: 1 } })}`;
    expect(heard.filter((h) => h.payload === payload).map((h) => h.channel).sort()).toEqual([`${prefix}${eventsChannel('node-1')}`, `${prefix}${eventsChannel('node-2')}`]);
    expect(heard.filter((h) => h.channel.endsWith('node-3')).map((h) => h.payload)).toEqual([marker.frame!.id + ':' + JSON.stringify({ to: B, type: 'E', data: { n: 2 } })]);
    expect(heard.filter((h) => h.channel.endsWith('node-4'))).toEqual([]);
  });

  it('an unreadable message on the channel is dropped; the next announcement is heard', async () => {
    const prefix = testPrefix('junk');
    const { broker, connection } = await redisNode(prefix);
    const heard: Announcement[] = [];
    broker.subscribe((a) => heard.push(a));
    await broker.hold(A, 'node-1', Number.MAX_SAFE_INTEGER, T0);
    await connection.client.publish(`${prefix}${eventsChannel('node-1')}`, 'not an announcement');
    await connection.client.publish(`${prefix}${eventsChannel('node-1')}`, '12:{not json');
    const { frame } = await broker.publish(A, ev(1), T0);
    await until(() => heard.length === 1, 'the announcement after the junk');
    expect(heard[0]!.frame).toEqual(frame);
  });
});

describe('redis broker across a Redis restart', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('subscribes again by itself, says so (onResume), and announcements flow again', async () => {
    const connection = testConnection(server.url, testPrefix('resume'));
    redisConnections.push(connection);
    const broker = await RedisBroker.open(connection, bounds, { node: 'node-1', log: silent });
    const heard: number[] = [];
    broker.subscribe((a) => heard.push(a.frame.data as number));
    let resumed = 0;
    broker.onResume(() => resumed++);
    await broker.hold(A, 'node-1', Number.MAX_SAFE_INTEGER, T0);
    await broker.publish(A, { type: 'E', data: 0 }, T0);
    await until(() => heard.includes(0), 'an announcement before the restart');
    await server.restart();
    await until(() => resumed === 1, 'the resubscription after the restart');
    // Subscribed again before onResume is told: what is published from now on is heard. Redis restarted
    // empty, so the node holds its tab again first (as its heartbeat does when the generation changed).
    await broker.hold(A, 'node-1', Number.MAX_SAFE_INTEGER, T0 + 1);
    await broker.publish(A, { type: 'E', data: 1 }, T0 + 1);
    await until(() => heard.includes(1), 'an announcement after the restart');
    expect(heard).toEqual([0, 1]);
  });
});
