/**
 * Where the waiting-people rig's processes and threads run (bench/lib/waiting/rig.ts): `taskset` moves
 * them, /proc says where they may run. The server's event loop may get CPU 0 to itself, so that neither
 * the load nor the server's own helper threads take its core.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** The CPUs a process (its main thread), or one of its threads by task id, may run on (Cpus_allowed_list). */
export function allowedCpus(pid: number, tid?: string): string {
  const status = tid === undefined ? `/proc/${pid}/status` : `/proc/${pid}/task/${tid}/status`;
  return /^Cpus_allowed_list:\s*(\S+)/m.exec(readFileSync(status, 'utf8'))?.[1] ?? '?';
}

/** Moves every thread of a process to `cpus` (taskset -a); threads started later inherit it. */
export function pin(pid: number, cpus: string): void {
  execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
}

/** Moves one thread (a task id; the main thread's is the pid) to `cpus`. */
function pinThread(tid: string, cpus: string): void {
  execFileSync('taskset', ['-p', '-c', cpus, tid], { stdio: 'ignore' });
}

/**
 * Where the waiting server runs (rig.ts RigOptions.serverCores): `loop` gives CPU 0 to its event loop alone
 * and its other threads share CPU 1 with the load; `one` confines the whole server to CPU 0.
 */
export type ServerCores = 'loop' | 'one';

/** BENCH_SERVER_CORES=one confines the whole server to CPU 0; by default its event loop has CPU 0 alone. */
export function serverCores(): ServerCores {
  return process.env.BENCH_SERVER_CORES === 'one' ? 'one' : 'loop';
}

/** Whether `taskset` works here; without it nothing is pinned. */
export function tasksetAvailable(): boolean {
  try {
    execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * serverCores `loop`: the server's main thread (the event loop) to CPU 0, every other thread of it to
 * CPU 1, and once a second any thread it started since (the encoder thread starts under load) to CPU 1
 * as well, since threads inherit their creator's CPUs. Throws if the main thread cannot be moved.
 */
export class LoopOnItsOwnCore {
  private readonly moved = new Set<string>();
  private readonly mover: NodeJS.Timeout;

  constructor(serverPid: number) {
    const pid = String(serverPid);
    pinThread(pid, '0');
    const moveNew = (): void => {
      let tids: string[];
      try {
        tids = readdirSync(`/proc/${pid}/task`);
      } catch {
        return; // the server is gone
      }
      for (const tid of tids) {
        if (tid === pid || this.moved.has(tid)) continue;
        try {
          pinThread(tid, '1');
          this.moved.add(tid);
        } catch {
          // the thread ended meanwhile
        }
      }
    };
    moveNew();
    this.mover = setInterval(moveNew, 1_000);
    this.mover.unref();
  }

  /** The server's threads moved to CPU 1 so far. */
  get threadsMoved(): number {
    return this.moved.size;
  }

  /** Stops watching for new threads (the server is stopping). */
  stop(): void {
    clearInterval(this.mover);
  }
}
