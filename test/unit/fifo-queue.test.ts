import { describe, expect, it } from 'vitest';
import { FifoQueue } from '../../src/fifo-queue.js';

describe('FifoQueue', () => {
  it('gives items back in the order they came, across its cut-backs, with pushes and shifts interleaved', () => {
    const queue = new FifoQueue<number>();
    const out: number[] = [];
    let next = 0;
    // Grows to thousands, drains past the cut-back point (1,024 read) while new items keep arriving.
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 3_000; i++) queue.push(next++);
      for (let i = 0; i < 2_500; i++) out.push(queue.shift()!);
      expect(queue.length).toBe(next - out.length);
    }
    while (queue.length > 0) out.push(queue.shift()!);
    expect(out).toEqual(Array.from({ length: next }, (_, i) => i));
    expect(queue.shift()).toBeUndefined();
    queue.push(7);
    expect(queue.length).toBe(1);
    expect(queue.shift()).toBe(7);
  });
});
