import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { Hub, type DropReason } from '../../src/hub/hub.js';
import { MemoryBroker } from '../../src/broker/memory-broker.js';
import { until } from '../helpers/until.js';
import { A, FakeConnection, fallback, makeHub, tick } from '../helpers/hub-fixtures.js';

describe('Hub: events with a fallback are never lost', () => {
  it('goes straight to the fallback when the tab has no live connection', async () => {
    const { hub, fellBack } = makeHub();
    const conn = new FakeConnection();
    await hub.attach(A, conn);
    hub.detach(A, conn);
    await hub.deliver(A, { type: 'Msg', data: 1 }, fallback(1));
    await tick();
    expect(fellBack.map((f) => f.content)).toEqual(['<m n="1"/>']);
  });

  it('a long-poll tab between two polls still counts as connected, until the gap passes', async () => {
    const { hub, clock } = makeHub();
    const poll = new FakeConnection('long-poll');
    await hub.attach(A, poll);
    hub.detach(A, poll);
    expect(await hub.isConnected(A)).toBe(true);
    clock.advance(10_000);
    expect(await hub.isConnected(A)).toBe(false);
  });

  it('a long-poll burst above the buffer size stores what overflows instead of dropping it', async () => {
    const { hub, fellBack, dropped } = makeHub({ outboxLimit: 3 });
    const poll = new FakeConnection('long-poll');
    await hub.attach(A, poll);
    hub.detach(A, poll);
    for (let n = 1; n <= 5; n++) await hub.deliver(A, { type: 'Msg', data: n }, fallback(n));
    await tick();
    expect(fellBack.map((f) => f.content)).toEqual(['<m n="1"/>', '<m n="2"/>']);
    expect(dropped.overflow).toBeUndefined();
    const next = new FakeConnection('long-poll');
    await hub.attach(A, next);
    expect(next.frames.map((f) => f.data)).toEqual([3, 4, 5]);
  });

  it('buffered events with a fallback are stored when their tab is forgotten', async () => {
    const { hub, clock, fellBack } = makeHub();
    const poll = new FakeConnection('long-poll');
    await hub.attach(A, poll);
    hub.detach(A, poll);
    await hub.deliver(A, { type: 'Msg', data: 1 }, fallback(1));
    await hub.deliver(A, { type: 'Plain', data: 2 });
    await tick();
    clock.advance(60_001);
    hub.sweep();
    await tick();
    expect(fellBack.map((f) => f.content)).toEqual(['<m n="1"/>']);
  });

  it('an unsent event past the age bound is counted as dropped, and the next one still arrives', async () => {
    const { hub, clock, dropped } = makeHub();
    const poll = new FakeConnection('long-poll');
    await hub.attach(A, poll);
    hub.detach(A, poll);
    await hub.deliver(A, { type: 'Plain', data: 1 });
    clock.advance(30_000);
    await hub.deliver(A, { type: 'Plain', data: 2 });
    clock.advance(31_000);
    const back = new FakeConnection('long-poll');
    await hub.attach(A, back);
    expect(back.frames.map((f) => f.data)).toEqual([2]);
    expect(dropped.expired).toBe(1);
  });

  it('events already written are not counted as dropped when they age out', async () => {
    const { hub, clock, dropped } = makeHub();
    const first = new FakeConnection();
    await hub.attach(A, first);
    await hub.deliver(A, { type: 'Plain', data: 1 });
    await tick();
    clock.advance(60_001);
    await hub.attach(A, new FakeConnection());
    expect(dropped).toEqual({});
  });
});

describe('Hub: a broker that cannot be reached', () => {
  it('holds refused events and writes them, in order and before newer ones, once the broker is back', async () => {
    const clock = new ManualClock();
    const memory = new MemoryBroker({ limit: 100, maxAgeMs: 60_000, presenceTtlMs: 1e12, idleStreamMs: 60_000 });
    let down = false;
    const broker = Object.assign(Object.create(memory) as MemoryBroker, {
      publish: (...args: Parameters<MemoryBroker['publish']>) => (down ? Promise.reject(new Error('connection refused')) : memory.publish(...args)),
    });
    const dropped: Partial<Record<DropReason, number>> = {};
    const hub = new Hub(
      { broker, clock, log: pino({ level: 'silent' }), onFallback: () => undefined, counters: { delivered: () => undefined, fellBack: () => undefined, dropped: (reason, n) => (dropped[reason] = (dropped[reason] ?? 0) + n) } },
      { node: 'n', presenceTtlMs: 1e12, outboxMaxAgeMs: 60_000, tabIdleMs: 60_000, longPollGapMs: 10_000, maxTabsPerSession: 100 },
    );
    const conn = new FakeConnection();
    await hub.attach(A, conn);
    down = true;
    await hub.deliver(A, { type: 'E', data: 1 });
    await hub.deliver(A, { type: 'E', data: 2 });
    hub.sweep();
    await tick();
    expect(conn.frames).toEqual([]);
    down = false;
    await hub.deliver(A, { type: 'E', data: 3 }); // queued behind the held ones, not before them
    hub.sweep();
    await until(() => conn.frames.length === 3, 'the held events');
    expect(conn.frames.map((f) => f.data)).toEqual([1, 2, 3]);
    // Held longer than the age bound: given up and counted.
    down = true;
    await hub.deliver(A, { type: 'E', data: 4 });
    clock.advance(60_001);
    down = false;
    hub.sweep();
    await until(() => dropped.unreachable === 1, 'the old event to be given up');
    expect(conn.frames).toHaveLength(3);
  });
});
