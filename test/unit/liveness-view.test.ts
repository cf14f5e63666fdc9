import { describe, expect, it } from 'vitest';
import { LivenessView } from '../../src/broker/liveness-view.js';

/** A node's copy of the nodes' set on a Redis Cluster (docs/redis.md "Redis Cluster"): it errs towards alive. */
describe('LivenessView', () => {
  const TTL = 30_000;

  it('names the nodes whose time had passed when the copy was read, while the copy is fresh', () => {
    const view = new LivenessView(TTL);
    view.update(['a', 1_050, 'b', 1_000, 'c', 990], 1_000);
    expect(view.dead(1_000)).toEqual(['b', 'c']);
    // a's time passes after the read: its heartbeat since may have moved it on, which this copy cannot know.
    expect(view.dead(1_100)).toEqual(['b', 'c']);
  });

  it('names nobody before its first read, nor from a copy older than half the presence lifetime', () => {
    const view = new LivenessView(TTL);
    expect(view.dead(5_000)).toEqual([]);
    view.update(['a', 1_000, 'b', 100_000], 10_000);
    expect(view.dead(10_000 + TTL / 2)).toEqual(['a']);
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
