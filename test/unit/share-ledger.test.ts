import { describe, expect, it } from 'vitest';
import { ShareLedger, shareOf, type LedgerEntry } from '../../src/rate-limit/share-ledger.js';

/**
 * The QR limits' per-node ledger (src/rate-limit/share-ledger.ts) against the bound docs/redis.md "Limits"
 * states: N nodes admit at least `max` and at most `max + N × share − 1` hits of one key per window, in
 * whatever order hits and syncs come. The nodes here push to one shared counter, as the Redis script does.
 */
const WINDOW = 60_000;
const NOW = 1_000_000;

class Node {
  readonly ledger = new ShareLedger(100, 1000);
  /** Pushes taken but not answered yet (a sync in flight). */
  inflight: { entry: LedgerEntry; pushed: number }[] = [];
  admitted = 0;
}

/** A deterministic pseudo-random sequence (xorshift), so a failure can be replayed from its seed. */
function random(seed: number): () => number {
  let x = seed || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

function run(seed: number, nodes: number, max: number): { admitted: number; refusedAfterClose: boolean } {
  const next = random(seed);
  const cluster = Array.from({ length: nodes }, () => new Node());
  let total = 0;
  // Steps: a hit at a node, a node taking its pushes (sync starts), or a node's sync answered; far more
  // hits than the limit, syncs in any order and any lateness.
  for (let step = 0; step < 10 * max + 200; step++) {
    const node = cluster[Math.floor(next() * nodes)]!;
    const r = next();
    if (r < 0.8) {
      if (node.ledger.hit('session', NOW, WINDOW, max, true).admitted) node.admitted++;
    } else if (r < 0.9) {
      node.inflight.push(...node.ledger.take());
    } else {
      for (const { entry, pushed } of node.inflight.splice(0)) {
        total += pushed;
        node.ledger.settle(entry, pushed, total, WINDOW, NOW);
      }
    }
  }
  // Drain: every node syncs until none admits any more, then one more hit each must be refused.
  for (let round = 0, more = true; more && round < 10 * max; round++) {
    more = false;
    for (const node of cluster) {
      for (const { entry, pushed } of [...node.inflight.splice(0), ...node.ledger.take()]) {
        total += pushed;
        node.ledger.settle(entry, pushed, total, WINDOW, NOW);
      }
      while (node.ledger.hit('session', NOW, WINDOW, max, true).admitted) {
        node.admitted++;
        more = true;
      }
    }
  }
  const admitted = cluster.reduce((sum, n) => sum + n.admitted, 0);
  return { admitted, refusedAfterClose: cluster.every((n) => !n.ledger.hit('session', NOW, WINDOW, max, true).admitted) };
}

describe('share ledger: the cluster bound', () => {
  for (const [nodes, max] of [
    [3, 30],
    [3, 300],
    [5, 7],
    [10, 1],
  ] as const) {
    it(`${nodes} nodes, limit ${max}: between the limit and limit + N × share − 1 (${max + nodes * shareOf(max) - 1}) in 200 random orders`, () => {
      let most = 0;
      for (let seed = 1; seed <= 200; seed++) {
        const { admitted, refusedAfterClose } = run(seed, nodes, max);
        expect(admitted, `seed ${seed}`).toBeGreaterThanOrEqual(max);
        expect(admitted, `seed ${seed}`).toBeLessThanOrEqual(max + nodes * shareOf(max) - 1);
        expect(refusedAfterClose).toBe(true);
        most = Math.max(most, admitted);
      }
      // The overshoot is real (so the bound, not exactness, is what holds): some orders go past the limit.
      expect(most).toBeGreaterThan(max);
    });
  }

  it('a node holds at most one share unpushed: the next hit waits for a sync, and its Retry-After is the sync, not the window', () => {
    const ledger = new ShareLedger(100, 1000);
    for (let i = 0; i < shareOf(30); i++) expect(ledger.hit('k', NOW, WINDOW, 30, true).admitted).toBe(true);
    const refused = ledger.hit('k', NOW, WINDOW, 30, true);
    expect(refused).toMatchObject({ admitted: false, current: 31, ttl: 1000 });
    const [push] = ledger.take();
    ledger.settle(push!.entry, push!.pushed, 3, 50_000, NOW);
    expect(ledger.hit('k', NOW, WINDOW, 30, true)).toMatchObject({ admitted: true, current: 4, ttl: 50_000 });
  });

  it('while the cluster is unreachable the node counts alone against the whole limit; a failed push is pushed again', () => {
    const ledger = new ShareLedger(100, 1000);
    const answers = Array.from({ length: 8 }, () => ledger.hit('k', NOW, WINDOW, 6, false).admitted);
    expect(answers).toEqual([true, true, true, true, true, true, false, false]);
    const [push] = ledger.take();
    expect(push!.pushed).toBe(6);
    ledger.restore(push!.entry, push!.pushed);
    expect(ledger.take()[0]!.pushed).toBe(6);
  });

  it('a full window refuses until it ends (Retry-After: the window); then counts from zero', () => {
    const ledger = new ShareLedger(100, 1000);
    ledger.hit('k', NOW, WINDOW, 5, true);
    const [push] = ledger.take();
    ledger.settle(push!.entry, push!.pushed, 5, 20_000, NOW);
    expect(ledger.hit('k', NOW + 1000, WINDOW, 5, true)).toMatchObject({ admitted: false, ttl: 19_000 });
    expect(ledger.hit('k', NOW + 20_000, WINDOW, 5, true)).toMatchObject({ admitted: true, current: 1 });
  });

  it('pushes a key once half its share is waiting, not at every sync (a waiting page is pushed every few refreshes)', () => {
    const ledger = new ShareLedger(100, 1000);
    const half = Math.ceil(shareOf(300) / 2);
    for (let i = 1; i < half; i++) {
      expect(ledger.hit('page', NOW + i, WINDOW, 300, true).admitted).toBe(true);
      expect(ledger.take()).toEqual([]);
    }
    ledger.hit('page', NOW + half, WINDOW, 300, true);
    expect(ledger.take().map((p) => p.pushed)).toEqual([half]);
    expect(ledger.take()).toEqual([]);
  });

  it('keeps at most its capacity of keys, forgetting the least recently hit', () => {
    const ledger = new ShareLedger(3, 1000);
    for (const key of ['a', 'b', 'c', 'a', 'd']) ledger.hit(key, NOW, WINDOW, 5, false);
    expect(ledger.size).toBe(3);
    // 'b' was forgotten (least recently hit), 'a' kept its count.
    expect(ledger.hit('a', NOW, WINDOW, 5, false).current).toBe(3);
    expect(ledger.hit('b', NOW, WINDOW, 5, false).current).toBe(1);
  });
});
