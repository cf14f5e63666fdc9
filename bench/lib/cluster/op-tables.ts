/**
 * The cluster benchmark's per-operation tables (report.ts section 4): the commands the nodes sent to Redis, the
 * commands Redis executed (scripts' inner commands included) and the statements PostgreSQL ran, each per operation.
 */
import { sumOf } from '../measure/counter-maps.js';
import { table } from '../measure/stats.js';
import { shortSql, sqlStatements } from './meter.js';

const num = (v: number, digits = 2): string => (!Number.isFinite(v) ? '-' : v >= 100 ? Math.round(v).toLocaleString('en-US') : v.toFixed(digits));

interface Counted {
  label: string;
  per: number;
}

/** Rows for the kinds that reach 0.005 per operation in some column, then the total (`totalOf` a row, per operation). */
function perOperation<R extends Counted & { counts: Map<string, number> }>(first: string, rows: R[], total: string, totalOf: (row: R) => number): string[] {
  const kinds = [...new Set(rows.flatMap((r) => [...r.counts.keys()]))].sort();
  return table(
    [first, ...rows.map((r) => r.label)],
    [
      ...kinds.filter((k) => rows.some((r) => (r.counts.get(k) ?? 0) / r.per >= 0.005)).map((k) => [k, ...rows.map((r) => num((r.counts.get(k) ?? 0) / r.per))]),
      [total, ...rows.map((r) => num(totalOf(r) / r.per))],
    ],
  );
}

/** The commands the nodes sent (their own count: a script is one command). */
export function sentTable(rows: (Counted & { sent: Map<string, number> })[]): string[] {
  return perOperation('command sent by the nodes', rows.map((r) => ({ ...r, counts: r.sent })), 'all', (r) => sumOf(r.counts));
}

/**
 * The commands Redis executed (INFO commandstats: `evalsha` for each script run, plus every command inside it),
 * presence refreshes included: where a script's inner work goes.
 */
export function redisTable(rows: (Counted & { calls: Map<string, number> })[]): string[] {
  return perOperation('command executed by Redis', rows.map((r) => ({ ...r, counts: r.calls })), 'all', (r) => sumOf(r.counts));
}

/** The statements PostgreSQL ran (pg_stat_statements), grouped by their first words and table. */
export function sqlTable(rows: (Counted & { calls: Map<string, number> })[]): string[] {
  const grouped = rows.map((r) => {
    const counts = new Map<string, number>();
    for (const [q, c] of r.calls) counts.set(shortSql(q), (counts.get(shortSql(q)) ?? 0) + c);
    return { ...r, counts };
  });
  return perOperation('statement (pg_stat_statements)', grouped, 'all but BEGIN/COMMIT', (r) => sqlStatements(r.calls));
}
