import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { MemoryBus } from '../../src/bus/memory-bus.js';
import { ManualClock } from '../../src/clock.js';
import type { TabConnection } from '../../src/hub/connection.js';
import { Hub } from '../../src/hub/hub.js';
import { Outbox } from '../../src/hub/outbox.js';
import type { EventFrame } from '../../src/protocol/frames.js';

class FakeConnection implements TabConnection {
  frames: EventFrame[] = [];
  closed: { code: number; reason: string } | undefined;
  open = true;
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

function makeHub(clock = new ManualClock()) {
  const forgotten: string[] = [];
  const hub = new Hub({
    bus: new MemoryBus(),
    clock,
    log: pino({ level: 'silent' }),
    outboxLimit: 100,
    outboxMaxAgeMs: 60_000,
    tabIdleMs: 60_000,
    onForget: (id) => forgotten.push(id),
  });
  return { hub, clock, forgotten };
}

describe('Outbox', () => {
  it('numbers events in order and keeps only the newest `limit`, counting the overflow', () => {
    const outbox = new Outbox(100, 60_000);
    for (let i = 1; i <= 101; i++) outbox.push({ type: 'E', data: i }, 0);
    const pending = outbox.pending(0);
    expect(pending).toHaveLength(100);
    expect(pending[0]).toEqual({ type: 'E', data: 2, id: 2 });
    expect(pending.at(-1)!.id).toBe(101);
    expect(outbox.overflowed).toBe(1);
  });

  it('resends after a given id, or only unsent frames without one', () => {
    const outbox = new Outbox(10, 60_000);
    const a = outbox.push({ type: 'A', data: null }, 0);
    outbox.markSent([a]);
    outbox.push({ type: 'B', data: null }, 0);
    expect(outbox.pending(0).map((f) => f.type)).toEqual(['B']);
    expect(outbox.pending(0, 0).map((f) => f.type)).toEqual(['A', 'B']);
    expect(outbox.pending(0, 1).map((f) => f.type)).toEqual(['B']);
  });

  it('expires entries older than the age bound', () => {
    const outbox = new Outbox(10, 1_000);
    outbox.push({ type: 'old', data: null }, 0);
    outbox.push({ type: 'new', data: null }, 900);
    expect(outbox.expire(1_500)).toBe(1);
    expect(outbox.pending(1_500).map((f) => f.type)).toEqual(['new']);
  });
});

describe('Hub', () => {
  it('delivers through the bus to the attached connection, in order, with ids', async () => {
    const { hub } = makeHub();
    const conn = new FakeConnection();
    hub.attach('tab-1', conn);
    await hub.deliver('tab-1', { type: 'One', data: 1 });
    await hub.deliver('tab-1', { type: 'Two', data: 2 });
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
    hub.attach('tab-1', first);
    for (let i = 0; i < 5; i++) await hub.deliver('tab-1', { type: 'E', data: i });
    await tick();
    hub.forget('tab-1');
    clock.advance(1);
    const second = new FakeConnection();
    hub.attach('tab-1', second);
    await hub.deliver('tab-1', { type: 'E', data: 'after' });
    await tick();
    expect(second.frames[0]!.id).toBeGreaterThan(first.frames.at(-1)!.id);
  });

  it('buffers while detached and flushes once on the next attach', async () => {
    const { hub } = makeHub();
    const first = new FakeConnection();
    hub.attach('tab-1', first);
    hub.detach('tab-1', first);
    await hub.deliver('tab-1', { type: 'Missed', data: null });
    await tick();
    const second = new FakeConnection();
    hub.attach('tab-1', second);
    expect(second.frames.map((f) => f.type)).toEqual(['Missed']);
    const third = new FakeConnection();
    hub.attach('tab-1', third);
    expect(third.frames).toEqual([]);
    expect(second.closed).toEqual({ code: 4409, reason: 'replaced' });
  });

  it('drops events for unknown tabs and counts them', async () => {
    const { hub } = makeHub();
    await hub.deliver('nobody', { type: 'X', data: null });
    await tick();
    expect(hub.snapshot().droppedUnknownTab).toBe(1);
  });

  it('forgets a tab with no connection after the idle time, not before', () => {
    const { hub, clock, forgotten } = makeHub();
    const conn = new FakeConnection();
    hub.attach('tab-1', conn);
    hub.detach('tab-1', conn);
    clock.advance(59_000);
    hub.sweep();
    expect(hub.isLocal('tab-1')).toBe(true);
    clock.advance(1_000);
    hub.sweep();
    expect(hub.isLocal('tab-1')).toBe(false);
    expect(forgotten).toEqual(['tab-1']);
  });

  it('keeps a connected tab however long it is quiet', () => {
    const { hub, clock } = makeHub();
    hub.attach('tab-1', new FakeConnection());
    clock.advance(10 * 60_000);
    hub.sweep();
    expect(hub.isLocal('tab-1')).toBe(true);
  });
});
