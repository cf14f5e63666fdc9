/**
 * Helpers shared by the benchmarks (first written for the channel, callback and XMPP ones: bench/channel-memory.ts,
 * deliver-latency.ts, longpoll-memory.ts, callbacks.ts, xmpp-router.ts; the QR benchmarks use them too).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ChildServer } from './processes/child.js';
import { openFilesLimit, rssBytes } from './processes/channel-worker.js';
import { fetchOnce } from './load/load.js';
import { OTHER_CPU_LIMIT } from './measure/quiet.js';
import { backgroundLoad, machineBusyMicros, otherPercent } from './measure/sysload.js';
import { runsBuiltCode } from './processes/shipped-build.js';

export { OTHER_CPU_LIMIT };
const QUIET_WAIT_MS = 10_000;

const root = new URL('../../', import.meta.url);

export const versionOf = (pkg: string): string => {
  try {
    return (JSON.parse(readFileSync(new URL(`node_modules/${pkg}/package.json`, root), 'utf8')) as { version: string }).version;
  } catch {
    return '?';
  }
};

/** The code measured: commit, whether src/ differs from it, and whether the servers ran src/ rather than its build. */
export const revision = (): string => {
  try {
    const git = (...args: string[]) => execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = git('status', '--porcelain', '--', 'src') !== '';
    return `${git('rev-parse', '--short', 'HEAD')}${dirty ? ' + uncommitted changes in src/' : ''}${runsBuiltCode() ? '' : ' (servers run src/ through tsx: BENCH_CODE=src)'}`;
  } catch {
    return 'unknown (not a git checkout)';
  }
};

export const machineLine = (): string => {
  const cpu = cpus();
  return `machine: ${cpu.length} cores (${cpu[0]?.model ?? 'unknown CPU'}), ${process.platform}/${process.arch}, Node ${process.version}`;
};

/** Waits (bounded) for other processes to go quiet; returns the last idle reading (% of a core). */
export async function waitForQuiet(): Promise<number> {
  let idle = await backgroundLoad();
  for (let waited = 0; idle > OTHER_CPU_LIMIT && waited < QUIET_WAIT_MS; waited += 1_000) {
    if (waited === 0) console.log(`  other processes use ${idle.toFixed(0)}% of a core; waiting up to ${QUIET_WAIT_MS / 1000} s for quiet ...`);
    idle = await backgroundLoad();
  }
  return idle;
}

/** Fails loudly when something does not behave as the benchmark assumes. */
export function expect(condition: boolean, message: string): asserts condition {
  if (!condition) throw new Error(`sanity check failed: ${message}`);
}

/** Polls `probe` until it returns true (every `everyMs`), at most `ms`; returns whether it did. */
export async function waitUntil(probe: () => Promise<boolean> | boolean, ms: number, everyMs = 50): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await probe()) return true;
    if (Date.now() > deadline) return false;
    await sleep(everyMs);
  }
}

/** CPU (µs so far) of one process of the benchmark. */
export type CpuProbe = () => Promise<number>;
export const ownCpu: CpuProbe = async () => {
  const { user, system } = process.cpuUsage();
  return user + system;
};

/**
 * A measured window: how much CPU each of our processes used over it and how much the rest of
 * the machine did (the `other` column of qr-issuance: contamination on 2 cores).
 */
export class CpuWindow {
  private constructor(
    private readonly probes: CpuProbe[],
    private readonly start: number[],
    private readonly machineStart: number,
    private readonly t0: number,
  ) {}

  static async open(probes: CpuProbe[]): Promise<CpuWindow> {
    const start = await Promise.all(probes.map((p) => p()));
    return new CpuWindow(probes, start, machineBusyMicros(), performance.now());
  }

  /** Per-probe CPU in % of one core, and others' share, over the window so far. */
  async close(): Promise<{ ms: number; cpuPercent: number[]; cpuMicros: number[]; otherPercent: number }> {
    const end = await Promise.all(this.probes.map((p) => p()));
    const machine = machineBusyMicros() - this.machineStart;
    const ms = performance.now() - this.t0;
    const cpuMicros = end.map((e, i) => e - this.start[i]!);
    const ours = cpuMicros.reduce((s, v) => s + v, 0);
    return { ms, cpuMicros, cpuPercent: cpuMicros.map((c) => (c / (ms * 1000)) * 100), otherPercent: otherPercent(machine, ours, ms) };
  }
}

/**
 * RSS of a server child on a settled heap: the child runs full GCs (POST /__bench/gc, needs
 * --expose-gc), then its VmRSS is read from /proc; repeated (at most 4 times) until two readings
 * agree within 1 %. Returns the last reading and the heap figures of the last GC.
 */
export async function settledRss(server: ChildServer): Promise<{ rss: number; heapUsed: number; external: number; arrayBuffers: number }> {
  let last = -1;
  let heap = { heapUsed: 0, external: 0, arrayBuffers: 0 };
  for (let round = 0; round < 4; round++) {
    // Full collections of a heap holding ~20,000 tabs take seconds on a loaded 2-core machine.
    const r = await fetchOnce(server.port, 'POST', '/__bench/gc', undefined, 60_000);
    expect(r.status === 200, `POST /__bench/gc answered ${r.status}: ${r.body.toString().slice(0, 200)}`);
    heap = JSON.parse(r.body.toString()) as typeof heap;
    await sleep(250);
    const rss = rssBytes(server.pid);
    if (last > 0 && Math.abs(rss - last) / last < 0.01) return { rss, ...heap };
    last = rss;
  }
  return { rss: last, ...heap };
}

/** Checks that a process may open at least `needed` files (sockets); throws with what to do otherwise. */
export function requireOpenFiles(who: string, limit: number, needed: number): void {
  if (limit < needed) throw new Error(`${who} may open ${limit} files, the benchmark needs ${needed}: lower the tab counts (do not raise limits from a benchmark)`);
}
export { openFilesLimit, rssBytes };

export const kib = (bytes: number): string => `${(bytes / 1024).toFixed(1)} KiB`;
export const mib = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
