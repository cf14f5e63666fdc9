import { describe, expect, it } from 'vitest';
import type { Broker } from '../../src/broker/broker.js';
import type { TabAddress } from '../../src/protocol/address.js';
import { PresenceKeeper, type HeldTab } from '../../src/hub/presence-keeper.js';

/** A broker that records what the keeper asks of it (the keeper's decisions, not the broker's, are under test here). */
function recordingBroker() {
  const held: string[][] = [];
  let generation = 'g1';
  let lost: TabAddress[] = [];
  const broker = {
    heartbeat: async () => generation,
    refresh: async (tabs: readonly HeldTab[]) => {
      held.push(tabs.map((t) => t.to.tabId));
      const out = lost;
      lost = [];
      return out;
    },
  } as unknown as Broker;
  return { broker, held, setGeneration: (g: string) => (generation = g), loseNext: (tabs: TabAddress[]) => (lost = tabs) };
}

const tab = (n: number): TabAddress => ({ tabId: `tab-${n}`, session: 's' });

function keeper(tabs: Map<string, TabAddress>, o: { now: () => number; broker: Broker; onLost?: (a: TabAddress) => void; onReheld?: () => void }) {
  return new PresenceKeeper(
    {
      broker: o.broker,
      now: o.now,
      held: function* () {
        for (const to of tabs.values()) yield { to, connectedUntil: 0 };
      },
      count: () => tabs.size,
      onLost: o.onLost ?? (() => undefined),
      ...(o.onReheld ? { onReheld: o.onReheld } : {}),
    },
    { node: 'n1', presenceTtlMs: 30_000, rollMs: 10_000, rollEveryMs: 1_000 },
  );
}

describe('presence keeper', () => {
  it('holds every tab on the first heartbeat, none on the next ones, all again after a late beat or a new broker generation', async () => {
    const tabs = new Map([1, 2, 3].map((n) => [`${n}`, tab(n)]));
    const b = recordingBroker();
    let now = 0;
    const k = keeper(tabs, { now: () => now, broker: b.broker });
    await k.beat();
    expect(b.held).toEqual([['tab-1', 'tab-2', 'tab-3']]);
    now = 10_000;
    await k.beat();
    now = 39_999;
    await k.beat();
    expect(b.held).toHaveLength(1);
    now = 70_000; // 30 s after the last beat: the broker may have let the node go
    await k.beat();
    expect(b.held).toHaveLength(2);
    now = 80_000;
    b.setGeneration('g2'); // the broker lost its state
    await k.beat();
    expect(b.held).toHaveLength(3);
    expect(b.held[2]).toEqual(['tab-1', 'tab-2', 'tab-3']);
  });

  it('after holding every tab again (the broker may have announced their events to nobody) it says so, once the holds are done; not after a timely beat nor a roll', async () => {
    const tabs = new Map([1, 2].map((n) => [`${n}`, tab(n)]));
    const b = recordingBroker();
    let now = 0;
    const reheld: number[] = [];
    const k = keeper(tabs, { now: () => now, broker: b.broker, onReheld: () => reheld.push(b.held.length) });
    await k.beat();
    expect(reheld).toEqual([1]); // after the first hold of all
    now = 10_000;
    await k.beat();
    await k.roll();
    expect(reheld).toEqual([1]);
    now = 20_000;
    b.setGeneration('g2');
    await k.beat();
    expect(reheld).toEqual([1, 3]);
  });

  it('rolls over every tab once per roll time, a share each call, and sees tabs added meanwhile', async () => {
    const tabs = new Map(Array.from({ length: 25 }, (_, n) => [`${n}`, tab(n)]));
    const b = recordingBroker();
    const k = keeper(tabs, { now: () => 0, broker: b.broker });
    for (let i = 0; i < 10; i++) await k.roll(); // rollMs / rollEveryMs calls
    const seen = b.held.flat();
    expect(new Set(seen).size).toBe(25);
    expect(b.held.every((slice) => slice.length === 3)).toBe(true); // ceil(25 / 10)
    tabs.set('new', tab(99));
    b.held.length = 0;
    for (let i = 0; i < 10; i++) await k.roll();
    expect(b.held.flat()).toContain('tab-99');
  });

  it('tells which tabs lost their stream', async () => {
    const tabs = new Map([['1', tab(1)]]);
    const b = recordingBroker();
    const lost: TabAddress[] = [];
    const k = keeper(tabs, { now: () => 0, broker: b.broker, onLost: (a) => lost.push(a) });
    b.loseNext([tab(1)]);
    await k.roll();
    expect(lost).toEqual([tab(1)]);
  });

  it('a roll still running (a stalled shard) does not hold the heartbeat back', async () => {
    const tabs = new Map([1, 2].map((n) => [`${n}`, tab(n)]));
    let beats = 0;
    let releaseRoll!: () => void;
    const broker = {
      heartbeat: async () => {
        beats++;
        return 'g1';
      },
      refresh: async () => [],
    } as unknown as Broker;
    const k = keeper(tabs, { now: () => 0, broker });
    await k.beat();
    (broker as unknown as { refresh: () => Promise<TabAddress[]> }).refresh = () => new Promise((resolve) => (releaseRoll = () => resolve([])));
    const roll = k.roll();
    await k.beat();
    await k.beat();
    expect(beats).toBe(3);
    releaseRoll();
    await roll;
  });

  it('a lapsed beat whose holds failed is lapsed again at the next beat: all held and read once they succeed', async () => {
    const tabs = new Map([1, 2].map((n) => [`${n}`, tab(n)]));
    let failing = true;
    const held: number[] = [];
    const broker = {
      heartbeat: async () => 'g1',
      refresh: async (all: readonly HeldTab[]) => {
        if (failing) throw new Error('Command timed out');
        held.push(all.length);
        return [];
      },
    } as unknown as Broker;
    let reheld = 0;
    let now = 0;
    const k = keeper(tabs, { now: () => now, broker, onReheld: () => reheld++ });
    await expect(k.beat()).rejects.toThrow('Command timed out');
    expect(reheld).toBe(0);
    failing = false;
    now = 10_000; // a timely beat: on its own it would hold nothing
    await k.beat();
    expect(held).toEqual([2]);
    expect(reheld).toBe(1);
  });
});
