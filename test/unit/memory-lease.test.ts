import { describe, expect, it } from 'vitest';
import { MemoryLeaseTable } from '../../src/lease/memory-lease.js';

/** The memory lease's clock is moved by hand: a stalled event loop is a renewal that comes after the TTL. */
describe('MemoryLease: a renewal after the TTL', () => {
  it('keeps the hold when nobody took or released the lease meanwhile (a lone node whose event loop stalled)', async () => {
    let now = 0;
    const table = new MemoryLeaseTable(() => now);
    const a = table.lease('xmpp', 'node-a', 6_000);
    const token = (await a.acquire())!;
    now = 10_000;
    expect(await a.current()).toBeUndefined();
    expect(await a.renew(token)).toBe(true);
    expect(await a.current()).toEqual({ holder: 'node-a', token });
    now = 15_000;
    expect(await a.current()).toEqual({ holder: 'node-a', token });
  });

  it('refuses it when another holder took the lease, or the holder released it, after it ran out', async () => {
    let now = 0;
    const table = new MemoryLeaseTable(() => now);
    const a = table.lease('xmpp', 'node-a', 6_000);
    const b = table.lease('xmpp', 'node-b', 6_000);
    const first = (await a.acquire())!;
    now = 10_000;
    const second = (await b.acquire())!;
    expect(second).toBeGreaterThan(first);
    expect(await a.renew(first)).toBe(false);
    expect(await a.current()).toEqual({ holder: 'node-b', token: second });

    now = 20_000;
    expect(await b.current()).toBeUndefined();
    expect(await b.release(second)).toBe(false);
    const third = (await a.acquire())!;
    expect(await a.release(third)).toBe(true);
    now = 30_000;
    expect(await a.renew(third)).toBe(false);
    expect(await a.current()).toBeUndefined();
  });
});
