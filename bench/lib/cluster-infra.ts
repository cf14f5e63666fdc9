/**
 * The cluster benchmark's view of its shared infrastructure (bench/cluster.ts): the readings PostgreSQL and
 * Redis give (started by cluster-postgres.ts and cluster-redis.ts) and the arithmetic on their counters that
 * turns two readings into a measured window (cluster-meter.ts) and a report's totals (cluster-report.ts).
 * The reading types are re-exported for cluster-meter.ts, which takes them from here with the arithmetic.
 */
export type { BenchPostgres, PgReading } from './cluster-postgres.js';
export type { BenchRedis, RedisReading } from './cluster-redis.js';

/** b - a per key, keys with no change left out. */
export function deltaOf(a: Map<string, number>, b: Map<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [k, v] of b) {
    const d = v - (a.get(k) ?? 0);
    if (d !== 0) out.set(k, d);
  }
  return out;
}

/** The sum of all counts, of a Map or a plain record. */
export const sumOf = (m: Map<string, number> | Record<string, number>): number =>
  [...(m instanceof Map ? m.values() : Object.values(m))].reduce((s, v) => s + v, 0);
