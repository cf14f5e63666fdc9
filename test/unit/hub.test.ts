import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { DeliveryFallback } from '../../src/bus/bus.js';
import { MemoryBus } from '../../src/bus/memory-bus.js';
import { ManualClock } from '../../src/clock.js';
import type { TabAddress } from '../../src/hub/address.js';
import type { TabConnection } from '../../src/hub/connection.js';
import { Hub, MAX_CONNECTIONS_PER_TAB, type DropReason } from '../../src/hub/hub.js';
import { MemoryBroker } from '../../src/broker/memory-broker.js';
import { until } from '../helpers/until.js';
import type { EventFrame } from '../../src/protocol/frames.js';

class FakeConnection implements TabConnection {
  client?: object;
  frames: EventFrame[] = [];
  closed: { code: number; reason: string } | undefined;
  open = true;
  constructor(readonly transport: 'websocket' | 'long-poll' = 'websocket') {}
  send(frames: readonly EventFrame[]): boolean {
    if (!this.open) return false;
    this.frames.push(...frames);
    return true;
  }
  close(code: number, reason: string): void {
    this.closed = { code, reason };
    this.open = false;
  }
}

const tick = () => new Promise((r) => setTimeout(r, 0));

const A: TabAddress = { tabId: 'tab-1', session: 'session-a' };
const B: TabAddress = { tabId: 'tab-1', session: 'session-b' };

const fallback = (n: number): DeliveryFallback => ({ kind: 'agent-message', accountId: 'acct', from: 'x@y', to: 'a@b', type: 'chat', content: `<m n="${n}"/>`, createdAt: 0 });

function makeHub(o: { clock?: ManualClock; maxTabsPerSession?: number; outboxLimit?: number; greeting?: { type: string; data: unknown } } = {}) {
  const clock = o.clock ?? new ManualClock();
  const forgotten: TabAddress[] = [];
  const released: TabAddress[] = [];
  const fellBack: DeliveryFallback[] = [];
  const dropped: Partial<Record<DropReason, number>> = {};
  const broker = new MemoryBroker({ limit: o.outboxLimit ?? 100, maxAgeMs: 60_000, presenceTtlMs: 1e12, idleStreamMs: 60_000 });
  const hub = new Hub({
    bus: new MemoryBus(),
    broker,
    node: 'node-1',
    presenceTtlMs: 1e12,
    outboxMaxAgeMs: 60_000,
    clock,
    log: pino({ level: 'silent' }),
    tabIdleMs: 60_000,
    longPollGapMs: 10_000,
    maxTabsPerSession: o.maxTabsPerSession ?? 100,
    onFallback: (f) => fellBack.push(f),
    ...(o.greeting ? { greeting: () => o.greeting! } : {}),
    onForget: (a) => forgotten.push(a),
    onRelease: (a) => released.push(a),
    counters: { delivered: () => undefined, fellBack: () => undefined, dropped: (reason, n) => (dropped[reason] = (dropped[reason] ?? 0) + n) },
  });
  return { hub, clock, forgotten, released, fellBack, dropped };
}

describe('Hub', () => {
  it('delivers through the bus to the attached connection, in order, with ids', async () => {
    const { hub } = makeHub();
    const conn = new FakeConnection();
    await hub.attach(A, conn);
    await hub.deliver(A, { type: 'One', data: 1 });
    await hub.deliver(A, { type: 'Two', data: 2 });
    await tick();
    expect(conn.frames.map(({ type, data }) => ({ type, data }))).toEqual([
      { type: 'One', data: 1 },
      { type: 'Two', data: 2 },
    ]);
    expect(conn.frames[1]!.id).toBe(conn.frames[0]!.id + 1);
  });

  it('a tab forgotten and registered again numbers its events above every earlier id', async () => {
    const { hub, clock } = makeHub();
    const first = new FakeConnection();
    await hub.attach(A, first);
    for (let i = 0; i < 5; i++) await hub.deliver(A, { type: 'E', data: i });
    await tick();
    hub.detach(A, first);
    clock.advance(60_000);
    hub.sweep();
    expect(await hub.holds(A)).toBe(false);
    const second = new FakeConnection();
    await hub.attach(A, second);
    await hub.deliver(A, { type: 'E', data: 'after' });
    await tick();
    expect(second.frames[0]!.id).toBeGreaterThan(first.frames.at(-1)!.id);
  });

  it('buffers while detached and flushes once on the next attach', async () => {
    const { hub } = makeHub();
    const first = new FakeConnection();
    await hub.attach(A, first);
    hub.detach(A, first);
    await hub.deliver(A, { type: 'Missed', data: null });
    await tick();
    const second = new FakeConnection();
    await hub.attach(A, second);
    expect(second.frames.map((f) => f.type)).toEqual(['Missed']);
    const third = new FakeConnection();
    await hub.attach(A, third);
    expect(third.frames).toEqual([]);
    expect(second.closed).toBeUndefined();
  });

  it('fans out to every live connection of a tab in its session (a duplicated browser tab), kicking nobody out', async () => {
    const { hub } = makeHub();
    const first = new FakeConnection();
    const second = new FakeConnection();
    await hub.attach(A, first);
    await hub.attach(A, second);
    await hub.deliver(A, { type: 'Both', data: 1 });
    await tick();
    expect([first.frames.map((f) => f.type), second.frames.map((f) => f.type)]).toEqual([['Both'], ['Both']]);
    expect([first.closed, second.closed]).toEqual([undefined, undefined]);
  });

  it('two pages polling one tab each get an event that arrived while only one was polling (per-client cursor)', async () => {
    const { hub } = makeHub();
    const pageA = {};
    const pageB = {};
    // A poll is answered once: after its first frames it can take no more (as LongPollConnection).
    const poll = (client: object) => {
      const c = Object.assign(new FakeConnection('long-poll'), { client });
      const send = c.send.bind(c);
      c.send = (frames) => {
        const ok = send(frames);
        c.open = false;
        return ok;
      };
      return c;
    };
    const a1 = poll(pageA);
    await hub.attach(A, a1);
    const b1 = poll(pageB);
    await hub.attach(A, b1);
    await hub.deliver(A, { type: 'First', data: 1 });
    await tick();
    expect([a1.frames.length, b1.frames.length]).toEqual([1, 1]);
    // A polls again at once; B is between polls when the next event comes.
    const a2 = poll(pageA);
    await hub.attach(A, a2);
    await hub.deliver(A, { type: 'Second', data: 2 });
    await tick();
    expect(a2.frames.map((f) => f.data)).toEqual([2]);
    const b2 = poll(pageB);
    await hub.attach(A, b2);
    expect(b2.frames.map((f) => f.data)).toEqual([2]);
    // And A's next poll does not get it again.
    const a3 = poll(pageA);
    await hub.attach(A, a3);
    expect(a3.frames).toEqual([]);
  });

  it('beyond MAX_CONNECTIONS_PER_TAB live connections, the oldest is closed as replaced', async () => {
    const { hub } = makeHub();
    const connections = Array.from({ length: MAX_CONNECTIONS_PER_TAB + 1 }, () => new FakeConnection());
    for (const c of connections) await hub.attach(A, c);
    expect(connections.map((c) => c.closed?.code)).toEqual([4409, ...Array<undefined>(MAX_CONNECTIONS_PER_TAB).fill(undefined)]);
  });

  it('greets each WebSocket Register and the first connection of a tab new here, with the instance event', async () => {
    const { hub } = makeHub({ greeting: { type: 'CheckServerInstance', data: 'instance-1' } });
    const ws = new FakeConnection();
    expect(await hub.attach(A, ws)).toBe('created');
    expect(ws.frames.map((f) => [f.type, f.data])).toEqual([['CheckServerInstance', 'instance-1']]);
    const poll = new FakeConnection('long-poll');
    expect(await hub.attach(A, poll)).toBe('attached');
    expect(poll.frames).toEqual([]); // a long-poll of a known tab: no greeting (it would answer every poll)
    const firstPoll = new FakeConnection('long-poll');
    expect(await hub.attach(B, firstPoll)).toBe('created');
    expect(firstPoll.frames.map((f) => f.type)).toEqual(['CheckServerInstance']);
  });

  it('forgets a tab with no connection after the idle time, not before', async () => {
    const { hub, clock, forgotten } = makeHub();
    const conn = new FakeConnection();
    await hub.attach(A, conn);
    hub.detach(A, conn);
    clock.advance(59_000);
    hub.sweep();
    expect(await hub.holds(A)).toBe(true);
    clock.advance(1_000);
    hub.sweep();
    expect(await hub.holds(A)).toBe(false);
    expect(forgotten).toEqual([A]);
  });

  it('keeps a connected tab however long it is quiet', async () => {
    const { hub, clock } = makeHub();
    await hub.attach(A, new FakeConnection());
    clock.advance(10 * 60_000);
    hub.sweep();
    expect(await hub.holds(A)).toBe(true);
  });
});

describe('Hub: results belong to the session that asked', () => {
  it('an event for session A never reaches session B holding the same tab id after A released it', async () => {
    const { hub, released } = makeHub();
    const a = new FakeConnection();
    await hub.attach(A, a);
    await hub.release(A);
    expect(released).toEqual([A]);
    const b = new FakeConnection();
    await hub.attach(B, b);
    await hub.deliver(A, { type: 'SignatureReceived', data: 'secret' });
    await tick();
    expect(b.frames).toEqual([]);
    expect(a.frames).toEqual([]);
    // A comes back (a reloading page registers its tab again) and gets what waited for it.
    const again = new FakeConnection();
    await hub.attach(A, again);
    expect(again.frames.map((f) => f.data)).toEqual(['secret']);
  });

  it('an event for a session whose tab was forgotten waits for that session only, within the idle bound', async () => {
    const { hub, clock } = makeHub();
    const a = new FakeConnection();
    await hub.attach(A, a);
    hub.detach(A, a);
    clock.advance(60_000);
    hub.sweep();
    await hub.deliver(A, { type: 'SignatureReceived', data: 'late' });
    await tick();
    const b = new FakeConnection();
    await hub.attach(B, b);
    expect(b.frames).toEqual([]);
    const back = new FakeConnection();
    await hub.attach(A, back);
    expect(back.frames.map((f) => f.data)).toEqual(['late']);
  });

  it('a closed connection is not attached (the client left during its Register)', async () => {
    const { hub } = makeHub();
    const gone = new FakeConnection();
    gone.open = false;
    expect(await hub.attach(A, gone)).toBe('created');
    expect(await hub.isConnected(A)).toBe(false);
    expect(hub.snapshot().connected).toBe(0);
  });

  it('refuses a session its tab beyond the limit, and frees the slot when a tab is forgotten', async () => {
    const { hub, clock } = makeHub({ maxTabsPerSession: 2 });
    const first = new FakeConnection();
    await hub.attach({ tabId: 't1', session: 's' }, first);
    await hub.attach({ tabId: 't2', session: 's' }, new FakeConnection());
    expect(await hub.attach({ tabId: 't3', session: 's' }, new FakeConnection())).toBe('too_many_tabs');
    expect(await hub.attach({ tabId: 't3', session: 'other' }, new FakeConnection())).toBe('created');
    hub.detach({ tabId: 't1', session: 's' }, first);
    clock.advance(60_000);
    hub.sweep();
    expect(await hub.attach({ tabId: 't3', session: 's' }, new FakeConnection())).toBe('created');
  });
});

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

describe('Hub: two nodes on one broker (a cluster)', () => {
  function twoNodes() {
    const clock = new ManualClock();
    const broker = new MemoryBroker({ limit: 100, maxAgeMs: 60_000, presenceTtlMs: 30_000, idleStreamMs: 60_000 });
    const bus = new MemoryBus();
    const forgotten: TabAddress[] = [];
    const node = (name: string) =>
      new Hub({ bus, broker, node: name, presenceTtlMs: 30_000, outboxMaxAgeMs: 60_000, clock, log: pino({ level: 'silent' }), tabIdleMs: 60_000, longPollGapMs: 10_000, maxTabsPerSession: 100, onFallback: () => undefined, onForget: (a) => forgotten.push(a) });
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

describe('Hub: a broker that cannot be reached', () => {
  it('holds refused events and writes them, in order and before newer ones, once the broker is back', async () => {
    const clock = new ManualClock();
    const memory = new MemoryBroker({ limit: 100, maxAgeMs: 60_000, presenceTtlMs: 1e12, idleStreamMs: 60_000 });
    let down = false;
    const broker = Object.assign(Object.create(memory) as MemoryBroker, {
      publish: (...args: Parameters<MemoryBroker['publish']>) => (down ? Promise.reject(new Error('connection refused')) : memory.publish(...args)),
    });
    const dropped: Partial<Record<DropReason, number>> = {};
    const hub = new Hub({ bus: new MemoryBus(), broker, node: 'n', presenceTtlMs: 1e12, outboxMaxAgeMs: 60_000, clock, log: pino({ level: 'silent' }), tabIdleMs: 60_000, longPollGapMs: 10_000, maxTabsPerSession: 100, onFallback: () => undefined, counters: { delivered: () => undefined, fellBack: () => undefined, dropped: (reason, n) => (dropped[reason] = (dropped[reason] ?? 0) + n) } });
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

describe('MemoryBus', () => {
  it('a throwing subscriber neither crashes the process nor keeps other subscribers from their message', async () => {
    const errors: unknown[] = [];
    const bus = new MemoryBus({ error: (o: unknown) => errors.push(o) } as never);
    const got: string[] = [];
    bus.subscribe(() => {
      throw new Error('subscriber bug');
    });
    bus.subscribe((m) => got.push(m.kind));
    await bus.publish({ kind: 'event', to: A, frame: { type: 'E', data: null, id: 1 } });
    await tick();
    expect(got).toEqual(['event']);
    expect(errors).toHaveLength(1);
  });
});
