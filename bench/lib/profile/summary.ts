/**
 * Reads a V8 .cpuprofile (node --cpu-prof) and prints where the CPU went inside a time window: self time by
 * package or area and by function, as shares of the busy (not idle) samples. Used by bench/qr-profile.ts and
 * bench/qr-refresh-profile.ts.
 */
import { readFileSync } from 'node:fs';
import { table } from '../measure/stats.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Where a frame's code comes from: a package, tabwire's own src/, node internals, or V8 (GC, program, idle). */
function origin(url: string, name: string): string {
  if (url === '') return name.startsWith('(') ? name : '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  if (url.startsWith('node:')) return 'node:' + url.slice(5).split('/')[0];
  const src = /\/(?:src|dist)\/(.+)$/.exec(url);
  if (src) return `src/${src[1]!.split('/')[0]}`;
  return url.split('/').slice(-2).join('/');
}

/**
 * Prints the summary of the profile at `path`, counting only samples stamped inside `window` (V8 stamps them
 * with the monotonic clock process.hrtime reads, in microseconds).
 */
export function printProfileSummary(path: string, window: { from: number; to: number }, topFunctions = 40): void {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfMicros = new Map<number, number>();
  let at = profile.startTime;
  let counted = 0;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (at < window.from || at > window.to) return;
    counted++;
    selfMicros.set(id, (selfMicros.get(id) ?? 0) + delta);
  });
  if (counted === 0) throw new Error('no samples inside the measured window (clock mismatch?)');
  const busy = [...selfMicros].filter(([id]) => byId.get(id)!.callFrame.functionName !== '(idle)').reduce((s, [, us]) => s + us, 0);

  const byFunction = new Map<string, number>();
  const byOrigin = new Map<string, number>();
  for (const [id, us] of selfMicros) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    if (functionName === '(idle)') continue;
    const where = origin(url, functionName);
    const name = (functionName || '(anonymous)').slice(0, 60);
    const file = url.split('/').pop() ?? '';
    const key = `${name}  ${where}${url ? ` ${file}:${lineNumber + 1}` : ''}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + us);
    byOrigin.set(where, (byOrigin.get(where) ?? 0) + us);
  }
  // Total time (self and callees) of tabwire's own functions: which step of a request costs what.
  const parentOf = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id);
  const total = new Map<string, number>();
  for (const [id, us] of selfMicros) {
    if (byId.get(id)!.callFrame.functionName === '(idle)') continue;
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
      const { functionName, url, lineNumber } = byId.get(at)!.callFrame;
      const src = /\/(?:src|dist)\/(.+)$/.exec(url);
      if (!src) continue;
      const key = `${functionName || '(anonymous)'}  ${src[1]}:${lineNumber + 1}`;
      if (seen.has(key)) continue;
      seen.add(key);
      total.set(key, (total.get(key) ?? 0) + us);
    }
  }
  const top = (map: Map<string, number>, n: number): string[][] =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, us]) => [k, `${((us / busy) * 100).toFixed(1)}%`]);
  console.log(`\n${counted} samples in the measured window; busy (not idle) ${(busy / 1000).toFixed(0)} ms`);
  console.log(`\nBy package / area (self time, % of busy samples):`);
  for (const line of table(['where', 'share'], top(byOrigin, 25))) console.log(`  ${line}`);
  console.log(`\nTop functions (self time):`);
  for (const line of table(['function', 'share'], top(byFunction, topFunctions))) console.log(`  ${line}`);
  console.log(`\ntabwire's functions, total time (self and callees):`);
  for (const line of table(['function', 'share'], top(total, 30))) console.log(`  ${line}`);
  console.log(`\nprofile: ${path} (remove its directory when done)`);
}
