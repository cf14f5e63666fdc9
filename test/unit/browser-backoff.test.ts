import { describe, expect, it } from 'vitest';
import { Backoff, DEFAULT_BACKOFF } from '../../src/browser/backoff.js';

describe('Backoff (full jitter)', () => {
  it('doubles the window from ~500 ms up to the 30 s cap', () => {
    const backoff = new Backoff({ random: () => 0.999999 });
    const delays = Array.from({ length: 10 }, () => backoff.next());
    expect(delays).toEqual([499, 999, 1999, 3999, 7999, 15999, 29999, 29999, 29999, 29999]);
  });

  it('stays within [0, cap] for any number of attempts and any random source, even a bad one', () => {
    for (const r of [0, 0.5, 0.999999, 1, 7, -3, Number.NaN]) {
      const backoff = new Backoff({ random: () => r });
      for (let i = 0; i < 100; i++) {
        const d = backoff.next();
        expect(d, `random ${r}, attempt ${i}`).toBeGreaterThanOrEqual(0);
        expect(d).toBeLessThanOrEqual(DEFAULT_BACKOFF.capMs);
        expect(Number.isInteger(d)).toBe(true);
      }
    }
  });

  it('jitters: delays at the cap spread over the whole window', () => {
    const backoff = new Backoff();
    for (let i = 0; i < 10; i++) backoff.next();
    const delays = Array.from({ length: 200 }, () => backoff.next());
    expect(new Set(delays).size).toBeGreaterThan(150);
    expect(Math.min(...delays)).toBeLessThan(DEFAULT_BACKOFF.capMs / 4);
    expect(Math.max(...delays)).toBeGreaterThan((DEFAULT_BACKOFF.capMs * 3) / 4);
  });

  it('starts over after reset', () => {
    const backoff = new Backoff({ random: () => 0.999999, baseMs: 100, capMs: 1000 });
    for (let i = 0; i < 5; i++) backoff.next();
    expect(backoff.attempts).toBe(5);
    backoff.reset();
    expect(backoff.attempts).toBe(0);
    expect(backoff.next()).toBe(99);
  });
});
