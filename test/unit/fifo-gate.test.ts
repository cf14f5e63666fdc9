import { describe, expect, it } from 'vitest';
import { FifoGate } from '../../src/store/sql/fifo-gate.js';

describe('FifoGate: one holder, the rest in arrival order', () => {
  it('lets the first caller in at once and hands the gate to each waiter in the order they came, one at a time', async () => {
    const gate = new FifoGate();
    const order: number[] = [];
    let inside = 0;
    let most = 0;
    const n = 5_000; // past the queue's compaction point (1,024)
    await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        await gate.acquire();
        inside++;
        most = Math.max(most, inside);
        order.push(i);
        await Promise.resolve(); // holds the gate across a microtask, as a query does
        inside--;
        gate.release();
      }),
    );
    expect(order).toEqual(Array.from({ length: n }, (_, i) => i));
    expect(most).toBe(1);
    expect(gate.queued).toBe(0);
  });

  it('opens when released with nobody waiting, so the next caller gets in without waiting', async () => {
    const gate = new FifoGate();
    await gate.acquire();
    let second = false;
    const waiting = gate.acquire().then(() => {
      second = true;
    });
    await Promise.resolve();
    expect(second).toBe(false);
    expect(gate.queued).toBe(1);
    gate.release();
    await waiting;
    expect(second).toBe(true);
    gate.release();
    let third = false;
    await gate.acquire().then(() => {
      third = true;
    });
    expect(third).toBe(true);
  });
});
