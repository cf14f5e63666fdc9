/**
 * The waiting-people rig shared by bench/waiting-people.ts and bench/soak.ts: a real tabwire in a
 * child process (bench/servers/waiting-tabwire.ts) and one or more load processes
 * (bench/servers/waiting-clients.ts) holding N waiting login pages. When `taskset` is available the
 * server's event loop has CPU 0 to itself, and the server's other threads and the load share CPU 1
 * (or, with `serverCores: 'one'`, the whole server is on CPU 0). It measures windows: QR latency
 * merged over the load processes, errors, and every process's CPU from /proc/<pid>/stat.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, startChild, type ChildServer } from './child.js';
import { openFilesLimit, rssBytes, startWorker, type Worker } from './channel-worker.js';
import { summarise } from './latency-histogram.js';
import { fetchOnce } from './load.js';
import { machineBusyMicros, otherPercent } from './sysload.js';
import type { WaitingMode, WindowReading } from '../servers/waiting-clients.js';
import { ONE_CORE_NODE_FLAGS, SERVICE_NODE_FLAGS } from '../../src/node-flags.js';

export type { WaitingMode };

/** The service's defaults allow 6,000 QR requests a minute per address; all load comes from 127.0.0.1. */
export const QR_LIMIT_ENV: Readonly<Record<string, string>> = {
  TABWIRE_QR_REQUESTS_PER_ADDRESS_PER_MINUTE: '10000000',
};
/** Open files each process keeps beyond its sockets to the other side (SQLite, IPC, stdio, listen socket). */
const FD_MARGIN = 200;
/** WebSocket handshakes in flight while tabs are opened. */
const OPEN_CONCURRENCY = 100;
/** A refresh unanswered this long counts as an error (the page would show a stale code for good). */
const STUCK_MS = 10_000;
/** The event script's Ping interval (REFERENCE-CLIENTS: every 10 s). */
const PING_MS = 10_000;
/** Linux's USER_HZ: /proc/<pid>/stat counts CPU in 1/100 s. */
const TICK_MICROS = 10_000;

export interface RigOptions {
  mode: WaitingMode;
  /** A page asks for a new code this long after each answer. */
  periodMs: number;
  /** Keep-alive HTTP connections per load process. */
  poolSize: number;
  /** Pin the server to CPU 0 (see serverCores) and the load (and this process) to CPU 1. */
  pin: boolean;
  /**
   * With pin: `loop` gives CPU 0 to the server's event loop alone and puts its other threads (V8's
   * garbage-collection helpers, the QR encoder thread, SQLite's checkpointer, libuv's pool) on CPU 1 with
   * the load, as on a two-core machine where the node runs beside other work; `one` confines the whole
   * server to CPU 0, started as docs/deployment.md says for a node confined to one core.
   */
  serverCores: 'loop' | 'one';
  /** Directory for the server's SQLite file. */
  dir: string;
}

/** One measured window. Latencies in ms, CPU in % of one core. */
export interface WindowResult {
  tabs: number;
  windowMs: number;
  /** Refreshes answered without error in the window, and their rate per second. */
  refreshes: number;
  rate: number;
  p50: number;
  p99: number;
  max: number;
  /** The POST alone (image mode; NaN in text mode). */
  postP50: number;
  postP99: number;
  httpAnswers: number;
  errors: number;
  errorKinds: Record<string, number>;
  firstError: string | undefined;
  /** Refreshes unanswered for more than STUCK_MS at the window's end (counted in errors too). */
  stuck: number;
  /** WebSockets the server closed during the window. */
  closes: number;
  serverCpuPercent: number;
  /** Server CPU per answered refresh (µs): the whole cost of one waiting person's new code, pings included. */
  serverMicrosPerRefresh: number;
  clientCpuPercent: number;
  otherPercent: number;
  serverRss: number;
  clientLoopP99Ms: number;
  maxQueue: number;
  /** How unevenly refreshes fall within the refresh period (`arrivalBunching`: 0 = evenly). */
  bunching: number;
  /** The server's event-loop delay over the window (ms, 1 ms sampling included) and its GC pauses. */
  serverLoopP99Ms: number;
  serverLoopMaxMs: number;
  gcCount: number;
  gcTotalMs: number;
  gcMaxMs: number;
  /** With churn (`WaitingRig.churn`): pages that left and new ones that took their place, per second. */
  leftPerSecond: number;
  arrivedPerSecond: number;
  /** With churn: a new page's WebSocket handshake and Register, p99 (ms; NaN without churn). */
  registerP99: number;
}

interface LoopReading {
  p99Ms: number;
  maxMs: number;
  gc: { count: number; totalMs: number; maxMs: number };
}

/** user + system CPU (µs) a process has used, all its threads, from /proc/<pid>/stat (fields 14 and 15). */
export function procCpuMicros(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MICROS;
}

/** The CPUs a process (its main thread), or one of its threads by task id, may run on (Cpus_allowed_list). */
export function allowedCpus(pid: number, tid?: string): string {
  const status = tid === undefined ? `/proc/${pid}/status` : `/proc/${pid}/task/${tid}/status`;
  return /^Cpus_allowed_list:\s*(\S+)/m.exec(readFileSync(status, 'utf8'))?.[1] ?? '?';
}

/** Moves every thread of a process to `cpus` (taskset -a); threads started later inherit it. */
function pin(pid: number, cpus: string): void {
  execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
}

/** Moves one thread (a task id; the main thread's is the pid) to `cpus`. */
function pinThread(tid: string, cpus: string): void {
  execFileSync('taskset', ['-p', '-c', cpus, tid], { stdio: 'ignore' });
}

/** BENCH_SERVER_CORES=one confines the whole server to CPU 0; by default its event loop has CPU 0 alone (RigOptions.serverCores). */
export function serverCores(): RigOptions['serverCores'] {
  return process.env.BENCH_SERVER_CORES === 'one' ? 'one' : 'loop';
}

export function tasksetAvailable(): boolean {
  try {
    execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** A window's result holds when p99 is within the bound and nothing failed. */
/**
 * How unevenly refreshes fall within the refresh period: the window's arrivals (all load processes,
 * counted per `binMs`) folded onto one period, and the coefficient of variation of that profile
 * (0 = evenly spread; sampling noise alone gives ~0.03 at 12,000 tabs over 20 s). A page asks again a
 * fixed time after its answer, so the refreshes a slow moment of the server held back are answered
 * together and come back together one period later, and keep doing so: each stall adds to the bunches,
 * and a bunch arrives faster than the server answers. Only whole periods are folded.
 */
export function arrivalBunching(perProcess: readonly number[][], binMs: number, periodMs: number): number {
  const binsPerPeriod = Math.round(periodMs / binMs);
  const length = Math.max(0, ...perProcess.map((a) => a.length));
  // The last bin of the window is partial, and so is a trailing part of a period.
  const whole = Math.floor(Math.max(0, length - 1) / binsPerPeriod) * binsPerPeriod;
  if (whole === 0) return Number.NaN;
  const folded = new Array<number>(binsPerPeriod).fill(0);
  for (const a of perProcess) for (let i = 0; i < Math.min(whole, a.length); i++) folded[i % binsPerPeriod]! += a[i]!;
  const mean = folded.reduce((s, n) => s + n, 0) / binsPerPeriod;
  if (mean === 0) return Number.NaN;
  const variance = folded.reduce((s, n) => s + (n - mean) ** 2, 0) / binsPerPeriod;
  return Math.sqrt(variance) / mean;
}

export const holds = (r: WindowResult, p99LimitMs: number): boolean => r.p99 <= p99LimitMs && r.errors === 0 && r.closes === 0 && r.refreshes > 0;

interface LoadProcess {
  worker: Worker;
  /** Tabs it may hold (its open-file limit less its pool and margin). */
  capacity: number;
  tabs: number;
}

export class WaitingRig {
  private readonly load: LoadProcess[] = [];
  /** Tab ids are never reused: a dropped tab's binding to its session outlives it. */
  private nextIndex = 0;
  private closesSeen = 0;
  /** serverCores `loop`: moves the server's threads started since to CPU 1 (threads inherit their creator's CPUs). */
  private threadMover: NodeJS.Timeout | undefined;
  private readonly threadsMoved = new Set<string>();
  private readonly ownCpus: string;

  private constructor(
    readonly server: ChildServer,
    readonly o: RigOptions,
    readonly sqliteFile: string,
    /** Tabs the server may hold (its open-file limit less the pools and a margin). */
    readonly serverCapacity: number,
  ) {
    this.ownCpus = allowedCpus(process.pid);
  }

  static async start(o: RigOptions, maxLoadProcesses = 2): Promise<WaitingRig> {
    const port = await freePort();
    const sqliteFile = join(o.dir, 'waiting-people.sqlite');
    // BENCH_SERVER_NODE_ARGS, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof": to look at the server while it is loaded.
    // Started as the service is (src/node-flags.ts), plus whatever BENCH_SERVER_NODE_ARGS adds (profiling, tracing).
    // Confined to one core, the server is started as docs/deployment.md says such a node is.
    const oneCore = o.pin && o.serverCores === 'one';
    const nodeArgs = [...SERVICE_NODE_FLAGS, ...(oneCore ? ONE_CORE_NODE_FLAGS : []), ...(process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean)];
    const server = await startChild('tabwire', new URL('../servers/waiting-tabwire.ts', import.meta.url), [JSON.stringify({ port, sqliteFile, env: QR_LIMIT_ENV })], { nodeArgs });
    try {
      if (o.pin) pin(server.pid, oneCore ? '0' : '1');
      const capacity = openFilesLimit(server.pid) - o.poolSize * maxLoadProcesses - FD_MARGIN;
      const rig = new WaitingRig(server, o, sqliteFile, capacity);
      if (o.pin) pin(process.pid, '1');
      if (o.pin && !oneCore) rig.giveLoopItsCore();
      return rig;
    } catch (err) {
      await server.stop();
      throw err;
    }
  }

  get tabs(): number {
    return this.load.reduce((s, p) => s + p.tabs, 0);
  }

  /**
   * The server's main thread (the event loop) to CPU 0, every other thread of it to CPU 1, and once a
   * second any thread it started since (the encoder thread starts under load) to CPU 1 as well.
   */
  private giveLoopItsCore(): void {
    const pid = String(this.server.pid);
    pinThread(pid, '0');
    const moveNew = (): void => {
      let tids: string[];
      try {
        tids = readdirSync(`/proc/${pid}/task`);
      } catch {
        return; // the server is gone
      }
      for (const tid of tids) {
        if (tid === pid || this.threadsMoved.has(tid)) continue;
        try {
          pinThread(tid, '1');
          this.threadsMoved.add(tid);
        } catch {
          // the thread ended meanwhile
        }
      }
    };
    moveNew();
    this.threadMover = setInterval(moveNew, 1_000);
    this.threadMover.unref();
  }

  /** CPU split as the processes report it now, e.g. `server event loop CPU 0, its other threads CPU 1; load 1; orchestrator 1`. */
  cpuSplit(): string {
    const load = this.load.map((p) => allowedCpus(p.worker.pid));
    const pid = this.server.pid;
    const server =
      this.threadMover === undefined
        ? `server CPU ${allowedCpus(pid)}${this.o.pin ? ` (with ${ONE_CORE_NODE_FLAGS.join(' ')}, as for any node confined to one core)` : ''}`
        : `server event loop CPU ${allowedCpus(pid, String(pid))} alone, its ${this.threadsMoved.size} other threads (garbage-collection helpers, QR encoder, SQLite checkpointer, libuv pool) CPU 1`;
    return `${server}; load process${load.length === 1 ? '' : 'es'} CPU ${load.join(', ') || '-'}; orchestrator CPU ${allowedCpus(process.pid)}`;
  }

  loadPids(): number[] {
    return this.load.map((p) => p.worker.pid);
  }

  /** Size of the server's SQLite file and its WAL, bytes. */
  databaseBytes(): number {
    let bytes = 0;
    for (const file of [this.sqliteFile, `${this.sqliteFile}-wal`]) {
      try {
        bytes += statSync(file).size;
      } catch {
        // no WAL yet
      }
    }
    return bytes;
  }

  private async newLoadProcess(): Promise<LoadProcess> {
    const worker = await startWorker(`load ${this.load.length + 1}`, new URL('../servers/waiting-clients.ts', import.meta.url));
    try {
      if (this.o.pin) pin(worker.pid, '1');
      await worker.call('setup', {
        port: this.server.port,
        mode: this.o.mode,
        periodMs: this.o.periodMs,
        pingMs: PING_MS,
        poolSize: this.o.poolSize,
        prefix: `wait${this.load.length}-`,
      });
    } catch (err) {
      await worker.stop();
      throw err;
    }
    const p = { worker, capacity: worker.openFilesLimit - this.o.poolSize - FD_MARGIN, tabs: 0 };
    this.load.push(p);
    return p;
  }

  /**
   * Opens or drops tabs until `target` are waiting; new tabs start refreshing at once, spread evenly
   * over one period. Returns how long opening took (ms).
   */
  async setTabs(target: number): Promise<number> {
    if (target > this.serverCapacity) throw new Error(`the server may hold ${this.serverCapacity} tabs (open-file limit); asked for ${target}`);
    const started = performance.now();
    let missing = target - this.tabs;
    while (missing > 0) {
      const p = this.load.find((l) => l.tabs < l.capacity) ?? (await this.newLoadProcess());
      const count = Math.min(missing, p.capacity - p.tabs);
      const from = this.nextIndex;
      this.nextIndex += count;
      const opened = await p.worker.call<{ opened: number; failed: number; firstError?: string }>(
        'open',
        { from, to: from + count, concurrency: OPEN_CONCURRENCY },
        300_000,
      );
      p.tabs += opened.opened;
      if (opened.failed > 0) throw new Error(`${opened.failed} of ${count} tabs failed to open; first: ${opened.firstError}`);
      await p.worker.call('start');
      missing -= count;
    }
    for (let i = this.load.length - 1; i >= 0 && this.tabs > target; i--) {
      const p = this.load[i]!;
      const count = Math.min(p.tabs, this.tabs - target);
      const left = await p.worker.call<{ tabs: number }>('drop', { count }, 60_000);
      p.tabs = left.tabs;
    }
    return performance.now() - started;
  }

  /**
   * People come and go (`meanStayMs` > 0): each waiting page leaves after a random stay with this mean and
   * a new person's page takes its place at once; 0 stops it. The number of tabs stays as it is.
   */
  async churn(meanStayMs: number): Promise<void> {
    await Promise.all(this.load.map((p) => p.worker.call('churn', { meanStayMs })));
  }

  /** Measures for `ms`: latency over every load process, errors, CPU of each process and of the rest of the machine. */
  async measure(ms: number): Promise<WindowResult> {
    const loadPids = this.loadPids();
    await this.serverLoop();
    await Promise.all(this.load.map((p) => p.worker.call('window-start')));
    const t0 = performance.now();
    const server0 = procCpuMicros(this.server.pid);
    const load0 = loadPids.map(procCpuMicros);
    const own0 = process.cpuUsage();
    const machine0 = machineBusyMicros();
    await sleep(ms);
    const readings = await Promise.all(this.load.map((p) => p.worker.call<WindowReading>('window-read', {}, 30_000)));
    const loop = await this.serverLoop();
    const windowMs = performance.now() - t0;
    const serverMicros = procCpuMicros(this.server.pid) - server0;
    const loadMicros = loadPids.map((pid, i) => procCpuMicros(pid) - load0[i]!).reduce((s, v) => s + v, 0);
    const own = process.cpuUsage(own0);
    const machine = machineBusyMicros() - machine0;

    const totals = summarise(readings.map((r) => r.total), [50, 99]);
    const posts = summarise(readings.map((r) => r.post), [50, 99]);
    const registers = summarise(readings.map((r) => r.register), [99]);
    const refreshes = readings.reduce((s, r) => s + r.ok, 0);
    const stuck = readings.reduce((s, r) => s + (r.oldestOutstandingMs > STUCK_MS ? r.outstanding : 0), 0);
    const errorKinds: Record<string, number> = {};
    for (const r of readings) for (const [k, n] of Object.entries(r.errorKinds)) errorKinds[k] = (errorKinds[k] ?? 0) + n;
    if (stuck > 0) errorKinds[`unanswered > ${STUCK_MS / 1000} s`] = stuck;
    const closesNow = readings.reduce((s, r) => s + r.unexpectedCloses, 0);
    const closes = closesNow - this.closesSeen;
    this.closesSeen = closesNow;
    return {
      tabs: this.tabs,
      windowMs,
      refreshes,
      rate: (refreshes * 1000) / windowMs,
      p50: totals.values[0]!,
      p99: totals.values[1]!,
      max: totals.max,
      postP50: posts.values[0]!,
      postP99: posts.values[1]!,
      httpAnswers: readings.reduce((s, r) => s + r.httpAnswers, 0),
      errors: readings.reduce((s, r) => s + r.errors, 0) + stuck,
      errorKinds,
      firstError: readings.find((r) => r.firstError !== undefined)?.firstError,
      stuck,
      closes,
      serverCpuPercent: (serverMicros / (windowMs * 1000)) * 100,
      serverMicrosPerRefresh: refreshes > 0 ? serverMicros / refreshes : Number.NaN,
      clientCpuPercent: (loadMicros / (windowMs * 1000)) * 100,
      otherPercent: otherPercent(machine, serverMicros + loadMicros + own.user + own.system, windowMs),
      serverRss: rssBytes(this.server.pid),
      clientLoopP99Ms: Math.max(...readings.map((r) => r.loopP99Ms)),
      maxQueue: Math.max(...readings.map((r) => r.maxQueue)),
      bunching: arrivalBunching(
        readings.map((r) => r.arrivals),
        readings[0]?.arrivalBinMs ?? 1,
        this.o.periodMs,
      ),
      serverLoopP99Ms: loop.p99Ms,
      serverLoopMaxMs: loop.maxMs,
      gcCount: loop.gc.count,
      gcTotalMs: loop.gc.totalMs,
      gcMaxMs: loop.gc.maxMs,
      leftPerSecond: (readings.reduce((s, r) => s + r.left, 0) * 1000) / windowMs,
      arrivedPerSecond: (readings.reduce((s, r) => s + r.arrived, 0) * 1000) / windowMs,
      registerP99: registers.values[0]!,
    };
  }

  /** The server's event-loop and GC figures since the last call (bench route of waiting-tabwire.ts). */
  private async serverLoop(): Promise<LoopReading> {
    const r = await fetchOnce(this.server.port, 'GET', '/__bench/loop');
    if (r.status !== 200) throw new Error(`GET /__bench/loop answered ${r.status}`);
    return JSON.parse(r.body.toString()) as LoopReading;
  }

  /** Stops the load processes and the server (by pid) and gives this process its CPUs back. */
  async stop(): Promise<void> {
    clearInterval(this.threadMover);
    await Promise.all(this.load.map((p) => p.worker.stop()));
    await this.server.stop();
    if (this.o.pin) {
      try {
        pin(process.pid, this.ownCpus);
      } catch {
        // best effort: only later benchmarks of this run would notice
      }
    }
  }
}
