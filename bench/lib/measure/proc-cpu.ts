/**
 * CPU a process has used, read from /proc, for the benchmarks' probes of processes they did not start as children
 * (Prosody) or whose children count too (PostgreSQL's postmaster and its backends).
 */
import { readFileSync, readdirSync } from 'node:fs';

/** Linux's USER_HZ: /proc/<pid>/stat counts CPU in 1/100 s. */
const TICK_MICROS = 10_000;

/** user + system CPU (µs) of one process, all its threads, from /proc/<pid>/stat; 0 once it is gone. */
export function procCpuMicros(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_MICROS;
  } catch {
    return 0;
  }
}

/**
 * CPU (µs) of a process and its direct children (PostgreSQL's postmaster and its backends), counting
 * children that have exited since with what they had used when last seen (a pool closes idle
 * connections, and their backends exit: without this the total would drop).
 */
export class TreeCpu {
  private readonly seen = new Map<number, number>();

  constructor(private readonly root: number) {}

  /** The total so far: the root and its live children read now, exited children as last seen. */
  read(): number {
    this.seen.set(this.root, procCpuMicros(this.root) || (this.seen.get(this.root) ?? 0));
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const stat = readFileSync(`/proc/${name}/stat`, 'latin1');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        if (Number(fields[1]) === this.root) this.seen.set(Number(name), (Number(fields[11]) + Number(fields[12])) * TICK_MICROS);
      } catch {
        // exited meanwhile: its last reading stays
      }
    }
    let total = 0;
    for (const v of this.seen.values()) total += v;
    return total;
  }
}
