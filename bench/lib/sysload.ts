import { cpus } from 'node:os';

/**
 * CPU time (µs) all processes on the machine have used so far, summed over cores. Subtracting
 * the benchmark's own processes from its growth over a window gives what *other* processes took:
 * on a 2-core machine, anything else running makes the figures of that window unreliable.
 */
export function machineBusyMicros(): number {
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
