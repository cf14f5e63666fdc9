/**
 * Arithmetic on counters by name (Redis commands by kind, PostgreSQL statements by text): two readings into
 * what a measured window added (../cluster/meter.ts), and a report's totals (../cluster/report.ts).
 */

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
