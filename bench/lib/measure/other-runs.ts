/**
 * Waiting for other benchmark or test runs (bench/run.ts, vitest) to end before measuring: on 2 cores
 * a concurrent run would take CPU from every process of the benchmark. Used by bench/xmpp-throughput.ts.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { OTHER_CPU_LIMIT } from './quiet.js';
import { backgroundLoad } from './sysload.js';

/** Before measuring: wait for other benchmark or test runs to finish (poll every 15 s, at most 10 min). */
const OTHER_RUNS_POLL_MS = 15_000;
const OTHER_RUNS_MAX_MS = 600_000;

/** This process and its ancestors (npm, the tsx CLI): their command lines name bench/run.ts too. */
function ownLineage(): Set<number> {
  const pids = new Set<number>();
  for (let pid = process.pid; pid > 1 && !pids.has(pid); ) {
    pids.add(pid);
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
      pid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    } catch {
      break;
    }
  }
  return pids;
}

/** Other benchmark or test runs (this process and its ancestors excluded). */
function otherRuns(): string[] {
  const mine = ownLineage();
  try {
    return execFileSync('pgrep', ['-fa', 'bench/run.ts|vitest'], { encoding: 'utf8' })
      .split('\n')
      .filter((l) => l.trim() !== '' && !mine.has(Number(l.split(' ', 1)[0])));
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
}

/**
 * Waits until no other benchmark or test run is alive and the machine is idle (other processes
 * below OTHER_CPU_LIMIT), polling every 15 s. After 10 minutes: throws if runs are still alive,
 * goes ahead if only the load remains (the `other` column then shows it).
 */
export async function waitForOtherRuns(): Promise<{ waitedMs: number; idle: number }> {
  const t0 = Date.now();
  for (;;) {
    const runs = otherRuns();
    const idle = runs.length > 0 ? Number.NaN : await backgroundLoad();
    if (runs.length === 0 && idle <= OTHER_CPU_LIMIT) return { waitedMs: Date.now() - t0, idle };
    if (Date.now() - t0 > OTHER_RUNS_MAX_MS) {
      if (runs.length > 0) throw new Error(`other benchmark/test runs still busy after ${OTHER_RUNS_MAX_MS / 60_000} min: ${runs.join('; ')}`);
      return { waitedMs: Date.now() - t0, idle };
    }
    console.log(runs.length > 0 ? `  waiting for other runs to finish: ${runs.map((r) => r.slice(0, 80)).join('; ')}` : `  other processes use ${idle.toFixed(0)}% of a core; waiting for quiet ...`);
    await sleep(OTHER_RUNS_POLL_MS);
  }
}
