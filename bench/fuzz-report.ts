import { readFileSync } from 'node:fs';
import type { FindingKind } from '../test/fuzz/oracle.js';
import type { Observation } from '../test/fuzz/run-case.js';

/**
 * Tallies of a fuzz run (docs/reliability.md "Reading the output"): outcomes per route, failure
 * classes with a few sample requests each, and the server's own error log lines.
 */
export class FuzzTally {
  total = 0;
  readonly outcomes = new Map<string, number>();
  readonly byRoute = new Map<string, { counts: Map<string, number>; ms: number; n: number }>();
  /** Failure classes by kind and signature (the same framework refusal on many routes is one class). */
  readonly classes = new Map<string, { kind: FindingKind; signature: string; count: number; routes: Map<string, number>; samples: string[] }>();

  add(o: Observation, ms: number): void {
    this.total++;
    this.outcomes.set(o.outcome, (this.outcomes.get(o.outcome) ?? 0) + 1);
    const route = this.byRoute.get(o.route) ?? { counts: new Map<string, number>(), ms: 0, n: 0 };
    const bucket = bucketOf(o.outcome);
    route.counts.set(bucket, (route.counts.get(bucket) ?? 0) + 1);
    route.ms += ms;
    route.n++;
    this.byRoute.set(o.route, route);
    if (!o.finding) return;
    const key = `${o.finding.kind}\u0000${o.finding.signature}`;
    const entry = this.classes.get(key) ?? { kind: o.finding.kind, signature: o.finding.signature, count: 0, routes: new Map<string, number>(), samples: [] };
    entry.count++;
    // Samples from different routes where there are any: the same refusal reached another way.
    if (entry.samples.length < 3 && !entry.routes.has(o.route)) entry.samples.push(`${o.request}\n        -> ${o.finding.detail.slice(0, 240)}`);
    entry.routes.set(o.route, (entry.routes.get(o.route) ?? 0) + 1);
    this.classes.set(key, entry);
  }

  count(kind: FindingKind | ((k: FindingKind) => boolean)): number {
    let n = 0;
    for (const c of this.classes.values()) if (typeof kind === 'function' ? kind(c.kind) : c.kind === kind) n += c.count;
    return n;
  }
}

/** 2xx / 3xx / 4xx / 5xx for HTTP statuses; WebSocket closes and missing answers as they are. */
function bucketOf(outcome: string): string {
  return /^\d{3}$/.test(outcome) ? `${outcome[0]}xx` : outcome.split(' ')[0] === 'ws' ? 'ws' : 'none';
}

const pad = (s: string | number, n: number) => String(s).padStart(n);

export function printTally(t: FuzzTally, log: (line: string) => void = console.log): void {
  log('\nStatus histogram (HTTP status, WebSocket close code, or no answer):');
  const sorted = [...t.outcomes.entries()].sort(([a], [b]) => a.localeCompare(b));
  for (const [outcome, n] of sorted) log(`  ${outcome.padEnd(16)} ${pad(n, 9)}  ${((100 * n) / Math.max(1, t.total)).toFixed(2).padStart(6)} %`);

  log('\nPer route (answers by class, mean time per case):');
  const buckets = ['2xx', '3xx', '4xx', '5xx', 'ws', 'none'];
  log(`  ${'route'.padEnd(44)}${buckets.map((b) => pad(b, 8)).join('')}${pad('ms', 8)}`);
  for (const [route, r] of [...t.byRoute.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    log(`  ${route.slice(0, 43).padEnd(44)}${buckets.map((b) => pad(r.counts.get(b) ?? 0, 8)).join('')}${pad((r.ms / r.n).toFixed(1), 8)}`);
  }

  const classes = [...t.classes.values()].sort((a, b) => a.kind.localeCompare(b.kind) || b.count - a.count);
  log(`\nFailure classes: ${classes.length}`);
  for (const c of classes) {
    const routes = [...c.routes.entries()].sort(([, a], [, b]) => b - a);
    log(`  [${c.kind}] ${c.signature} × ${c.count}, on ${routes.length} route(s): ${routes.slice(0, 4).map(([r, n]) => `${r} (${n})`).join(', ')}${routes.length > 4 ? ', …' : ''}`);
    for (const s of c.samples) log(`      e.g. ${s}`);
  }
}

/**
 * The distinct errors the service logged (pino JSON lines at level ≥ 50), with counts: the stack
 * behind each 500, which the answers themselves rightly hide.
 */
export function serverErrors(logFile: string): Array<{ message: string; count: number; stack?: string }> {
  let text: string;
  try {
    text = readFileSync(logFile, 'utf8');
  } catch {
    return [];
  }
  const seen = new Map<string, { message: string; count: number; stack?: string }>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    let entry: { level?: number; msg?: string; err?: { type?: string; message?: string; stack?: string } };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      continue;
    }
    if ((entry.level ?? 0) < 50) continue;
    const message = `${entry.msg ?? ''}: ${entry.err?.type ?? ''} ${entry.err?.message ?? ''}`.slice(0, 300);
    const where = entry.err?.stack?.split('\n').find((l) => l.includes('/src/'))?.trim();
    const key = `${message}\u0000${where ?? ''}`;
    const e = seen.get(key) ?? { message, count: 0, ...(where ? { stack: where } : {}) };
    e.count++;
    seen.set(key, e);
  }
  return [...seen.values()].sort((a, b) => b.count - a.count);
}
