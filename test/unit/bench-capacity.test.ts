import { describe, expect, it } from 'vitest';
import { capacityEstimate } from '../../bench/lib/cluster/capacity.js';

const zero = { idlePerTabSecond: 0, refresh: 0, firstRequest: 0, register: 0, login: 0 };

describe('the cluster benchmark’s capacity estimate', () => {
  it('multiplies each cost by its rate for a million tabs: 500,000 refreshes, 8,333 arrivals and 4,167 logins a second', () => {
    // 1 µs per tab and second: 1 core; 2 µs per refresh: 1 core; 60 µs per arrival (request + Register): 0.5 core; 240 µs per login: 1 core.
    const redis = { idlePerTabSecond: 1, refresh: 2, firstRequest: 20, register: 40, login: 240 };
    const { lines, budgets } = capacityEstimate(redis, zero, undefined);
    expect(lines[1]).toContain('idle 1.00 + refreshes 1.00 + arrivals 0.50 + logins 1.00 = 3.50 cores');
    expect(budgets.map((b) => [b.met, b.detail])).toEqual([
      [false, '3.50 cores'],
      [true, '0.00 cores'],
    ]);
  });

  it('meets a budget just under its limit, not just over, and carries a disturbed window into both verdicts', () => {
    const postgres = { ...zero, login: 959 }; // 4,166.7 logins a second × 959 µs = 3.996 cores
    const { budgets } = capacityEstimate(zero, postgres, 'other processes used 40% of a core');
    expect(budgets[1]).toMatchObject({ met: true, detail: '4.00 cores', unreliable: 'other processes used 40% of a core' });
    expect(budgets[0]!.unreliable).toBe('other processes used 40% of a core');
    expect(capacityEstimate(zero, { ...zero, login: 961 }, undefined).budgets[1]!.met).toBe(false);
  });
});
