import { describe, expect, it } from 'vitest';
import { LivenessView } from '../../src/broker/liveness-view.js';

/** A node's copy of the nodes' set on a Redis Cluster (docs/redis.md "Redis Cluster"): it errs towards alive. */
describe('LivenessView', () => {
  const TTL = 30_000;

  it('names the nodes whose time in the copy has passed, while the copy is fresh', () => {
    const view = new LivenessView(TTL);
    view.update(['a', 1_050, 'b', 1_020, 'c', 990], 1_000);
    expect(view.dead(1_000)).toEqual(['c']);
    expect(view.dead(1_020)).toEqual(['b', 'c']);
  });

  it('names nobody before its first read, nor from a copy older than half the presence lifetime', () => {
    const view = new LivenessView(TTL);
    expect(view.dead(5_000)).toEqual([]);
    view.update(['a', 1_000, 'b', 100_000], 10_000);
    expect(view.dead(10_000 + TTL / 2)).toEqual(['a']);
    // A live node's heartbeat since then is not in this copy: it might be taken for dead.
    expect(view.dead(10_001 + TTL / 2)).toEqual([]);
  });

  it('a node the copy does not know is not named (it may be newer than the copy)', () => {
    const view = new LivenessView(TTL);
    view.update(['a', 500], 1_000);
    expect(view.dead(1_000)).toEqual(['a']);
    view.update([], 2_000);
    expect(view.dead(2_000)).toEqual([]);
  });
});
