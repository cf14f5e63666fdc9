import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { DeliveryFallback } from '../../src/bus/bus.js';
import { MemoryBus } from '../../src/bus/memory-bus.js';
import { ManualClock } from '../../src/clock.js';
import type { TabAddress } from '../../src/hub/address.js';
import type { TabConnection } from '../../src/hub/connection.js';
import { Hub, MAX_CONNECTIONS_PER_TAB, type DropReason } from '../../src/hub/hub.js';
import { Outbox } from '../../src/hub/outbox.js';
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
  const hub = new Hub({
    bus: new MemoryBus(),
    clock,
    log: pino({ level: 'silent' }),
    outboxLimit: o.outboxLimit ?? 100,
    outboxMaxAgeMs: 60_000,
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

describe('Outbox', () => {
  it('numbers events in order and keeps only the newest `limit`, handing back what it pushed out unsent', () => {
    const outbox = new Outbox(100, 60_000);
    const pushedOut = [];
    for (let i = 1; i <= 101; i++) pushedOut.push(...outbox.push({ type: 'E', data: i }, 0));
    const pending = outbox.pending();
    expect(pending).toHaveLength(100);
    expect(pending[0]).toEqual({ type: 'E', data: 2, id: 2 });
    expect(pending.at(-1)!.id).toBe(101);
    expect(pushedOut.map((u) => u.frame.data)).toEqual([1]);
  });

  it('overflow of events already sent is not reported as unsent', () => {
    const outbox = new Outbox(2, 60_000);
    outbox.push({ type: 'A', data: null }, 0);
    outbox.markSent(outbox.pending());
    outbox.push({ type: 'B', data: null }, 0);
    expect(outbox.push({ type: 'C', data: null }, 0)).toEqual([]);
  });

  it('resends after a given id, or only unsent frames without one', () => {
    const outbox = new Outbox(10, 60_000);
    outbox.push({ type: 'A', data: null }, 0);
    outbox.markSent(outbox.pending());
    outbox.push({ type: 'B', data: null }, 0);
    expect(outbox.pending().map((f) => f.type)).toEqual(['B']);
    expect(outbox.pending(0).map((f) => f.type)).toEqual(['A', 'B']);
    expect(outbox.pending(1).map((f) => f.type)).toEqual(['B']);
  });

  it('expires entries older than the age bound', () => {
    const outbox = new Outbox(10, 1_000);
    outbox.push({ type: 'old', data: null }, 0);
    outbox.push({ type: 'new', data: null }, 900);
    expect(outbox.expire(1_500).map((u) => u.frame.type)).toEqual(['old']);
    expect(outbox.pending().map((f) => f.type)).toEqual(['new']);
  });
});

describe('Hub', () => {
  it('delivers through the bus to the attached connection, in order, with ids', async () => {
    const { hub } = makeHub();
    const conn = new FakeConnection();
    hub.attach(A, conn);
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
    hub.attach(A, first);
    for (let i = 0; i < 5; i++) await hub.deliver(A, { type: 'E', data: i });
    await tick();
    hub.detach(A, first);
    clock.advance(60_000);
    hub.sweep();
    expect(hub.holds(A)).toBe(false);
    const second = new FakeConnection();
    hub.attach(A, second);
    await hub.deliver(A, { type: 'E', data: 'after' });
    await tick();
    expect(second.frames[0]!.id).toBeGreaterThan(first.frames.at(-1)!.id);
  });

  it('buffers while detached and flushes once on the next attach', async () => {
    const { hub } = makeHub();
    const first = new FakeConnection();
    hub.attach(A, first);
    hub.detach(A, first);
    await hub.deliver(A, { type: 'Missed', data: null });
    await tick();
    const second = new FakeConnection();
    hub.attach(A, second);
    expect(second.frames.map((f) => f.type)).toEqual(['Missed']);
    const third = new FakeConnection();
    hub.attach(A, third);
    expect(third.frames).toEqual([]);
    expect(second.closed).toBeUndefined();
  });

  it('fans out to every live connection of a tab in its session (a duplicated browser tab), kicking nobody out', async () => {
    const { hub } = makeHub();
    const first = new FakeConnection();
    const second = new FakeConnection();
    hub.attach(A, first);
    hub.attach(A, second);
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
    hub.attach(A, a1);
    const b1 = poll(pageB);
    hub.attach(A, b1);
    await hub.deliver(A, { type: 'First', data: 1 });
    await tick();
    expect([a1.frames.length, b1.frames.length]).toEqual([1, 1]);
    // A polls again at once; B is between polls when the next event comes.
    const a2 = poll(pageA);
    hub.attach(A, a2);
    await hub.deliver(A, { type: 'Second', data: 2 });
    await tick();
    expect(a2.frames.map((f) => f.data)).toEqual([2]);
    const b2 = poll(pageB);
    hub.attach(A, b2);
    expect(b2.frames.map((f) => f.data)).toEqual([2]);
    // And A's next poll does not get it again.
    const a3 = poll(pageA);
    hub.attach(A, a3);
    expect(a3.frames).toEqual([]);
  });

  it('beyond MAX_CONNECTIONS_PER_TAB live connections, the oldest is closed as replaced', () => {
    const { hub } = makeHub();
    const connections = Array.from({ length: MAX_CONNECTIONS_PER_TAB + 1 }, () => new FakeConnection());
    for (const c of connections) hub.attach(A, c);
    expect(connections.map((c) => c.closed?.code)).toEqual([4409, ...Array<undefined>(MAX_CONNECTIONS_PER_TAB).fill(undefined)]);
  });

  it('greets each WebSocket Register and the first connection of a tab new here, with the instance event', async () => {
    const { hub } = makeHub({ greeting: { type: 'CheckServerInstance', data: 'instance-1' } });
    const ws = new FakeConnection();
    expect(hub.attach(A, ws)).toBe('created');
    expect(ws.frames.map((f) => [f.type, f.data])).toEqual([['CheckServerInstance', 'instance-1']]);
    const poll = new FakeConnection('long-poll');
    expect(hub.attach(A, poll)).toBe('attached');
    expect(poll.frames).toEqual([]); // a long-poll of a known tab: no greeting (it would answer every poll)
    const firstPoll = new FakeConnection('long-poll');
    expect(hub.attach(B, firstPoll)).toBe('created');
    expect(firstPoll.frames.map((f) => f.type)).toEqual(['CheckServerInstance']);
  });

  it('forgets a tab with no connection after the idle time, not before', () => {
    const { hub, clock, forgotten } = makeHub();
    const conn = new FakeConnection();
    hub.attach(A, conn);
    hub.detach(A, conn);
    clock.advance(59_000);
    hub.sweep();
    expect(hub.holds(A)).toBe(true);
    clock.advance(1_000);
    hub.sweep();
    expect(hub.holds(A)).toBe(false);
    expect(forgotten).toEqual([A]);
  });

  it('keeps a connected tab however long it is quiet', () => {
    const { hub, clock } = makeHub();
    hub.attach(A, new FakeConnection());
    clock.advance(10 * 60_000);
    hub.sweep();
    expect(hub.holds(A)).toBe(true);
  });
});

describe('Hub: results belong to the session that asked', () => {
  it('an event for session A never reaches session B holding the same tab id after A released it', async () => {
    const { hub, released } = makeHub();
    const a = new FakeConnection();
    hub.attach(A, a);
    hub.release(A);
    expect(released).toEqual([A]);
    const b = new FakeConnection();
    hub.attach(B, b);
    await hub.deliver(A, { type: 'SignatureReceived', data: 'secret' });
    await tick();
    expect(b.frames).toEqual([]);
    expect(a.frames).toEqual([]);
    // A comes back (a reloading page registers its tab again) and gets what waited for it.
    const again = new FakeConnection();
    hub.attach(A, again);
    expect(again.frames.map((f) => f.data)).toEqual(['secret']);
  });

  it('an event for a session whose tab was forgotten waits for that session only, within the idle bound', async () => {
    const { hub, clock } = makeHub();
    const a = new FakeConnection();
    hub.attach(A, a);
    hub.detach(A, a);
    clock.advance(60_000);
    hub.sweep();
    await hub.deliver(A, { type: 'SignatureReceived', data: 'late' });
    await tick();
    const b = new FakeConnection();
    hub.attach(B, b);
    expect(b.frames).toEqual([]);
    const back = new FakeConnection();
    hub.attach(A, back);
    expect(back.frames.map((f) => f.data)).toEqual(['late']);
  });

  it('a closed connection is not attached (the client left during its Register)', () => {
    const { hub } = makeHub();
    const gone = new FakeConnection();
    gone.open = false;
    expect(hub.attach(A, gone)).toBe('created');
    expect(hub.isConnected(A)).toBe(false);
    expect(hub.snapshot().connected).toBe(0);
  });

  it('refuses a session its tab beyond the limit, and frees the slot when a tab is forgotten', () => {
    const { hub, clock } = makeHub({ maxTabsPerSession: 2 });
    const first = new FakeConnection();
    hub.attach({ tabId: 't1', session: 's' }, first);
    hub.attach({ tabId: 't2', session: 's' }, new FakeConnection());
    expect(hub.attach({ tabId: 't3', session: 's' }, new FakeConnection())).toBe('too_many_tabs');
    expect(hub.attach({ tabId: 't3', session: 'other' }, new FakeConnection())).toBe('created');
    hub.detach({ tabId: 't1', session: 's' }, first);
    clock.advance(60_000);
    hub.sweep();
    expect(hub.attach({ tabId: 't3', session: 's' }, new FakeConnection())).toBe('created');
  });
});

describe('Hub: events with a fallback are never lost', () => {
  it('goes straight to the fallback when the tab has no live connection', async () => {
    const { hub, fellBack } = makeHub();
    const conn = new FakeConnection();
    hub.attach(A, conn);
    hub.detach(A, conn);
    await hub.deliver(A, { type: 'Msg', data: 1 }, fallback(1));
    await tick();
    expect(fellBack.map((f) => f.content)).toEqual(['<m n="1"/>']);
  });

  it('a long-poll tab between two polls still counts as connected, until the gap passes', () => {
    const { hub, clock } = makeHub();
    const poll = new FakeConnection('long-poll');
    hub.attach(A, poll);
    hub.detach(A, poll);
    expect(hub.isConnected(A)).toBe(true);
    clock.advance(10_000);
    expect(hub.isConnected(A)).toBe(false);
  });

  it('a long-poll burst above the buffer size stores what overflows instead of dropping it', async () => {
    const { hub, fellBack, dropped } = makeHub({ outboxLimit: 3 });
    const poll = new FakeConnection('long-poll');
    hub.attach(A, poll);
    hub.detach(A, poll);
    for (let n = 1; n <= 5; n++) await hub.deliver(A, { type: 'Msg', data: n }, fallback(n));
    await tick();
    expect(fellBack.map((f) => f.content)).toEqual(['<m n="1"/>', '<m n="2"/>']);
    expect(dropped.overflow).toBeUndefined();
    const next = new FakeConnection('long-poll');
    hub.attach(A, next);
    expect(next.frames.map((f) => f.data)).toEqual([3, 4, 5]);
  });

  it('buffered events with a fallback that age out unsent, or are forgotten with their tab, are stored', async () => {
    const { hub, clock, fellBack, dropped } = makeHub();
    const poll = new FakeConnection('long-poll');
    hub.attach(A, poll);
    hub.detach(A, poll);
    await hub.deliver(A, { type: 'Msg', data: 1 }, fallback(1));
    await hub.deliver(A, { type: 'Plain', data: 2 });
    await tick();
    clock.advance(60_001);
    hub.sweep();
    expect(fellBack.map((f) => f.content)).toEqual(['<m n="1"/>']);
    expect(dropped.expired).toBe(1);
  });

  it('events already written are not counted as dropped when they age out', async () => {
    const { hub, clock, dropped } = makeHub();
    hub.attach(A, new FakeConnection());
    await hub.deliver(A, { type: 'Plain', data: 1 });
    await tick();
    clock.advance(60_001);
    hub.sweep();
    expect(dropped).toEqual({});
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
    await bus.publish({ kind: 'deliver', to: A, event: { type: 'E', data: null } });
    await tick();
    expect(got).toEqual(['deliver']);
    expect(errors).toHaveLength(1);
  });
});
