import pino from 'pino';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { RedisBroker } from '../../src/broker/redis-broker.js';
import { tabKeys } from '../../src/broker/redis-broker-keys.js';
import { ManualClock } from '../../src/clock.js';
import { Hub } from '../../src/hub/hub.js';
import type { TabAddress } from '../../src/protocol/address.js';
import { connectRedis, type RedisConnection } from '../../src/redis/connection.js';
import { A, FakeConnection } from '../helpers/hub-fixtures.js';
import { testPrefix } from '../helpers/redis.js';
import { until } from '../helpers/until.js';

/**
 * A tab's stream let go while its holders stay (what a Redis Cluster's check after a fail-over to a replica
 * leaves: docs/redis.md "Replicas and fail-over"), on a real Redis: made again by the next event, or met by
 * its holder's read with no event to come. The node that holds the tab must tell its connection `EventsLost`,
 * and derive its results again (`onStreamLost`) once, at once rather than at its next rolling re-hold (these
 * hubs have no timers: no re-hold runs unless the test calls it).
 */
const connections: RedisConnection[] = [];
afterAll(async () => {
  await Promise.all(connections.map((c) => c.close()));
});

/** A node's hub on its own connection, named `<prefix>-<name>` in `CLIENT LIST` (its subscriber `…:pubsub`). */
async function node(name: string, prefix: string, clock: ManualClock, lost: TabAddress[]): Promise<Hub> {
  const connection = connectRedis(inject('redisUrl'), pino({ level: 'silent' }), { prefix, name: `${prefix}-${name}` });
  connections.push(connection);
  const bounds = { limit: 100, maxAgeMs: 60_000, presenceTtlMs: 30_000, idleStreamMs: 60_000 };
  const broker = await RedisBroker.open(connection, bounds, { node: name, log: pino({ level: 'silent' }) });
  return new Hub(
    { broker, clock, log: pino({ level: 'silent' }), onFallback: () => undefined, onStreamLost: (address) => lost.push(address) },
    { node: name, presenceTtlMs: 30_000, outboxMaxAgeMs: 60_000, tabIdleMs: 60_000, longPollGapMs: 10_000, maxTabsPerSession: 100 },
  );
}

/** What the check leaves on a promoted replica (redis-broker-lua.ts `lineage`): the stream and its publish keys
 * gone, the meta key holding only x, the holders kept. (On one Redis no script checks; the state is made here.) */
async function letGo(prefix: string): Promise<void> {
  const [m, ev, , k] = tabKeys(prefix, A);
  const redis = connections[0]!.client;
  expect(await redis.del(m, ev, k)).toBeGreaterThanOrEqual(2);
  await redis.hset(m, 'x', 1);
}

/**
 * Two nodes; node 1 holds tab A with a page connected that got one event (id `before`) from node 2; then A's
 * stream is let go as the check leaves it. `lost`: the tabs node 1 derived results again for.
 */
async function heldThenLetGo(name: string) {
  const prefix = testPrefix(name);
  const clock = new ManualClock();
  const lost: TabAddress[] = [];
  const [one, two] = [await node('node-1', prefix, clock, lost), await node('node-2', prefix, clock, [])];
  await one.refresh();
  const page = new FakeConnection();
  await one.attach(A, page);
  await two.deliver(A, { type: 'E', data: 1 });
  await until(() => page.frames.length === 1, 'the first event');
  const before = page.frames[0]!.id;
  await letGo(prefix);
  clock.advance(1_000);
  return { one, two, page, before, lost, prefix };
}

describe('a held tab whose stream is lost and made again by an event', () => {
  it('its connection is told EventsLost before the event, and its node derives the results again once', async () => {
    const { one, two, page, before, lost } = await heldThenLetGo('remade');
    await two.deliver(A, { type: 'E', data: 2 });
    await until(() => lost.length > 0 && page.frames.length >= 3, 'EventsLost, the event and the derivation');
    expect(page.frames.map((f) => f.type)).toEqual(['E', 'EventsLost', 'E']);
    expect(page.frames[1]!.data).toEqual({ after: before, epoch: page.frames[2]!.id - 1 });
    expect(page.frames[2]!.id).toBeGreaterThan(before);
    expect(lost).toEqual([A]);

    // Once: the hold that reported it cleared the mark; later events and re-holds derive nothing more.
    await two.deliver(A, { type: 'E', data: 3 });
    await until(() => page.frames.length === 4, 'the next event');
    await one.roll();
    expect(await one.holds(A)).toBe(true);
    expect(lost).toEqual([A]);
  });

  it('a quiet tab: its holder\'s read after a resubscription finds the stream let go, and the tab is held again at once, its connection told EventsLost and its results derived again', async () => {
    const { one, two, page, before, lost, prefix } = await heldThenLetGo('letgo');
    // Node 1's subscriber cut: it comes back, subscribes again and reads its open tabs' streams, the read an
    // event announced during a fail-over also makes. No event follows.
    const redis = connections[0]!.client;
    const clients = String(await redis.call('CLIENT', 'LIST', 'TYPE', 'pubsub'));
    const subscriber = new RegExp(`^id=(\\d+) .*name=${prefix}-node-1:pubsub `, 'm').exec(clients);
    expect(subscriber, clients).not.toBeNull();
    expect(await redis.call('CLIENT', 'KILL', 'ID', subscriber![1]!)).toBe(1);
    await until(() => lost.length > 0 && page.frames.length >= 2, 'EventsLost and the derivation');
    expect(page.frames.map((f) => f.type)).toEqual(['E', 'EventsLost']);
    const told = page.frames[1]!.data as { after: number; epoch: number };
    expect(told.after).toBe(before);
    expect(told.epoch).toBeGreaterThan(before);
    expect(lost).toEqual([A]);
    // The hold made the stream again in that epoch: the next event follows on from it, and nothing is derived again.
    await two.deliver(A, { type: 'E', data: 2 });
    await until(() => page.frames.length === 3, 'the next event');
    expect(page.frames[2]!.id).toBe(told.epoch + 1);
    expect(lost).toEqual([A]);
  });
});
