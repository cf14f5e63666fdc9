import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Bus, BusMessage } from '../../src/bus/bus.js';
import { MemoryBus } from '../../src/bus/memory-bus.js';
import { RedisBus } from '../../src/bus/redis-bus.js';
import type { RedisConnection } from '../../src/redis/connection.js';
import { startRedis, testConnection, testPrefix, type RedisServer } from '../helpers/redis.js';
import { stateBackends, twoNodes } from '../helpers/state-backends.js';
import { until } from '../helpers/until.js';

const silent = pino({ level: 'silent' });

/** Two nodes' buses on one medium, and how to close them. */
interface Cluster {
  a: Bus;
  b: Bus;
  close(): Promise<void>;
}

async function redisCluster(url: string): Promise<Cluster> {
  const prefix = testPrefix('bus');
  const connections: RedisConnection[] = [testConnection(url, prefix), testConnection(url, prefix)];
  const [a, b] = await Promise.all(connections.map((c, i) => RedisBus.open(c, i === 0 ? 'node-a' : 'node-b', silent)));
  return {
    a: a!,
    b: b!,
    async close() {
      await Promise.all([a!.close(), b!.close()]);
      await Promise.all(connections.map((c) => c.close()));
    },
  };
}

const backends = stateBackends<Promise<Bus>>('bus', {
  memory: () => {
    const bus = new MemoryBus(silent);
    return async () => bus;
  },
  redis: (redis, nodeId) => RedisBus.open(redis, nodeId, silent),
});

/** A numbered request between nodes (an XMPP send's answer), told apart by `n`. */
const deliver = (n: number): BusMessage => ({ kind: 'xmpp-sent', requestId: `r-${n}`, to: 'node-a', outcome: 'sent' });
const numberOf = (m: BusMessage): number => (m.kind === 'xmpp-sent' ? Number(m.requestId.slice(2)) : -1);

describe.each(backends)('Bus contract: $name', (backend) => {
  let cluster: Omit<Cluster, 'close'>;
  beforeAll(async () => {
    const nodes = twoNodes(backend, undefined);
    const [a, b] = await Promise.all([nodes.a, nodes.b]);
    cluster = { a, b };
  });
  // One bus when both nodes are one process (memory).
  afterAll(async () => Promise.all([...new Set([cluster.a, cluster.b])].map((bus) => bus.close())));

  it('a message reaches the subscribers of the node it is addressed to, and no other node', async () => {
    const onA: BusMessage[] = [];
    const onB: BusMessage[] = [];
    const offA = cluster.a.subscribe((m) => onA.push(m));
    const offB = cluster.b.subscribe((m) => onB.push(m));
    const message: BusMessage = {
      kind: 'xmpp-send',
      requestId: 'r1',
      replyTo: 'node-a',
      message: { from: 'a@x', to: 'b@y', type: 'chat', id: 'm1', children: [{ kind: 'text', name: 'body', text: 'hi' }] },
    };
    await cluster.a.publish('node-b', message);
    // Then one to node-a itself: had node-a heard node-b's message, it would have heard it first (one
    // publisher, one subscriber connection: Redis forwards in publish order).
    await cluster.a.publish('node-a', deliver(7));
    await until(() => onB.some((m) => m.kind === 'xmpp-send') && onA.some((m) => numberOf(m) === 7), 'each message at its node');
    expect(onB[0]).toEqual(message);
    // On one node (memory) both names are that node.
    if (cluster.a !== cluster.b) expect(onA.map(numberOf)).toEqual([7]);
    offA();
    offB();
  });

  it('keeps each publisher\'s order (500 messages from each of two publishers, not awaited one by one)', async () => {
    const seen: number[] = [];
    const off = cluster.b.subscribe((m) => seen.push(numberOf(m)));
    const sends: Promise<void>[] = [];
    for (let i = 0; i < 500; i++) sends.push(cluster.a.publish('node-b', deliver(i)), cluster.b.publish('node-b', deliver(10_000 + i)));
    await Promise.all(sends);
    await until(() => seen.length === 1000, 'all 1000 messages');
    expect(seen.filter((n) => n < 10_000)).toEqual(Array.from({ length: 500 }, (_, i) => i));
    expect(seen.filter((n) => n >= 10_000)).toEqual(Array.from({ length: 500 }, (_, i) => 10_000 + i));
    off();
  });

  it('a subscriber that throws harms neither the publisher nor the other subscribers', async () => {
    const seen: number[] = [];
    const offBad = cluster.b.subscribe(() => {
      throw new Error('subscriber bug');
    });
    const offGood = cluster.b.subscribe((m) => seen.push(numberOf(m)));
    await expect(cluster.a.publish('node-b', deliver(1))).resolves.toBeUndefined();
    await cluster.a.publish('node-b', deliver(2));
    await until(() => seen.length === 2, 'both messages at the healthy subscriber');
    expect(seen).toEqual([1, 2]);
    offBad();
    offGood();
  });

  it('a removed subscriber receives nothing more', async () => {
    const removed: number[] = [];
    const kept: number[] = [];
    const offRemoved = cluster.b.subscribe((m) => removed.push(numberOf(m)));
    const offKept = cluster.b.subscribe((m) => kept.push(numberOf(m)));
    await cluster.a.publish('node-b', deliver(1));
    await until(() => removed.length === 1 && kept.length === 1, 'the first message');
    offRemoved();
    await cluster.a.publish('node-b', deliver(2));
    // The kept subscriber of the same node has it, so the removed one would have it by now.
    await until(() => kept.length === 2, 'the second message');
    expect(removed).toEqual([1]);
    offKept();
  });
});

describe('Redis bus across a Redis restart', () => {
  let server: RedisServer;
  let cluster: Cluster;
  beforeAll(async () => {
    server = await startRedis();
    cluster = await redisCluster(server.url);
  });
  afterAll(async () => {
    await cluster?.close();
    await server?.stop();
  });
  afterEach(async () => server.start());

  it('re-subscribes after Redis restarts: messages flow again, in order, without any call by the node', async () => {
    const seen: number[] = [];
    cluster.b.subscribe((m) => seen.push(numberOf(m)));
    await cluster.a.publish('node-b', deliver(0));
    await until(() => seen.includes(0), 'a message before the restart');
    await server.restart();
    // Pub/sub is at-most-once: probes published before the subscriber is back are lost. Probe until one arrives.
    let probe = 1;
    await until(async () => {
      await cluster.a.publish('node-b', deliver(probe++)).catch(() => undefined);
      return seen.some((n) => n >= 1);
    }, 'a message after the restart');
    const start = probe;
    await Promise.all(Array.from({ length: 100 }, (_, i) => cluster.a.publish('node-b', deliver(start + i))));
    await until(() => seen.includes(start + 99), 'the messages after the restart');
    expect(seen.filter((n) => n >= start)).toEqual(Array.from({ length: 100 }, (_, i) => start + i));
  });

  it('a publish while Redis is down fails within the command timeout instead of hanging, and the node lives on', async () => {
    await server.stopServer();
    await expect(cluster.a.publish('node-b', deliver(1))).rejects.toThrow();
  });
});
