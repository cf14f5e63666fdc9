import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Broker, BrokerBounds } from '../../src/broker/broker.js';
import { MemoryBroker } from '../../src/broker/memory-broker.js';
import { RedisBroker } from '../../src/broker/redis-broker.js';
import type { DeliveryFallback } from '../../src/bus/bus.js';
import type { TabAddress } from '../../src/protocol/address.js';
import { startRedis, type RedisServer } from '../helpers/redis.js';
import { stateBackends, type Node } from '../helpers/state-backends.js';

/**
 * One contract, two brokers (docs/events.md "Event streams"): the memory broker of one node and the
 * Redis broker of a cluster must behave alike, so hub code never depends on which one it has.
 */
const bounds: BrokerBounds = { limit: 3, maxAgeMs: 60_000, presenceTtlMs: 30_000, idleStreamMs: 60_000 };
const T0 = 1_800_000_000_000;
const A: TabAddress = { tabId: 'tab-00001', session: 'a'.repeat(64) };
const B: TabAddress = { tabId: 'tab-00001', session: 'b'.repeat(64) };
const fb = (n: number): DeliveryFallback => ({ kind: 'agent-message', accountId: 'acct', from: 'x@y', to: 'u@agents', type: 'chat', content: `<m n="${n}"/>`, createdAt: 0 });
const ev = (n: number) => ({ type: 'E', data: { n } });

let redis: RedisServer;
const connections: Redis[] = [];

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  for (const c of connections) c.disconnect();
  await redis?.stop();
});

const backends = stateBackends<Broker, BrokerBounds>('broker', {
  memory: (options) => {
    const broker = new MemoryBroker(options);
    return () => broker;
  },
  redis: (connection, _nodeId, options) => new RedisBroker(connection.client, options, { prefix: connection.prefix }),
});

describe.each(backends)('broker contract: $name', (backend) => {
  /** The brokers of the nodes of the current cluster: each call is another node over the same streams. */
  let make: Node<Broker>;
  /** Loses every stream, as a restarted broker does: what comes next is a fresh cluster. */
  const lose = () => {
    make = backend.cluster(bounds);
  };
  let broker: Broker;
  beforeEach(() => {
    lose();
    broker = make('node-1');
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

  it('a key whose event left the stream (bounds) is free again, and a new epoch forgets every key', async () => {
    await broker.publish(A, ev(1), T0, undefined, 'old');
    for (let n = 2; n <= 4; n++) await broker.publish(A, ev(n), T0);
    const after = await broker.publish(A, ev(1), T0, undefined, 'old');
    expect(after.duplicate).toBeFalsy();
    expect(after.frame?.id).toBe(T0 * 1000 + 5);
    lose();
    broker = make('node-1');
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
    const other = make('node-2');
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
    expect((await broker.drop(A, 'node-2', T0 + 40_000)).holders).toBe(0);
  });

  it('the heartbeat tells the broker generation, which changes when the broker lost its state', async () => {
    const first = await broker.heartbeat('node-1', T0);
    expect(await broker.heartbeat('node-1', T0 + 10_000)).toBe(first);
    expect(await make('node-2').heartbeat('node-2', T0 + 10_000)).toBe(first);
    lose();
    broker = make('node-1');
    expect(await broker.heartbeat('node-1', T0 + 20_000)).not.toBe(first);
  });

  it('a lost stream is made again with a higher epoch: a client resuming from the old one is told, a refresh reports it', async () => {
    await broker.hold(A, 'node-1', T0 + 1e9, T0);
    const old = (await broker.publish(A, ev(1), T0)).frame!;
    lose();
    broker = make('node-1');
    expect(await broker.refresh([{ to: A, connectedUntil: T0 + 1e9 }], 'node-1', T0 + 5)).toEqual([A]);
    const next = (await broker.publish(A, ev(2), T0 + 6)).frame!;
    expect(next.id).toBeGreaterThan(old.id);
    const read = await broker.read(A, old.id, T0 + 7);
    expect(read.lost).toBe(true);
    expect(read.frames.map((f) => f.id)).toEqual([next.id]);
    expect((await broker.hold(A, 'node-1', T0 + 1e9, T0 + 8)).created).toBe(false);
  });

  it('a held tab keeps its state for keepAliveMs; once nobody holds it, for its idle time', async () => {
    if (backend.name !== 'redis') return; // only Redis expires state by itself
    const inspect = new Redis(redis.url);
    connections.push(inspect);
    const held = new RedisBroker(inspect, { ...bounds, keepAliveMs: 600_000 }, { prefix: 'test:' });
    await held.hold(A, 'node-1', T0 + 1e9, T0);
    await held.publish(A, ev(1), T0);
    const keys = await inspect.keys('test:t:*');
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
});

describe('redis broker across nodes', () => {
  it('two nodes publishing to one tab at once get distinct, gap-free ids', async () => {
    const c1 = new Redis(redis.url);
    const c2 = new Redis(redis.url);
    connections.push(c1, c2);
    const n1 = new RedisBroker(c1, bounds, { prefix: 'race:' });
    const n2 = new RedisBroker(c2, { ...bounds, limit: 1000 }, { prefix: 'race:' });
    const outcomes = await Promise.all(Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? n1 : n2).publish(A, ev(i), T0)));
    const ids = outcomes.map((o) => o.frame!.id).sort((x, y) => x - y);
    expect(new Set(ids).size).toBe(200);
    expect(ids.at(-1)! - ids[0]!).toBe(199);
  });
});

describe('redis broker announcing on the bus', () => {
  it('publishes the bus message of each appended event in the same script, with the id the append gave', async () => {
    const command = new Redis(redis.url);
    const subscriber = new Redis(redis.url);
    connections.push(command, subscriber);
    const heard: unknown[] = [];
    await subscriber.subscribe('ann:bus');
    subscriber.on('message', (_channel: string, payload: string) => heard.push(JSON.parse(payload)));
    const broker = new RedisBroker(command, bounds, { prefix: 'ann:', announceChannel: 'ann:bus' });
    // Real clock values: ids near 1.8e15 must reach the message digit for digit, not in exponent form.
    const now = Date.now();
    await broker.hold(A, 'node-1', now + 1e9, now);
    const plain = await broker.publish(A, { type: 'Quoted', data: { text: 'a "b" \u00e9' } }, now);
    const noData = await broker.publish(A, { type: 'Bare', data: undefined }, now + 1);
    const withFallback = await broker.publish(A, ev(3), now + 2, fb(3));
    const notConnected = await broker.publish(B, ev(4), now + 3, fb(4));
    expect([plain.announced, noData.announced, withFallback.announced]).toEqual([true, true, true]);
    expect(notConnected.frame).toBeUndefined();
    await expect.poll(() => heard.length).toBe(3);
    // The fallback stays in the stream for the node that stores it; the tab's frame never carries it.
    // A message's announcement says it awaits a confirmation once written (docs/xmpp.md "Delivered means confirmed").
    const announced = (o: typeof plain, awaiting?: true) => ({ kind: 'event', to: A, ...(awaiting ? { awaiting } : {}), frame: JSON.parse(JSON.stringify(o.frame)) });
    expect(heard).toEqual([announced(plain), announced(noData), announced(withFallback, true)]);
    expect(plain.frame!.id).toBeGreaterThan(1e15);
  });

  it('without a channel publishes nothing and says so, so the hub announces the event itself', async () => {
    const command = new Redis(redis.url);
    const subscriber = new Redis(redis.url);
    connections.push(command, subscriber);
    const heard: string[] = [];
    await subscriber.psubscribe('*');
    subscriber.on('pmessage', (_pattern: string, channel: string) => heard.push(channel));
    const outcome = await new RedisBroker(command, bounds, { prefix: 'quiet:' }).publish(A, ev(1), T0);
    expect(outcome.announced).toBe(false);
    expect(outcome.frame?.id).toBeGreaterThan(0);
    // Pub/sub keeps one connection's messages in order: once the marker arrives, anything before it has too.
    await command.publish('marker', 'x');
    await expect.poll(() => heard).toEqual(['marker']);
  });
});
