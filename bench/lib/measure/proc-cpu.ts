/**
 * CPU a process has used, read from /proc, for the benchmarks' probes of processes they did not start as children
 * (Prosody) or whose children count too (PostgreSQL's postmaster and its backends).
 */
import { readFileSync, readdirSync } from 'node:fs';

/** Linux's USER_HZ: /proc/<pid>/stat counts CPU in 1/100 s. */
const TICK_MICROS = 10_000;

/** user + system CPU (µs) of one process, all its threads, from /proc/<pid>/stat; 0 once it is gone. */
export function procCpuMicros(pid: number): number {
  const fields = statFields(pid);
  return fields ? (Number(fields[11]) + Number(fields[12])) * TICK_MICROS : 0;
}

/** The fields of /proc/<pid>/stat after the command name (fields[0] is the state, [1] the parent's pid); undefined once it is gone. */
function statFields(pid: number | string): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/**
 * CPU (µs) of a process and its direct children (PostgreSQL's postmaster, its backends, autovacuum workers and
 * background processes). Children that have exited count through the root's own `cutime` + `cstime`: the CPU of
 * the children it has waited for, which the postmaster does as soon as one exits. A short-lived child (an
 * autovacuum worker, a backend of a connection the pool closed) is thus counted even when it started and ended
 * between two reads.
 */
export class TreeCpu {
  constructor(private readonly root: number) {}

  /** The total so far: the root with its exited children, and its live children, read now. */
  read(): number {
    let total = 0;
    for (const v of this.readParts(() => '').values()) total += v;
    return total;
  }

  /**
   * The same total split by `kindOf(title)` of each live child (its command line, which PostgreSQL sets to
   * what the process does); the root and the children it has waited for come under ROOT_AND_EXITED.
   */
  readParts(kindOf: (title: string) => string): Map<string, number> {
    const parts = new Map<string, number>([[ROOT_AND_EXITED, cpuWithExitedChildren(this.root)]]);
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const fields = statFields(name);
        // A child that has exited but is not yet waited for (a zombie) still shows its CPU here.
        if (!fields || Number(fields[1]) !== this.root) continue;
        const kind = kindOf(readFileSync(`/proc/${name}/cmdline`, 'latin1').replace(/\0/g, ' ').trim());
        parts.set(kind, (parts.get(kind) ?? 0) + (Number(fields[11]) + Number(fields[12])) * TICK_MICROS);
      } catch {
        // exited meanwhile: the root's cutime has it once it is waited for
      }
    }
    return parts;
  }
}

/** The part of `TreeCpu.readParts` that is the root itself and every child it has waited for. */
export const ROOT_AND_EXITED = 'root and exited children';

/** user + system CPU (µs) of a process and of the children it has waited for (utime, stime, cutime, cstime). */
function cpuWithExitedChildren(pid: number): number {
  const fields = statFields(pid);
  return fields ? (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * TICK_MICROS : 0;
}
