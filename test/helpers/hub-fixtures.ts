import pino from 'pino';
import type { DeliveryFallback } from '../../src/broker/broker.js';
import { ManualClock } from '../../src/clock.js';
import type { TabAddress } from '../../src/protocol/address.js';
import type { TabConnection } from '../../src/hub/connection.js';
import type { Disconnect } from '../../src/hub/disconnect.js';
import { Hub, type DropReason } from '../../src/hub/hub.js';
import { MemoryBroker } from '../../src/broker/memory-broker.js';
import type { EventFrame } from '../../src/protocol/frames.js';

/** A connection that keeps what it is sent and how it was closed; `open` may be set by a test. */
export class FakeConnection implements TabConnection {
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
  close(disconnect: Disconnect): void {
    this.closed = { code: disconnect.closeCode, reason: disconnect.reason };
    this.open = false;
  }
}

/** One macrotask: lets the broker's announcements and per-tab writes settle. */
export const tick = () => new Promise((r) => setTimeout(r, 0));

/** Two sessions holding the same tab id: an event must only ever reach its own. */
export const A: TabAddress = { tabId: 'tab-1', session: 'session-a' };
export const B: TabAddress = { tabId: 'tab-1', session: 'session-b' };

/** A distinct agent-message fallback, told apart by `n` in its content. */
export const fallback = (n: number): DeliveryFallback => ({ kind: 'agent-message', accountId: 'acct', from: 'x@y', to: 'a@b', type: 'chat', content: `<m n="${n}"/>`, createdAt: 0 });

/** A one-node hub on a memory broker, recording what it forgets, releases, falls back and drops. */
export function makeHub(o: { clock?: ManualClock; maxTabsPerSession?: number; outboxLimit?: number; greeting?: { type: string; data: unknown } } = {}) {
  const clock = o.clock ?? new ManualClock();
  const forgotten: TabAddress[] = [];
  const released: TabAddress[] = [];
  const fellBack: DeliveryFallback[] = [];
  const dropped: Partial<Record<DropReason, number>> = {};
  const broker = new MemoryBroker({ limit: o.outboxLimit ?? 100, maxAgeMs: 60_000, presenceTtlMs: 1e12, idleStreamMs: 60_000 });
  const hub = new Hub(
    {
      broker,
      clock,
      log: pino({ level: 'silent' }),
      onFallback: (f) => fellBack.push(f),
      ...(o.greeting ? { greeting: () => o.greeting! } : {}),
      onForget: (a) => forgotten.push(a),
      onRelease: (a) => released.push(a),
      counters: { delivered: () => undefined, fellBack: () => undefined, dropped: (reason, n) => (dropped[reason] = (dropped[reason] ?? 0) + n) },
    },
    { node: 'node-1', presenceTtlMs: 1e12, outboxMaxAgeMs: 60_000, tabIdleMs: 60_000, longPollGapMs: 10_000, maxTabsPerSession: o.maxTabsPerSession ?? 100 },
  );
  return { hub, clock, forgotten, released, fellBack, dropped };
}
