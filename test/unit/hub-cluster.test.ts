import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { MemoryBus } from '../../src/bus/memory-bus.js';
import { ManualClock } from '../../src/clock.js';
import type { TabAddress } from '../../src/protocol/address.js';
import { Hub } from '../../src/hub/hub.js';
import { MemoryBroker } from '../../src/broker/memory-broker.js';
import { A, FakeConnection, tick } from '../helpers/hub-fixtures.js';

describe('Hub: two nodes on one broker (a cluster)', () => {
  function twoNodes() {
    const clock = new ManualClock();
    const broker = new MemoryBroker({ limit: 100, maxAgeMs: 60_000, presenceTtlMs: 30_000, idleStreamMs: 60_000 });
    const forgotten: TabAddress[] = [];
    const node = (name: string) =>
      new Hub({ broker, clock, log: pino({ level: 'silent' }), onFallback: () => undefined, onForget: (a) => forgotten.push(a) }, { node: name, presenceTtlMs: 30_000, outboxMaxAgeMs: 60_000, tabIdleMs: 60_000, longPollGapMs: 10_000, maxTabsPerSession: 100 });
    return { clock, broker, one: node('node-1'), two: node('node-2'), forgotten };
  }

  it('an event delivered on one node reaches the tab connected to the other, once, in order', async () => {
    const { one, two } = twoNodes();
    const conn = new FakeConnection();
    await two.attach(A, conn);
    for (let n = 1; n <= 5; n++) await (n % 2 ? one : two).deliver(A, { type: 'E', data: n });
    await tick();
    expect(conn.frames.map((f) => f.data)).toEqual([1, 2, 3, 4, 5]);
  });

  it('a long-poll on the other node reads what the tab missed, after the id it saw', async () => {
    const { one, two } = twoNodes();
    const first = new FakeConnection('long-poll');
    await one.attach(A, first);
    await one.deliver(A, { type: 'E', data: 1 });
    await tick();
    one.detach(A, first);
    await two.deliver(A, { type: 'E', data: 2 });
    const next = new FakeConnection('long-poll');
    await two.attach(A, next, first.frames.at(-1)!.id);
    expect(next.frames.map((f) => f.data)).toEqual([2]);
  });

  it('a node forgetting an idle tab leaves it (and its binding) alone while the other node still holds it', async () => {
    const { clock, one, two, forgotten } = twoNodes();
    const old = new FakeConnection();
    await one.attach(A, old);
    one.detach(A, old);
    await two.attach(A, new FakeConnection());
    clock.advance(20_000);
    await two.refresh(); // presence lapses after 30 s unless refreshed (services: every 10 s)
    clock.advance(40_000);
    await two.refresh();
    one.sweep();
    await tick();
    expect(forgotten).toEqual([]);
    expect(await two.holds(A)).toBe(true);
  });

  it('a stopping node hands its tabs over: connections closed (1001), presence dropped, the binding left for the page to bind again elsewhere', async () => {
    const { one, two, forgotten } = twoNodes();
    const conn = new FakeConnection();
    await one.attach(A, conn);
    await one.deliver(A, { type: 'E', data: 1 });
    await tick();
    one.close();
    expect(conn.closed).toEqual({ code: 1001, reason: 'shutdown' });
    // An event sent while the page reconnects waits in the stream.
    await two.deliver(A, { type: 'E', data: 2 });
    await one.stop();
    expect(await one.holds(A)).toBe(false);
    // No node holds the tab now, yet nothing that hangs on it is removed (a binding removed here would race
    // the page's Register on another node: docs/deployment.md "Stopping a node").
    expect(forgotten).toEqual([]);
    const again = new FakeConnection();
    await two.attach(A, again, conn.frames.at(-1)!.id);
    expect(again.frames.map((f) => f.data)).toEqual([2]);
  });

  it('a Register served while the node stops gets what it missed and is closed at once', async () => {
    const { one } = twoNodes();
    await one.deliver(A, { type: 'E', data: 1 });
    one.close();
    const late = new FakeConnection();
    await one.attach(A, late);
    expect(late.frames.map((f) => f.data)).toEqual([1]);
    expect(late.closed?.code).toBe(1001);
    await one.stop();
    expect(await one.holds(A)).toBe(false);
  });

  it('a client resuming after an id whose events are gone is told (EventsLost) before what is left', async () => {
    const { clock, one, two } = twoNodes();
    const first = new FakeConnection();
    await one.attach(A, first);
    await one.deliver(A, { type: 'E', data: 1 });
    await tick();
    const seen = first.frames.at(-1)!.id;
    one.detach(A, first);
    await one.deliver(A, { type: 'E', data: 2 });
    clock.advance(50_000);
    await one.deliver(A, { type: 'E', data: 3 });
    clock.advance(20_000); // event 2 is past the 60 s age bound now
    const back = new FakeConnection();
    await two.attach(A, back, seen);
    expect(back.frames.map((f) => f.type)).toEqual(['EventsLost', 'E']);
    expect(back.frames[1]!.data).toBe(3);
    expect(back.frames[0]!.data).toMatchObject({ after: seen });
  });
});

describe('MemoryBus', () => {
  it('a throwing subscriber neither crashes the process nor keeps other subscribers from their message', async () => {
    const errors: unknown[] = [];
    const bus = new MemoryBus({ error: (o: unknown) => errors.push(o) } as never);
    const got: string[] = [];
    bus.subscribe(() => {
      throw new Error('subscriber bug');
    });
    bus.subscribe((m) => got.push(m.kind));
    await bus.publish('node-1', { kind: 'xmpp-sent', requestId: 'r-1', to: 'node-1', outcome: 'sent' });
    await tick();
    expect(got).toEqual(['xmpp-sent']);
    expect(errors).toHaveLength(1);
  });
});

describe('MemoryBroker announcements', () => {
  it('a throwing listener neither crashes the process nor keeps other listeners (the hubs) from the event', async () => {
    const errors: unknown[] = [];
    const broker = new MemoryBroker({ limit: 100, maxAgeMs: 60_000, presenceTtlMs: 30_000, idleStreamMs: 60_000 }, { error: (o: unknown) => errors.push(o) });
    const got: number[] = [];
    broker.subscribe(() => {
      throw new Error('listener bug');
    });
    broker.subscribe((a) => got.push(a.frame.id));
    const { frame } = await broker.publish(A, { type: 'E', data: null }, 1_000);
    await tick();
    expect(got).toEqual([frame!.id]);
    expect(errors).toHaveLength(1);
  });
});
