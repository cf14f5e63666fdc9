import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';

/** Linux's USER_HZ: /proc/stat counts in 1/100 s on every mainstream architecture. */
const TICK_MICROS = 10_000;

/** user + nice + system + irq + steal from /proc/stat's first line, in µs; undefined off Linux. */
function procStatBusy(): number | undefined {
  let line: string | undefined;
  try {
    line = readFileSync('/proc/stat', 'latin1').split('\n', 1)[0];
  } catch {
    return undefined;
  }
  const f = line?.trim().split(/\s+/).slice(1).map(Number) ?? [];
  // Fields: user nice system idle iowait irq softirq steal ... (softirq left out: loopback
  // traffic of our own processes lands there).
  const [user, nice, system, , , irq, , steal] = f;
  if ([user, nice, system, irq, steal].some((v) => v === undefined || Number.isNaN(v))) return undefined;
  return (user! + nice! + system! + irq! + steal!) * TICK_MICROS;
}

/**
 * CPU time (µs) all processes on the machine have used so far, summed over cores, plus, on
 * Linux, time the hypervisor gave our virtual CPUs to someone else (steal). Subtracting the
 * benchmark's own processes from its growth over a window gives what *others* took: on a
 * 2-core machine, anything else running makes the figures of that window unreliable.
 */
export function machineBusyMicros(): number {
  const fromProc = procStatBusy();
  if (fromProc !== undefined) return fromProc;
  let ms = 0;
  for (const { times } of cpus()) ms += times.user + times.nice + times.sys + times.irq;
  return ms * 1000;
}

/** Share of one core (%) that processes other than ours used over a window. Never below 0. */
export const otherPercent = (machineMicros: number, ourMicros: number, windowMs: number): number =>
  Math.max(0, ((machineMicros - ourMicros) / (windowMs * 1000)) * 100);

/** Idle check: % of one core other processes use while this one sleeps for `ms`. */
export async function backgroundLoad(ms = 1_000): Promise<number> {
  const own0 = process.cpuUsage();
  const busy0 = machineBusyMicros();
  await new Promise((r) => setTimeout(r, ms));
  const own = process.cpuUsage(own0);
  return otherPercent(machineBusyMicros() - busy0, own.user + own.system, ms);
}
