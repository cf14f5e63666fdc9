/**
 * The waiting-people rig shared by bench/waiting-people.ts and bench/soak.ts: a real tabwire in a
 * child process (bench/servers/waiting-tabwire.ts) and one or more load processes
 * (bench/servers/waiting-clients.ts) holding N waiting login pages. When `taskset` is available the
 * server's event loop has CPU 0 to itself, and the server's other threads and the load share CPU 1
 * (or, with `serverCores: 'one'`, the whole server is on CPU 0). It measures windows: QR latency
 * merged over the load processes, errors, and every process's CPU from /proc/<pid>/stat.
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, startChild, type ChildServer } from '../processes/child.js';
import { openFilesLimit, rssBytes, startWorker, type Worker } from '../processes/channel-worker.js';
import { fetchOnce } from '../load/load.js';
import { raiseOpenFiles } from '../processes/open-files.js';
import { machineBusyMicros, otherPercent } from '../measure/sysload.js';
import { LoopOnItsOwnCore, allowedCpus, pin, type ServerCores } from './cores.js';
import { windowResult, type LoopReading, type WindowResult } from './window.js';
import type { WindowReading } from '../../servers/waiting/readings.js';
import type { WaitingMode } from '../../servers/waiting/state.js';
import { ONE_CORE_NODE_FLAGS, SERVICE_NODE_FLAGS } from '../../../src/node-flags.js';

export type { WaitingMode };
// Placement (cores.ts) and windows (window.ts) have modules of their own; their names stay importable from here, as bench/soak.ts does.
export { allowedCpus, serverCores, tasksetAvailable } from './cores.js';
export { arrivalBunching, holds, type WindowResult } from './window.js';

/** The service's defaults allow 6,000 QR requests a minute per address; all load comes from 127.0.0.1. */
export const QR_LIMIT_ENV: Readonly<Record<string, string>> = {
  TABWIRE_QR_REQUESTS_PER_ADDRESS_PER_MINUTE: '10000000',
};
/**
 * The server's open-file limit, raised to this when the benchmark runs as root (a process here may have
 * ~20,000; the budget's 30,000 waiting pages need a socket each, plus the load processes' pools).
 */
const SERVER_OPEN_FILES = 65_536;
/** Open files each process keeps beyond its sockets to the other side (SQLite, IPC, stdio, listen socket). */
const FD_MARGIN = 200;
/** WebSocket handshakes in flight while tabs are opened. */
const OPEN_CONCURRENCY = 100;
/** The event script's Ping interval (REFERENCE-CLIENTS: every 10 s). */
const PING_MS = 10_000;
/** Linux's USER_HZ: /proc/<pid>/stat counts CPU in 1/100 s. */
const TICK_MICROS = 10_000;

/** How the rig runs: the load's refresh, its pool, and where the processes run. */
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
  serverCores: ServerCores;
  /** Directory for the server's SQLite file. */
  dir: string;
}

/** user + system CPU (µs) a process has used, all its threads, from /proc/<pid>/stat (fields 14 and 15). */
export function procCpuMicros(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MICROS;
}

interface LoadProcess {
  worker: Worker;
  /** Tabs it may hold (its open-file limit less its pool and margin). */
  capacity: number;
  tabs: number;
}

/** The server child and its load processes: started once, then tabs set, churn switched, windows measured. */
export class WaitingRig {
  private readonly load: LoadProcess[] = [];
  /** Tab ids are never reused: a dropped tab's binding to its session outlives it. */
  private nextIndex = 0;
  private closesSeen = 0;
  /** serverCores `loop`: keeps the server's threads started since off the event loop's CPU. */
  private loopCore: LoopOnItsOwnCore | undefined;
  private readonly ownCpus: string;

  private constructor(
    readonly server: ChildServer,
    readonly o: RigOptions,
    readonly sqliteFile: string,
    /** Tabs the server may hold (its open-file limit less the pools and a margin). */
    readonly serverCapacity: number,
    /** Why the server's open-file limit could not be raised to SERVER_OPEN_FILES, if it could not. */
    readonly openFilesRefused?: string,
  ) {
    this.ownCpus = allowedCpus(process.pid);
  }

  /** Starts the server child, pinned as `o` says; its capacity leaves room for the pools of up to `maxLoadProcesses`. */
  static async start(o: RigOptions, maxLoadProcesses = 2): Promise<WaitingRig> {
    const port = await freePort();
    const sqliteFile = join(o.dir, 'waiting-people.sqlite');
    // BENCH_SERVER_NODE_ARGS, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof": to look at the server while it is loaded.
    // Started as the service is (src/node-flags.ts), plus whatever BENCH_SERVER_NODE_ARGS adds (profiling, tracing).
    // Confined to one core, the server is started as docs/deployment.md says such a node is.
    const oneCore = o.pin && o.serverCores === 'one';
    const nodeArgs = [...SERVICE_NODE_FLAGS, ...(oneCore ? ONE_CORE_NODE_FLAGS : []), ...(process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean)];
    const server = await startChild('tabwire', new URL('../../servers/waiting-tabwire.ts', import.meta.url), [JSON.stringify({ port, sqliteFile, env: QR_LIMIT_ENV })], { nodeArgs });
    try {
      if (o.pin) pin(server.pid, oneCore ? '0' : '1');
      const files = raiseOpenFiles(server.pid, SERVER_OPEN_FILES);
      const capacity = files.limit - o.poolSize * maxLoadProcesses - FD_MARGIN;
      const rig = new WaitingRig(server, o, sqliteFile, capacity, files.refused);
      if (o.pin) pin(process.pid, '1');
      if (o.pin && !oneCore) rig.loopCore = new LoopOnItsOwnCore(server.pid);
      return rig;
    } catch (err) {
      await server.stop();
      throw err;
    }
  }

  /** Tabs open now, over all load processes. */
  get tabs(): number {
    return this.load.reduce((s, p) => s + p.tabs, 0);
  }

  /** CPU split as the processes report it now, e.g. `server event loop CPU 0, its other threads CPU 1; load 1; orchestrator 1`. */
  cpuSplit(): string {
    const load = this.load.map((p) => allowedCpus(p.worker.pid));
    const pid = this.server.pid;
    const server =
      this.loopCore === undefined
        ? `server CPU ${allowedCpus(pid)}${this.o.pin ? ` (with ${ONE_CORE_NODE_FLAGS.join(' ')}, as for any node confined to one core)` : ''}`
        : `server event loop CPU ${allowedCpus(pid, String(pid))} alone, its ${this.loopCore.threadsMoved} other threads (garbage-collection helpers, QR encoder, SQLite checkpointer, libuv pool) CPU 1`;
    return `${server}; load process${load.length === 1 ? '' : 'es'} CPU ${load.join(', ') || '-'}; orchestrator CPU ${allowedCpus(process.pid)}`;
  }

  /** The load processes' pids. */
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
    const worker = await startWorker(`load ${this.load.length + 1}`, new URL('../../servers/waiting-clients.ts', import.meta.url));
    try {
      if (this.o.pin) pin(worker.pid, '1');
      await worker.call('setup', {
        port: this.server.port,
        mode: this.o.mode,
        periodMs: this.o.periodMs,
        pingMs: PING_MS,
        poolSize: this.o.poolSize,
        prefix: `wait${this.load.length}-`,
        // One loopback address per load process: ~28,000 local ports from one address to the server's port.
        localAddress: `127.0.0.${this.load.length + 1}`,
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

    const closesNow = readings.reduce((s, r) => s + r.unexpectedCloses, 0);
    const closes = closesNow - this.closesSeen;
    this.closesSeen = closesNow;
    return windowResult(readings, {
      tabs: this.tabs,
      windowMs,
      periodMs: this.o.periodMs,
      loop,
      serverMicros,
      loadMicros,
      otherPercent: otherPercent(machine, serverMicros + loadMicros + own.user + own.system, windowMs),
      serverRss: rssBytes(this.server.pid),
      closes,
    });
  }

  /** The server's event-loop and GC figures since the last call (bench route of waiting-tabwire.ts). */
  private async serverLoop(): Promise<LoopReading> {
    const r = await fetchOnce(this.server.port, 'GET', '/__bench/loop');
    if (r.status !== 200) throw new Error(`GET /__bench/loop answered ${r.status}`);
    return JSON.parse(r.body.toString()) as LoopReading;
  }

  /** Stops the load processes and the server (by pid) and gives this process its CPUs back. */
  async stop(): Promise<void> {
    this.loopCore?.stop();
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
